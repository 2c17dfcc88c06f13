"""Bytes → front matter + body, with the strict YAML policy of docs/design.md §2 and §8.

The YAML is read by libyaml's event parser (PyYAML's C extension; `events.py`) and composed here, so
that the policy sees every anchor, alias, tag, key and scalar style with its position:

* plain scalars follow a JSON-compatible subset: `true`/`false`, `null`/`~`/empty, and
  numbers of the JSON grammar are typed; every other plain scalar (`no`, `on`, `0755`,
  `1:10`, `.inf`, `2026-02-13`) stays the string that was written;
* quoted and block scalars are always strings; mapping keys are always strings as written;
* no key or value holds NUL, even one written as the escape `\\0`;
* anchors, aliases, tags, merge keys, complex keys, duplicate keys, directives and
  multiple documents are refused, so nothing is ever expanded or constructed;
* nesting is bounded (the top-level mapping is level 1) and so are sizes.

Nothing here touches git or disk, and nothing raises on bad input: problems are returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from yaml import MarkedYAMLError, YAMLError
from yaml import events as ev

from ..errors import VALIDATION_ERROR
from .events import CParser, PureParser
from .report import Issue
from .scalars import INT64_MAX, INT64_MIN, MAX_DEPTH, MAX_NUMBER_CHARS
from .scalars import MISSING as _MISSING
from .scalars import NUMBER as _NUMBER
from .scalars import NUMBER_START as _NUMBER_START
from .scalars import SPECIAL as _SPECIAL
from .subset import read_subset
from .syntax import describe

MAX_DOCUMENT_BYTES = 1024 * 1024
MAX_FRONT_MATTER_BYTES = 256 * 1024
_BOM = b"\xef\xbb\xbf"

Loc = tuple[int, int]


@dataclass
class Document:
    """A parsed document. `front` is None when the front matter could not be read."""

    path: str
    front: dict[str, Any] | None
    body: str
    issues: list[Issue] = field(default_factory=list)
    locs: dict[tuple, tuple[int, int]] = field(default_factory=dict)  # key path → 0-based (line, column) in the YAML
    body_line: int = 1

    def loc(self, key_path: tuple) -> Loc:
        """Where the value at `key_path` was written, or its nearest written ancestor."""
        while key_path:
            mark = self.locs.get(key_path)
            if mark is not None:
                return (mark[0] + 2, mark[1] + 1)
            key_path = key_path[:-1]
        return (1, 1)


def too_large(path: str, size: int) -> Issue:
    """The problem of a document of `size` bytes, over `MAX_DOCUMENT_BYTES`."""
    return _issue(path, 1, 1, "document-too-large", f"document is {size} bytes; the limit is {MAX_DOCUMENT_BYTES}")


def _issue(path: str, line: int, col: int, rule: str, message: str) -> Issue:
    return Issue(path, line, col, VALIDATION_ERROR, rule, message)


def read_document(path: str, data: bytes, strict_only: bool = False) -> Document:
    """Split and parse one document. Never raises on bad input. The subset reader answers for
    most front matter; `strict_only` skips it (tests compare the two readers)."""
    fail = lambda line, col, rule, msg: Document(path, None, "", [_issue(path, line, col, rule, msg)])  # noqa: E731
    if len(data) > MAX_DOCUMENT_BYTES:
        return Document(path, None, "", [too_large(path, len(data))])
    if data.startswith(_BOM):
        return fail(1, 1, "encoding-bom", "file starts with a UTF-8 byte order mark; save it without one")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return fail(line, col, "encoding-utf8", f"not valid UTF-8 (byte 0x{data[exc.start]:02x})")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            line, col = _position(text, text.index("\r"))
            return fail(line, col, "line-ending", "a lone carriage return; use LF or CRLF line endings")
    if "\x00" in text:
        line, col = _position(text, text.index("\x00"))
        return fail(line, col, "encoding-nul", "the file contains a NUL character")

    if not (text.startswith("---\n") or text == "---"):
        first = text.split("\n", 1)[0]
        if first.startswith("---") and first[3:4] in (" ", "\t", "#"):
            return fail(1, 4, "front-matter-fence", "the opening fence must be exactly '---' (no trailing characters)")
        return fail(1, 1, "front-matter-missing", "no front matter: the file must start on line 1 with '---'")
    close = _closing_fence(text)
    if close < 0:
        return fail(1, 1, "front-matter-unclosed", "front matter opened on line 1 is never closed by a '---' line")
    front_text = text[4:close]
    if len(front_text) * 4 > MAX_FRONT_MATTER_BYTES and len(front_text.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        return fail(2, 1, "front-matter-too-large", f"front matter exceeds {MAX_FRONT_MATTER_BYTES} bytes")
    body_start = text.find("\n", close + 1)
    body = "" if body_start < 0 else text[body_start + 1 :]
    body_line = front_text.count("\n") + 3

    doc = Document(path, None, body, body_line=body_line)
    odd = None if front_text.isascii() else _ODD_BREAK.search(front_text)
    if odd is not None:
        line, col = _position(front_text, odd.start())
        doc.issues.append(_issue(path, line + 1, col, "yaml-line-break",
                                 f"character U+{ord(odd.group()):04X} is a line break to some YAML readers "
                                 "and not to others; write it escaped in a double-quoted string"))
        return doc
    directive = _DIRECTIVE.search(front_text) if "%" in front_text else None
    if directive is not None:
        line, _col = _position(front_text, directive.start())
        doc.issues.append(_issue(path, line + 1, 1, "yaml-directive", "YAML directives (%YAML, %TAG) are not allowed"))
        return doc
    extra = _extra_block(body)
    if extra is not None:
        doc.issues.append(
            _issue(path, body_line + extra, 1, "front-matter-extra", "a second front-matter block; a document has exactly one")
        )
    try:
        subset = None if strict_only else read_subset(front_text)  # exactly what the composer would build
    except Exception:  # a fault of the fast reader never costs an answer: the strict reader decides
        subset = None
    if subset is not None:
        doc.front, doc.locs = subset
        return doc
    value = _Composer(path, front_text, doc).run(CParser or PureParser)
    if value is not None and not isinstance(value, dict):
        doc.issues.append(_issue(path, 2, 1, "front-matter-not-mapping", "front matter must be a mapping of keys to values"))
    elif value is None and not doc.issues:
        doc.issues.append(_issue(path, 2, 1, "front-matter-not-mapping", "front matter is empty"))
    if isinstance(value, dict):
        doc.front = value
    return doc


_ODD_BREAK = re.compile("[\x85\u2028\u2029]")
_DIRECTIVE = re.compile(r"^%", re.MULTILINE)


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of `index` in `text`."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _closing_fence(text: str) -> int:
    """Index of the newline that precedes the closing `---` line, or -1."""
    pos = 3
    while True:
        pos = text.find("\n---", pos)
        if pos < 0:
            return -1
        end = pos + 4
        if end == len(text) or text[end] == "\n":
            return pos + 1 if pos + 1 <= len(text) else -1
        pos = end


def _extra_block(body: str) -> int | None:
    """Line offset (0-based) of a second `---` block opening the body, if there is one."""
    if not body.lstrip().startswith("---"):  # the first line that is not blank is not '---'
        return None
    lines = body.split("\n", 64)
    for offset, line in enumerate(lines[:63]):
        if line.strip() == "":
            continue
        if line != "---":
            return None
        rest = lines[offset + 1 : 63]
        first_key = next((r for r in rest if r.strip()), "")
        # a Markdown rule followed by prose is fine; `---` then `key:` lines then `---` is a block
        if _YAML_KEY.match(first_key) and "---" in rest:
            return offset
        return None
    return None


_YAML_KEY = re.compile(r"[A-Za-z0-9_-]+:(\s|$)")


class _Composer:
    """Builds plain Python values from parser events, applying the policy as it goes."""

    def __init__(self, path: str, text: str, doc: Document) -> None:
        self.path = path
        self.text = text
        self.doc = doc
        self.issues = doc.issues
        self.locs = doc.locs

    def bad(self, mark: Any, rule: str, message: str) -> None:
        self.issues.append(_issue(self.path, mark.line + 2, mark.column + 1, rule, message))

    def run(self, parser_class: Any) -> Any:
        parser = None
        try:
            parser = parser_class(self.text)
            parser.get_event()  # StreamStart
            event = parser.get_event()
            if isinstance(event, ev.StreamEndEvent):
                return None
            if event.version is not None or event.tags:
                self.bad(event.start_mark, "yaml-directive", "YAML directives (%YAML, %TAG) are not allowed")
            value = self.node(parser, parser.get_event(), (), 1)
            parser.get_event()  # DocumentEnd
            event = parser.get_event()
            if not isinstance(event, ev.StreamEndEvent):
                self.bad(event.start_mark, "yaml-multiple-documents", "the front matter holds more than one YAML document")
            return value
        except _TooDeep:
            return None
        except MarkedYAMLError as exc:
            mark, message = describe(exc, self.text)
            rule = "yaml-syntax"
            if "maximum nesting depth" in (exc.problem or ""):  # libyaml's own bound (newer releases), met ahead of ours
                mark, rule, message = exc.problem_mark or exc.context_mark, "yaml-too-deep", f"nesting deeper than {MAX_DEPTH} levels"
            if mark is None:
                self.issues.append(_issue(self.path, 2, 1, rule, message))
            else:
                self.bad(mark, rule, message)
            return None
        except YAMLError as exc:  # reader errors (control characters) carry a position instead
            position = getattr(exc, "position", None)
            line, col = 2, 1
            if isinstance(position, int):
                line = self.text.count("\n", 0, position) + 2
                col = position - (self.text.rfind("\n", 0, position) + 1) + 1
            character = getattr(exc, "character", None)
            code = ord(character) if isinstance(character, str) and len(character) == 1 else character
            what = f"character U+{code:04X}" if isinstance(code, int) else "a control character"
            self.issues.append(_issue(self.path, line, col, "yaml-syntax", f"invalid YAML: {what} is not allowed in YAML text"))
            return None
        finally:
            if parser is not None:
                parser.dispose()

    def node(self, parser: Any, event: Any, key_path: tuple, depth: int) -> Any:
        cls = event.__class__
        if cls is _Scalar:
            if event.anchor is None and event.tag is None:
                return self.plain(event) if not event.style else self.quoted(event)
            return self.odd_scalar(event)
        if cls is _Alias:
            self.bad(event.start_mark, "yaml-alias", f"aliases (*{event.anchor}) are not allowed; write the value out")
            return None
        if event.anchor is not None:
            self.bad(event.start_mark, "yaml-anchor", f"anchors (&{event.anchor}) are not allowed")
        if event.tag is not None:
            self.bad(event.start_mark, "yaml-tag", f"tags ({event.tag}) are not allowed")
        if depth > MAX_DEPTH:
            self.bad(event.start_mark, "yaml-too-deep", f"nesting deeper than {MAX_DEPTH} levels")
            raise _TooDeep
        get = parser.get_event
        locs = self.locs
        if cls is _SeqStart:
            items: list[Any] = []
            index = 0
            while True:
                child = get()
                if child.__class__ is _SeqEnd:
                    return items
                sub = key_path + (index,)
                mark = child.start_mark
                locs[sub] = (mark.line, mark.column)
                items.append(self.node(parser, child, sub, depth + 1))
                index += 1
        # a mapping
        mapping: dict[str, Any] = {}
        while True:
            key_event = get()
            key_cls = key_event.__class__
            if key_cls is _MapEnd:
                return mapping
            if key_cls is _Scalar and key_event.anchor is None and key_event.tag is None and key_event.value != "<<":
                key: str | None = key_event.value if not key_event.style else self.quoted(key_event)
            else:
                key = self.key(parser, key_event, depth)
            sub = key_path + (key,)
            child = get()
            if child.__class__ is _Scalar and child.anchor is None and child.tag is None:
                value = self.plain(child) if not child.style else self.quoted(child)
            else:
                value = self.node(parser, child, sub, depth + 1)
            if key is None:
                continue
            if key in mapping:
                self.bad(key_event.start_mark, "yaml-duplicate-key", f"duplicate key '{key}'")
                continue
            mark = key_event.start_mark
            locs[sub] = (mark.line, mark.column)
            mapping[key] = value

    def odd_scalar(self, event: Any) -> Any:
        """A scalar with an anchor or a tag: reported, then read as if they were not there."""
        if event.anchor is not None:
            self.bad(event.start_mark, "yaml-anchor", f"anchors (&{event.anchor}) are not allowed")
        if event.tag is not None:
            self.bad(event.start_mark, "yaml-tag", f"tags ({event.tag}) are not allowed")
        return self.plain(event) if not event.style and event.implicit[0] else self.quoted(event)

    def key(self, parser: Any, event: Any, depth: int) -> str | None:
        if event.__class__ is not _Scalar:
            self.node(parser, event, (), depth + 1)
            self.bad(event.start_mark, "yaml-complex-key", "mapping keys must be plain strings")
            return None
        if event.anchor is not None:
            self.bad(event.start_mark, "yaml-anchor", f"anchors (&{event.anchor}) are not allowed")
        if event.tag is not None:
            self.bad(event.start_mark, "yaml-tag", f"tags ({event.tag}) are not allowed")
        if event.value == "<<" and not event.style:
            self.bad(event.start_mark, "yaml-merge-key", "merge keys (<<) are not allowed")
            return None
        return self.quoted(event)

    def quoted(self, event: Any) -> str:
        """A scalar whose escapes have been processed: none may have made a NUL."""
        value = event.value
        if "\x00" in value:
            self.bad(event.start_mark, "value-nul", "NUL (\\0) is not allowed in a value or a key")
        return value

    def plain(self, event: Any) -> Any:
        value = event.value
        special = _SPECIAL.get(value, _MISSING)
        if special is not _MISSING:
            return special
        if value[0] in _NUMBER_START and (match := _NUMBER.fullmatch(value)):
            if len(value) > MAX_NUMBER_CHARS:
                self.bad(event.start_mark, "yaml-number-range", "number has too many digits; quote it if it is text")
                return value
            if match.group(1) is None and match.group(2) is None:
                number = int(value)
                if not INT64_MIN <= number <= INT64_MAX:
                    self.bad(event.start_mark, "yaml-number-range", "integer does not fit in 64 bits; quote it if it is text")
                return number
            real = float(value)
            if real in (float("inf"), float("-inf")):
                self.bad(event.start_mark, "yaml-number-range", "number is out of the range of a double")
            return real
        return value


_Scalar = ev.ScalarEvent
_Alias = ev.AliasEvent
_SeqStart = ev.SequenceStartEvent
_SeqEnd = ev.SequenceEndEvent
_MapEnd = ev.MappingEndEvent


class _TooDeep(Exception):
    pass

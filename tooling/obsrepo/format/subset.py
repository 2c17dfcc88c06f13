"""A fast reader for the plain subset of YAML that front matter is nearly always written in.

`read_subset(text)` returns `(front, locs)` exactly as the strict reader (`document.py`: libyaml's
events and the policy composer) would build them, or None, and then the strict reader decides.
It answers only for front matter the strict reader accepts without an issue: any doubt at all
(a character outside the common ones, a construct it does not know, a value the policy would
refuse) is None. Its subset:

* a block mapping starting at column 0; keys plain (`[A-Za-z0-9_][A-Za-z0-9_./-]*`) or quoted on
  one line, followed by `:` and a space or the end of the line;
* a value on the key's line: a plain scalar (typed by `scalars`, as the strict reader types it),
  a single- or double-quoted scalar closed on that line, or a flow collection (`[…]`, `{…}`,
  nested, JSON-like) closed on that line;
* a value on the lines below: a deeper block mapping, or a block sequence (deeper, or at the
  key's own column) whose items are values on the item's line or block mappings starting there;
* blank lines, comment lines, and ` #` comments after a value.

Multi-line scalars, block scalars, tabs, anchors, aliases, tags, complex keys, empty items and
everything else go to the strict reader. tests/test_subset.py holds the two readers equal over
every test case, every truncation of them and thousands of mutated and generated inputs.
"""

from __future__ import annotations

import re
from typing import Any

from .scalars import INT64_MAX, INT64_MIN, MAX_DEPTH, MAX_NUMBER_CHARS, MISSING, NUMBER, NUMBER_START, SPECIAL

Loc = tuple[int, int]

# anything but LF and the printable characters libyaml reads the same everywhere (no tab, no
# control character, no NEL, LS, PS, byte order mark, U+FFFE/U+FFFF) sends the text to the strict reader
_UNUSUAL = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# every line at once (one row per line): indent, then a plain key, the spaces after its colon and
# the rest; or a comment (or nothing); or any other content
_LINES = re.compile(r"^( *)(?:([A-Za-z0-9_][A-Za-z0-9_./-]{0,127}):(?:( +)(.*))?|(#.*)?|(.*))$", re.MULTILINE)
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_./-]{0,127}):(?: +|$)")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,127}")
_WORD = re.compile(r"[A-Za-z0-9_.~/+][A-Za-z0-9_./+~@-]*")  # a flow item the quick path reads (a subset of _FLOW_PLAIN)
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))")
_ESCAPES = {"a": "\x07", "b": "\x08", "t": "\t", "n": "\n", "v": "\x0b", "f": "\x0c", "r": "\r", "e": "\x1b",
            " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
# a plain scalar inside a flow collection: no indicator, quote, colon or '#' anywhere
_FLOW_PLAIN = re.compile(r"""(?:-(?=[0-9A-Za-z.])|[^-?:,\[\]{}#&*!|>'"%@`\s])[^,\[\]{}#:"'\s]*(?: +[^,\[\]{}#:"'\s]+)*""")
_SPACES = re.compile(" *")
_BAD_START = frozenset("?:,[]{}#&*!|>'\"%@`")  # what a plain scalar of the subset never starts with
_LEADING = _BAD_START | frozenset("- ")  # what sends a value past the quick path
_QUOTES = frozenset("\"'")
_DEEPEST = MAX_DEPTH - 2  # well inside the strict reader's bound
_MAX_QUOTED_KEY = 130
_INFINITIES = (float("inf"), float("-inf"))
# flow items seen to match _WORD: the same strings recur in every document, and a set look-up
# costs a tenth of a match (bounded, so that no input grows it for ever)
_KNOWN_WORDS: set[str] = set()
_KNOWN_LIMIT = 20_000

Row = tuple[str, str, str, str, str, str]  # indent, key, spaces, rest, comment, other (see _LINES)


class _Doubt(Exception):
    """Outside the subset: the strict reader decides."""


def read_subset(text: str) -> tuple[dict[str, Any], dict[tuple, Loc]] | None:
    """The front matter and its key positions (0-based, as libyaml marks them), or None."""
    if not text or (not text.replace("\n", " ").isprintable() and _UNUSUAL.search(text)):
        return None
    reader = _Reader(_LINES.findall(text))
    try:
        front = reader.mapping(0, (), 1)
    except _Doubt:
        return None
    return (front, reader.locs) if front else None


def _known(word: str, known: set[str], pattern: re.Pattern) -> bool:
    if word in known:
        return True
    if pattern.fullmatch(word) is None:
        return False
    if len(known) < _KNOWN_LIMIT:
        known.add(word)
    return True


def _unescape(match: re.Match) -> str:
    hexa = match.group(1) or match.group(2) or match.group(3)
    if hexa is not None:
        code = int(hexa, 16)
        if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:  # NUL is refused, the others are invalid
            raise _Doubt
        return chr(code)
    replacement = _ESCAPES.get(match.group(4))
    if replacement is None:
        raise _Doubt
    return replacement


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """A quoted scalar closed on this line: (its value, the index after it)."""
    if text[pos] == '"':
        match = _DOUBLE.match(text, pos)
        if match is None:
            raise _Doubt
        value = match.group(1)
        return (_ESCAPE.sub(_unescape, value) if "\\" in value else value), match.end()
    match = _SINGLE.match(text, pos)
    if match is None:
        raise _Doubt
    return match.group(1).replace("''", "'"), match.end()


def _simple_quoted(text: str) -> bool:
    """`"…"` with no other quote and no escape: its value is what lies between the quotes."""
    return len(text) > 1 and text[-1] == '"' and text.count('"') == 2 and "\\" not in text


def _typed(value: str) -> Any:
    """A plain scalar as the policy types it; a value the policy would refuse is a doubt."""
    special = SPECIAL.get(value, MISSING)
    if special is not MISSING:
        return special
    if value[0] in NUMBER_START:
        if value.isdigit() and value.isascii() and len(value) < 19 and (value[0] != "0" or len(value) == 1):
            return int(value)  # the common number, within 64 bits
        if not value.strip("0123456789.eE+-") and (match := NUMBER.fullmatch(value)):  # no other character
            if len(value) > MAX_NUMBER_CHARS:
                raise _Doubt
            if match.group(1) is None and match.group(2) is None:
                number = int(value)
                if not INT64_MIN <= number <= INT64_MAX:
                    raise _Doubt
                return number
            real = float(value)
            if real in _INFINITIES:
                raise _Doubt
            return real
    return value


def _plain(text: str) -> Any:
    """A plain scalar in block context, alone on the rest of its line (a comment may follow)."""
    first = text[0]
    if first in _BAD_START or (first == "-" and (len(text) == 1 or text[1] == " ")):
        raise _Doubt
    cut = text.find(" #")
    value = (text if cut < 0 else text[:cut]).rstrip(" ")
    if ": " in value or value[-1] == ":":
        raise _Doubt
    return _typed(value)


def _is_item(content: str) -> bool:
    return content[0] == "-" and (len(content) == 1 or content[1] == " ")


def _key_of(content: str) -> tuple[str, int] | None:
    """A mapping key opening `content`: (key, index of its value), or None when it is no key."""
    match = _KEY.match(content)
    if match is not None:
        return match.group(1), match.end()
    if content[0] not in _QUOTES:
        return None
    key, end = _quoted(content, 0)
    if end > _MAX_QUOTED_KEY or content[end : end + 1] != ":":
        return None
    rest = content[end + 1 :]
    if rest and rest[0] != " ":
        return None
    return key, len(content) - len(rest.lstrip(" "))


def _flat_item(item: str) -> Any:
    """An item of a flat flow collection read without the flow reader, or MISSING."""
    if item[0] == '"':
        return item[1:-1] if _simple_quoted(item) else MISSING
    return _typed(item) if _known(item, _KNOWN_WORDS, _WORD) else MISSING


def _content(row: Row) -> str:
    """A row's line without its indent."""
    return row[1] + ":" + row[2] + row[3] if row[1] else row[5]


class _Reader:
    """Rows in (`at`: the next one to read), values and their positions out."""

    __slots__ = ("rows", "at", "locs")

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows
        self.at = 0
        self.locs: dict[tuple, Loc] = {}

    def peek(self) -> tuple[int, str] | None:
        """The next row that is neither blank nor a comment: (indent, content); `at` moves to it."""
        rows = self.rows
        while self.at < len(rows):
            row = rows[self.at]
            if row[1]:
                return len(row[0]), row[1]
            if row[5]:
                return len(row[0]), row[5]
            self.at += 1
        return None

    def mapping(self, indent: int, path: tuple, depth: int, first: str | None = None) -> dict[str, Any]:
        """A block mapping whose keys sit at column `indent`; `first` is the rest of a sequence
        item's line (`- key: …`) when the mapping starts there."""
        if depth > _DEEPEST:
            raise _Doubt
        result: dict[str, Any] = {}
        if first is not None:
            self.pair(result, self.at - 1, indent, first, path, depth)
        rows, locs = self.rows, self.locs
        at, count = self.at, len(rows)  # `at` lives in a local here, and in self.at around calls out
        while at < count:
            spaces, key, gap, text, _comment, other = rows[at]
            if not key and not other:  # blank, or a comment
                at += 1
                continue
            col = len(spaces)
            if col != indent:
                if col < indent:
                    break
                raise _Doubt
            at += 1
            if not key or key in result:
                self.at = at
                self.pair(result, at - 1, col, other or _content(rows[at - 1]), path, depth)
                at = self.at
                continue
            sub = path + (key,)
            locs[sub] = (at - 1, col)
            if text:
                first_char = text[0]
                if first_char == '"':
                    if _simple_quoted(text):
                        result[key] = text[1:-1]
                        continue
                elif first_char not in _LEADING and text[-1] != " " and text[-1] != ":" and ": " not in text \
                        and " #" not in text:  # a plain scalar alone on the rest of its line
                    value = SPECIAL.get(text, MISSING)
                    result[key] = (_typed(text) if first_char in NUMBER_START else text) if value is MISSING else value
                    continue
                if first_char != "#":
                    self.at = at
                    result[key] = self.value(text, at - 1, col + len(key) + 1 + len(gap), sub, depth + 1)
                    at = self.at
                    continue
            self.at = at
            result[key] = self.below(indent, sub, depth + 1)
            at = self.at
        self.at = at
        return result

    def pair(self, result: dict[str, Any], number: int, col: int, content: str, path: tuple, depth: int) -> None:
        """Any `key: value` at `col` of line `number` (a value below is read from the next rows)."""
        found = _key_of(content)
        if found is None:
            raise _Doubt
        key, end = found
        if key in result:
            raise _Doubt
        sub = path + (key,)
        self.locs[sub] = (number, col)
        if end < len(content) and content[end] != "#":
            result[key] = self.value(content[end:], number, col + end, sub, depth + 1)
        else:
            result[key] = self.below(col, sub, depth + 1)

    def value(self, text: str, number: int, col: int, path: tuple, depth: int) -> Any:
        """A value written on the rest of a line (`col` is where `text` starts): the common forms
        at once, any other through `inline`."""
        first, last = text[0], text[-1]
        if first == '"':
            if _simple_quoted(text):
                return text[1:-1]
        elif first == "[" or first == "{":
            if last == ("]" if first == "[" else "}"):
                flat = self.flat(text, number, col, path)
                if flat is not None:
                    return flat
        elif first not in _LEADING and last != " " and last != ":" and ": " not in text and " #" not in text:
            return _typed(text)
        return self.inline(text, number, col, path, depth)

    def flat(self, text: str, number: int, col: int, path: tuple) -> list | dict | None:
        """`[a, "b"]` or `{k: a, k2: "b"}` of plain words and simple quoted strings, or None."""
        is_list = text[0] == "["
        result: Any = [] if is_list else {}
        found: list[tuple[tuple, Loc]] = []
        at = col + 1
        for part in text[1:-1].split(","):
            item = part.lstrip(" ")
            start = at + len(part) - len(item)
            at += len(part) + 1
            item = item.rstrip(" ")
            if not item:
                return None
            if is_list:
                value = _flat_item(item)
                found.append((path + (len(result),), (number, start)))
                result.append(value)
            else:
                key, colon, item = item.partition(": ")
                item = item.lstrip(" ")
                if not colon or not item or key in result or _PLAIN_KEY.fullmatch(key) is None:
                    return None
                value = _flat_item(item)
                found.append((path + (key,), (number, start)))
                result[key] = value
            if value is MISSING:
                return None
        self.locs.update(found)
        return result

    def below(self, indent: int, path: tuple, depth: int) -> Any:
        """The value of a key with nothing after its colon: a block on the next rows, or null."""
        ahead = self.peek()
        if ahead is not None:
            col, content = ahead
            if col > indent:
                return self.sequence(col, path, depth) if _is_item(content) else self.mapping(col, path, depth)
            if col == indent and _is_item(content):
                return self.sequence(col, path, depth)
        return None

    def sequence(self, indent: int, path: tuple, depth: int) -> list[Any]:
        """A block sequence whose dashes sit at column `indent`."""
        if depth > _DEEPEST:
            raise _Doubt
        locs = self.locs
        items: list[Any] = []
        while (ahead := self.peek()) is not None:
            col, content = ahead
            if col != indent or not _is_item(content):
                if col > indent:
                    raise _Doubt
                break
            item = content[2:].lstrip(" ")
            if not item or item[0] == "#" or _is_item(item):
                raise _Doubt
            number = self.at
            self.at += 1
            item_col = col + len(content) - len(item)
            sub = path + (len(items),)
            locs[sub] = (number, item_col)
            if _key_of(item) is not None:
                items.append(self.mapping(item_col, sub, depth + 1, item))
            else:
                items.append(self.value(item, number, item_col, sub, depth + 1))
        return items

    def inline(self, text: str, number: int, col: int, path: tuple, depth: int) -> Any:
        """A value written on the rest of a line (`col` is where `text` starts)."""
        first = text[0]
        if first in _QUOTES:
            value, end = _quoted(text, 0)
        elif first == "[" or first == "{":
            value, end = self.flow(text, 0, number, col, path, depth)
        else:
            return _plain(text)
        if end < len(text):
            rest = text[end:]
            after = rest.lstrip(" ")
            if after and (after[0] != "#" or len(after) == len(rest)):
                raise _Doubt
        return value

    def flow(self, text: str, pos: int, number: int, col: int, path: tuple, depth: int) -> tuple[Any, int]:
        """A flow collection opening at `text[pos]` and closed on this line: (value, index after it)."""
        if depth > _DEEPEST:
            raise _Doubt
        locs = self.locs
        closer = "]" if text[pos] == "[" else "}"
        pos = _SPACES.match(text, pos + 1).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] == closer:
            return ([] if closer == "]" else {}), pos + 1
        items: list[Any] = []
        mapping: dict[str, Any] = {}
        while True:
            if closer == "]":
                sub = path + (len(items),)
                locs[sub] = (number, col + pos)
                value, pos = self.flow_value(text, pos, number, col, sub, depth)
                items.append(value)
            else:
                key_pos = pos
                if text[pos : pos + 1] in _QUOTES:
                    key, pos = _quoted(text, pos)
                    if text[pos : pos + 1] != ":":
                        raise _Doubt
                    pos += 1
                else:
                    match = _FLOW_PLAIN.match(text, pos)
                    if match is None or match.group() == "<<" or text[match.end() : match.end() + 2] != ": ":
                        raise _Doubt
                    key, pos = match.group(), match.end() + 1
                if key in mapping:
                    raise _Doubt
                sub = path + (key,)
                locs[sub] = (number, col + key_pos)
                mapping[key], pos = self.flow_value(text, _SPACES.match(text, pos).end(), number, col, sub, depth)  # type: ignore[union-attr]
            pos = _SPACES.match(text, pos).end()  # type: ignore[union-attr]
            after = text[pos : pos + 1]
            if after == closer:
                return (items if closer == "]" else mapping), pos + 1
            if after != ",":
                raise _Doubt
            pos = _SPACES.match(text, pos + 1).end()  # type: ignore[union-attr]
            if text[pos : pos + 1] in ("]", "}", ",", ""):  # a trailing comma, an empty entry, an open end
                raise _Doubt

    def flow_value(self, text: str, pos: int, number: int, col: int, path: tuple, depth: int) -> tuple[Any, int]:
        first = text[pos : pos + 1]
        if first == '"' or first == "'":
            return _quoted(text, pos)
        if first == "[" or first == "{":
            return self.flow(text, pos, number, col, path, depth + 1)
        match = _FLOW_PLAIN.match(text, pos)
        if match is None:
            raise _Doubt
        return _typed(match.group()), match.end()

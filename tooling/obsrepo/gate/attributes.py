"""Rule `git-attributes`: no git attribute may make git rewrite the bytes of a document.

`filter`, `ident`, `text`/`eol`/`crlf` conversion and `working-tree-encoding` change what git
stores or checks out, so a document could read one way in the work tree and another in a blob.
Whether a document is affected is git's own answer (`git check-attr`); this module only finds
the line that set the attribute, to report the problem where it can be fixed.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable

from .. import errors
from ..format.report import Issue
from ..gitstore import Git, blob_sha

ATTRIBUTES = ("filter", "ident", "text", "eol", "crlf", "working-tree-encoding")
RULE = "git-attributes"
_BUILTIN_MACROS = {"binary": ["-diff", "-merge", "-text"]}

Reader = Callable[[str], "bytes | None"]  # repository-relative path of a .gitattributes → its bytes


def attribute_issues(git: Git, found: list[tuple[str, str, str]], read: Reader, *, commit: str = "") -> list[Issue]:
    """Issues for the attributes git applies to documents (`found`: what `git check-attr` said
    about them), located at the line that sets each one; `read` gives the .gitattributes files
    of the same view (work tree, index, or a commit's tree read into a temporary index)."""
    if not found:
        return []
    sources = _Sources(git, read)
    grouped: dict[tuple[str, int], tuple[str, set[str], list[str]]] = {}
    for path, attribute, value in found:
        where = sources.locate(path, attribute)
        key = where[:2] if where else (path, 0)
        text = where[2] if where else ""
        _, names, hit = grouped.setdefault(key, (text, set(), []))
        names.add(f"{attribute}={value}" if value != "set" else attribute)
        if not hit or hit[-1] != path:
            hit.append(path)
    issues = []
    for (label, line), (text, names, hit) in sorted(grouped.items()):
        if commit and (not line or label in sources.outer_text):
            continue  # a file outside the tree is reported once, by the work tree's check
        more = f" and {len(hit) - 1} other document{'s' if len(hit) > 2 else ''}" if len(hit) > 1 else ""
        what = ", ".join(sorted(names))
        if line:
            message = (f"`{text}` makes git convert {hit[0]}{more} ({what}); documents are stored and "
                       "compared byte for byte (remove the line, or unset the attribute for "
                       "observations/ and comprehension/)")
        else:
            label, line = hit[0], 1
            message = (f"git applies {what} to this document{more} "
                       "from an attributes file outside the tree (core.attributesFile or the system "
                       "gitattributes); documents are stored and compared byte for byte")
        if commit:
            message = f"commit {commit[:12]}: {message}"
        issues.append(Issue(label, line, 1, errors.VALIDATION_ERROR, RULE, message, commit=commit))
    return issues


class _Sources:
    """The attribute files git reads for a path, lowest precedence first: the global file
    (core.attributesFile), every .gitattributes from the root down to the path's folder, then
    $GIT_DIR/info/attributes."""

    def __init__(self, git: Git, read: Reader) -> None:
        self.git = git
        self.read = read
        self.parsed: dict[str, list[tuple[int, str, str, list[str]]] | None] = {}
        self.outer_low: list[tuple[str, str]] = []  # (label, base folder "")
        self.outer_high: list[tuple[str, str]] = []
        self.outer_text: dict[str, bytes] = {}
        self._outer()
        self.macros = dict(_BUILTIN_MACROS)
        for label in [lbl for lbl, _ in self.outer_low] + [".gitattributes"] + [lbl for lbl, _ in self.outer_high]:
            for _, pattern, _, tokens in self._lines(label):
                if pattern.startswith("[attr]"):
                    self.macros[pattern[6:]] = tokens

    def _outer(self) -> None:
        configured, located = _outer_files(self.git)
        self._add_outer(configured, self.outer_low)
        if located:
            self._add_outer(located, self.outer_high)

    def _add_outer(self, full: str, into: list[tuple[str, str]]) -> None:
        try:
            with open(full, "rb") as handle:
                data = handle.read()
        except OSError:
            return
        rel = os.path.relpath(full, self.git.root)
        label = rel.replace(os.sep, "/") if not rel.startswith("..") else full
        self.outer_text[label] = data
        into.append((label, ""))

    def _lines(self, label: str) -> list[tuple[int, str, str, list[str]]]:
        if label not in self.parsed:
            data = self.outer_text.get(label)
            if data is None:
                data = self.read(label)
            self.parsed[label] = _parse(data) if data is not None else None
        return self.parsed[label] or []

    def locate(self, path: str, attribute: str) -> tuple[str, int, str] | None:
        chain = list(self.outer_low)
        folder = ""
        for part in [""] + path.split("/")[:-1]:
            folder = posixpath.join(folder, part) if part else folder
            chain.append((posixpath.join(folder, ".gitattributes"), folder))
        chain.extend(self.outer_high)
        last = None
        for label, folder in chain:
            for number, pattern, text, tokens in self._lines(label):
                if pattern.startswith("[attr]") or not _matches(pattern, folder, path):
                    continue
                if attribute in self._assigned(tokens):
                    last = (label, number, text)
        return last

    def _assigned(self, tokens: list[str], depth: int = 0) -> set[str]:
        names: set[str] = set()
        for token in tokens:
            name = token.lstrip("-!").split("=", 1)[0]
            names.add(name)
            if depth < 8 and token == name and name in self.macros:
                names |= self._assigned(self.macros[name], depth + 1)
        return names


def autocrlf(git: Git) -> bool:
    """core.autocrlf converts line endings of every text file, attributes or not."""
    value = git.run("config", "--get", "core.autocrlf", check=False).strip().lower()
    return value not in (b"", b"false", b"no", b"off", b"0")


def _outer_files(git: Git) -> tuple[str, str]:
    """The attribute files outside the tree git reads besides the system one: core.attributesFile
    (or its default) and $GIT_DIR/info/attributes ("" when git names none)."""
    configured = git.run("config", "--path", "--get", "core.attributesFile", check=False).decode().strip()
    if not configured:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        configured = os.path.join(xdg, "git", "attributes")
    located = git.run("rev-parse", "--git-path", "info/attributes", check=False).decode().strip()
    return configured, os.path.join(git.root, located) if located else ""


def outside_digest(git: Git) -> str:
    """A digest of what decides git's attributes of a path besides the tree's own .gitattributes:
    the files outside the tree (core.attributesFile or its default, info/attributes, the system
    file where git is built to read it: /etc, or the prefix git runs from) and the settings that
    turn them off or read attributes from elsewhere. Equal digests: equal attributes for a path
    whose .gitattributes files are the same."""
    exec_path = git.run("--exec-path", check=False).decode().strip()
    prefix = posixpath.dirname(posixpath.dirname(exec_path))  # <prefix>/lib/git-core, <prefix>/libexec/git-core
    files = [os.path.join(git.root, file) for file in _outer_files(git) if file]  # git resolves them from the root
    files += ["/etc/gitattributes", os.path.join(prefix, "etc", "gitattributes")]
    digest = hashlib.sha256()
    for part in [os.environ.get("GIT_ATTR_NOSYSTEM", ""), os.environ.get("GIT_ATTR_SOURCE", ""),
                 git.run("config", "--get-all", "attr.tree", check=False).decode("utf-8", "replace"), *files]:
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for file in files:
        try:
            with open(file, "rb") as handle:
                digest.update(b"%d\0" % len(data := handle.read()) + data)
        except OSError as exc:  # absent (or not readable: git reads nothing there either)
            digest.update(f"-{exc.errno}\0".encode())
    return digest.hexdigest()


def attribute_files_unchanged(root: str, folders: Iterable[str], tree: dict[str, str]) -> bool:
    """Whether git reads, for the paths under `folders`, the .gitattributes of a tree (`tree`:
    their paths and blob ids) from the work tree: each folder's file is in the work tree exactly
    when it is in the tree, a regular file with the same bytes (ignored, untracked, edited,
    deleted or a symlink: not the same)."""
    for folder in folders:
        rel = f"{folder}/.gitattributes" if folder else ".gitattributes"
        full = os.path.join(root, rel)
        try:
            is_file = stat.S_ISREG(os.lstat(full).st_mode)
        except FileNotFoundError:
            if rel in tree:
                return False
            continue
        except OSError:
            return False
        if not is_file or rel not in tree:
            return False
        with open(full, "rb") as handle:
            if blob_sha(handle.read()) != tree[rel]:
                return False
    return True


def index_reader(git: Git) -> Reader:
    """.gitattributes files as git's index (or a commit's tree read into an index) holds them."""
    entries: dict[str, str] | None = None

    def read(rel: str) -> bytes | None:
        nonlocal entries
        if entries is None:
            listed = git.ls_files(".gitattributes", ":(glob)**/.gitattributes")
            entries = {e.path: e.sha for e in listed if e.mode in ("100644", "100755")}
        sha = entries.get(rel)
        return git.read_blob(sha) if sha else None

    return read


def worktree_reader(git: Git) -> Reader:
    """.gitattributes files as git reads them for the work tree: from disk, else from the index."""
    from_index = index_reader(git)

    def read(rel: str) -> bytes | None:
        full = os.path.join(git.root, rel)
        if os.path.islink(full):
            return None  # git does not follow a symlinked .gitattributes
        if os.path.isfile(full):
            with open(full, "rb") as handle:
                return handle.read()
        return from_index(rel)

    return read


def _parse(data: bytes) -> list[tuple[int, str, str, list[str]]]:
    """(line number, pattern, the line, attribute tokens) of every rule line."""
    lines = []
    for number, raw in enumerate(data.decode("utf-8", "surrogateescape").splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith('"'):
            end = text.find('"', 1)
            while end > 0 and text[end - 1] == "\\":
                end = text.find('"', end + 1)
            if end < 0:
                continue
            pattern, rest = text[1:end].encode("latin-1", "backslashreplace").decode("unicode_escape", "replace"), text[end + 1:]
        else:
            pattern, rest = (re.split(r"\s+", text, maxsplit=1) + [""])[:2]
        lines.append((number, pattern, text, rest.split()))
    return lines


def _matches(pattern: str, folder: str, path: str) -> bool:
    """gitattributes matching: a pattern without a slash matches the file name at any depth
    below the file's folder; one with a slash matches the path relative to that folder."""
    if pattern.startswith("!") or pattern.endswith("/"):  # negations are refused, folders never match files
        return False
    if folder:
        if not path.startswith(folder + "/"):
            return False
        path = path[len(folder) + 1:]
    if "/" not in pattern:
        return re.fullmatch(_regex(pattern), path.rsplit("/", 1)[-1]) is not None
    return re.fullmatch(_regex(pattern.lstrip("/")), path) is not None


def _regex(pattern: str) -> str:
    """wildmatch with WM_PATHNAME as a regular expression."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") and (i + 2 == n or pattern[i + 2] == "/"):
                if i + 2 == n:
                    out.append(".*")
                    i += 2
                else:
                    out.append("(?:.*/)?")
                    i += 3
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append(f"[{'^/' if negate else ''}{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)

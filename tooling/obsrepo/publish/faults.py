"""Publication fails like an environment (docs/design.md §8b): a bad namespace, a catalog or
warehouse that cannot be read or written, a table of another shape is `PUBLISH_ERROR` (exit 4)
naming the catalog, the table and the reason in one line, in words, not the driver's dump.
Nothing a failed publish did is seen: the data tables are appended before `commits`, so a
reader that starts from `commits` reads what was published before."""

from __future__ import annotations

import errno as errnos
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import PublishFault

AFTERWARDS = "what was published before stays as it was"


def namespace_checked(namespace: str) -> str:
    """`namespace` as the catalogs take it: dot-separated names, none empty, none with
    surrounding blanks or control characters."""
    parts = namespace.split(".")
    if not namespace or any(not p or p != p.strip() or any(ord(c) < 32 or c == "\x7f" for c in p) for p in parts):
        raise PublishFault(f"namespace {namespace!r} is not a namespace: give names separated by dots, none empty and "
                           "without surrounding blanks or control characters (e.g. obsrepo, analytics.obsrepo)",
                           parameter="namespace", namespace=namespace)
    return namespace


@contextmanager
def environment(catalog: str, namespace: str, table: str | None = None, doing: str = "write") -> Iterator[None]:
    """Turn what the catalog, its database or its warehouse raises into `PublishFault`; a
    fault of obsrepo's own (anything else) goes on as it is."""
    try:
        yield
    except PublishFault:
        raise
    except Exception as exc:
        reason = reason_of(exc)
        if reason is None:
            raise
        where = f"table {namespace}.{table}" if table else f"namespace {namespace}"
        raise PublishFault(f"catalog '{catalog}' could not {doing} {where}: {reason}; {AFTERWARDS}", catalog=catalog,
                           namespace=namespace, table=table, reason=reason) from None


def reason_of(exc: BaseException) -> str | None:
    """What went wrong, in words, for the errors of a catalog's environment (its database, its
    files, its server); None for any other error."""
    module = type(exc).__module__.split(".")[0]
    if module == "sqlalchemy":
        return _database(str(getattr(exc, "orig", None) or exc))
    if module in ("requests", "urllib3"):
        return _unreachable(str(exc))
    if isinstance(exc, OSError):
        return _file(exc)
    if module in ("pyiceberg", "botocore"):  # the catalog's own refusals (a REST server, Glue)
        return f"the catalog refused it: {first_line(str(exc))}"
    return None


def first_line(text: str) -> str:
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return re.sub(r"\s+", " ", line)[:300]


_DATABASE = (("readonly database", "its database is read-only (the file or its folder cannot be written)"),
             ("unable to open database file", "its database file cannot be opened (its folder is missing or cannot be written)"),
             ("database is locked", "its database is locked by another process"),
             ("disk i/o error", "its database could not be read or written (a disk error)"),
             ("file is not a database", "its database file is not an SQLite database"),
             ("could not connect", "its database server does not answer"),
             ("connection refused", "its database server refuses the connection"),
             ("password authentication failed", "its database refused the credentials"))


def _database(text: str) -> str:
    lowered = text.lower()
    for needle, words in _DATABASE:
        if needle in lowered:
            return words
    said = re.sub(r"^[(]?[\w.]+[)]\s*", "", text)  # the driver's exception name
    return f"its database said: {first_line(said)}"


def _file(exc: OSError) -> str:
    """A file system error in words: which path, and what about it. pyarrow's errors carry the
    errno and the path in their message only."""
    text = str(exc)
    code = exc.errno or _number(r"\[errno (\d+)\]", text)
    path = exc.filename or _quoted(text)
    at = f" {path}" if path else ""
    if code in (errnos.EEXIST, errnos.ENOTDIR) or "non-directory" in text:
        return f"a file stands where the folder{at} (or one above it) must be"
    if code in (errnos.EACCES, errnos.EPERM):
        return f"permission denied on{at or ' a path of the warehouse'}"
    if code == errnos.EROFS:
        return f"the file system of{at} is read-only"
    if code == errnos.ENOENT:
        return f"{path or 'a path of the warehouse'} does not exist"
    if code == errnos.ENOSPC:
        return f"no space is left on the device of{at}"
    said = os.strerror(code) if code else first_line(text)
    return f"{said}{' (' + path + ')' if path else ''}"


def _unreachable(text: str) -> str:
    host = re.search(r"host='([^']+)'", text)
    lowered = text.lower()
    why = ("its name does not resolve" if "resolve" in lowered or "name or service" in lowered else
           "it refuses the connection" if "refused" in lowered else
           "it did not answer in time" if "timed out" in lowered or "timeout" in lowered else
           "the connection failed")
    return f"its server {host.group(1) if host else ''} cannot be reached: {why}".replace("server  ", "server ")


def _number(pattern: str, text: str) -> int | None:
    match = re.search(pattern, text, re.I)
    return int(match.group(1)) if match else None


def _quoted(text: str) -> str | None:
    match = re.search(r"'(/[^']+|[a-z]+://[^']+)'", text)
    return match.group(1) if match else None

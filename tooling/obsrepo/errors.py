"""Error codes, the exception tree, exit codes and the JSON error envelope.

    ObsrepoError                  every failure the product reports on purpose
    ├── UsageError                a bad option value (VALIDATION_ERROR, exit 2)
    ├── NotFoundError             REF_NOT_FOUND, ENTITY_NOT_FOUND, FIELD_NOT_FOUND (exit 3)
    ├── InputError                problems found in the input (exit 1)
    └── EnvironmentFault          GIT_ERROR, INDEX_ERROR (exit 4)
        ├── WriteFault            WRITE_ERROR: a file could not be written whole (nothing was left)
        ├── IndexFault            INDEX_ERROR, also a missing extra (`missing_extra`)
        ├── EmbedderFault         EMBEDDER_ERROR: an embedding provider failed or its model is missing
        ├── PublishFault          PUBLISH_ERROR: a catalog is not configured, does not open or refuses
        └── QueryLimit            QUERY_TIMEOUT, QUERY_MEMORY_LIMIT: `sql` ran out of time or memory

Anything else that escapes is a bug: INTERNAL_ERROR, exit 5.
This module imports nothing of ours but the release (version.py, for install hints).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .version import install_from_git

VALIDATION_ERROR = "VALIDATION_ERROR"
IMMUTABLE_VIOLATION = "IMMUTABLE_VIOLATION"
DUPLICATE_ID = "DUPLICATE_ID"
DUPLICATE_CONTENT = "DUPLICATE_CONTENT"
ENTITY_NOT_FOUND = "ENTITY_NOT_FOUND"
FIELD_NOT_FOUND = "FIELD_NOT_FOUND"
REF_NOT_FOUND = "REF_NOT_FOUND"
INVALID_RELATIONSHIP_TYPE = "INVALID_RELATIONSHIP_TYPE"
CYCLE_DETECTED = "CYCLE_DETECTED"
ENTITY_ALREADY_MERGED = "ENTITY_ALREADY_MERGED"
IDENTITY_CONFLICT = "IDENTITY_CONFLICT"
INDEX_ERROR = "INDEX_ERROR"
GIT_ERROR = "GIT_ERROR"
WRITE_ERROR = "WRITE_ERROR"
QUERY_TIMEOUT = "QUERY_TIMEOUT"
QUERY_MEMORY_LIMIT = "QUERY_MEMORY_LIMIT"
EMBEDDER_ERROR = "EMBEDDER_ERROR"
PUBLISH_ERROR = "PUBLISH_ERROR"
INTERNAL_ERROR = "INTERNAL_ERROR"

_MENTIONED = re.compile(r"`([a-z_]+)`")  # a request field a message mentions

_LINE_BREAKS = re.compile(r"\s*(?:(?:\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])\s*)+")


def one_line(message: str) -> str:
    """A message on one line, whatever the library whose message it wraps wrote (git's hints, a
    validator's list, a catalog's stack of causes), so an error prints as one line and never as
    a literal `\\n`: lines are joined by `; `, but a line that goes on with a small letter (a
    paragraph wrapped at a width) or follows a `:` by a space, and a blank line always by `; `."""
    if not _LINE_BREAKS.search(message):
        return message
    parts = _LINE_BREAKS.split(message.strip())
    breaks = _LINE_BREAKS.findall(message.strip())
    joined = parts[0]
    for gap, part in zip(breaks, parts[1:]):
        paragraph = len(re.findall(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]", gap)) > 1
        goes_on = joined.endswith((":", ",")) or (part[:1].islower() and not paragraph)
        joined += (" " if goes_on else "; ") + part
    return joined


EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_ENVIRONMENT = 4
EXIT_INTERNAL = 5


class ObsrepoError(Exception):
    """A failure with a stable code, a message and machine-readable details."""

    code = INTERNAL_ERROR
    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        message = one_line(message)
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def renamed(self, names: Mapping[str, str]) -> ObsrepoError:
        """The same failure in an adapter's words: the request field in `details["parameter"]`
        (and at the start of the message, where the library puts it) becomes the adapter's
        name for it (`at` → `--at`, `after` → `afterDate`); another field a message mentions is
        written in backquotes (`commit`) and renamed too. Fields not in `names` stay."""
        field = self.details.get("parameter")
        name = names.get(field) if isinstance(field, str) else None
        message = _MENTIONED.sub(lambda found: names.get(found.group(1), found.group(0)), self.message)
        if isinstance(field, str) and name is not None and name != field:
            self.details["parameter"] = name
            if message.startswith(field) and message[len(field):len(field) + 1] in (" ", ":", ""):
                message = name + message[len(field):]
        self.message = message
        self.args = (message,)
        return self

    def envelope(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class UsageError(ObsrepoError):
    """A bad option value; `details["parameter"]` names it."""

    code = VALIDATION_ERROR
    exit_code = EXIT_USAGE


class InputError(ObsrepoError):
    """The input itself is invalid (a document given to `new`, say)."""

    code = VALIDATION_ERROR
    exit_code = EXIT_PROBLEMS


class NotFoundError(ObsrepoError):
    code = REF_NOT_FOUND
    exit_code = EXIT_NOT_FOUND


class EnvironmentFault(ObsrepoError):
    code = GIT_ERROR
    exit_code = EXIT_ENVIRONMENT


class GitError(EnvironmentFault):
    code = GIT_ERROR


class IndexFault(EnvironmentFault):
    code = INDEX_ERROR


class WriteFault(EnvironmentFault):
    """A file obsrepo writes (docs/design.md §8a) could not be written: a full disk, a file-size
    limit, a file where a folder should be, permissions. `details` name the path and the reason;
    no partial file was left behind."""

    code = WRITE_ERROR


class EmbedderFault(EnvironmentFault):
    """An embedding provider could not give vectors: a local model missing or unreadable, a
    server down, slow, refusing (HTTP 429, 5xx) or answering something else than the vectors
    asked for. Nothing about the input is wrong; `details["provider"]` names the provider."""

    code = EMBEDDER_ERROR


class PublishFault(EnvironmentFault):
    """The catalog of `publish` (docs/design.md §16, §8b) is not configured or does not open; a
    namespace is no namespace; the catalog, its database or its warehouse refuses a read or a
    write; a table is not obsrepo's or of another shape, or was published with another binding
    or ceiling."""

    code = PUBLISH_ERROR


class QueryLimit(EnvironmentFault):
    """A statement stopped by a limit the caller set (`--timeout`, `--memory-limit`): the
    statement is not wrong, and the same one succeeds with a larger limit."""

    code = QUERY_TIMEOUT


# The extras of pyproject.toml by the top-level modules each one brings beyond the gate, its
# packages' own dependencies included, so that a half-installed extra is named too; and the
# extras each one includes. A command run without its extra is an environment problem whose
# message is the one install command that fixes it, never a bug (docs/design.md §8a).
EXTRA_MODULES: dict[str, frozenset[str]] = {
    "index": frozenset({"duckdb", "duckdb_extension_fts", "pyarrow", "adbc_driver_duckdb", "numpy"}),
    "mcp": frozenset({"mcp", "mcp_types", "anyio", "uvicorn", "h11", "starlette", "sse_starlette", "httpx2", "httpcore2",
                      "truststore", "idna", "jsonschema", "jsonschema_specifications", "referencing", "rpds", "attr",
                      "attrs", "jwt", "cryptography", "_cffi_backend", "multipart", "python_multipart", "opentelemetry"}),
    "watch": frozenset({"watchdog"}),
    "publish": frozenset({"pyiceberg", "sqlalchemy", "pyroaring", "mmh3", "strictyaml", "tenacity", "cachetools", "zstandard"}),
    "semantic": frozenset({"model2vec", "tokenizers", "safetensors", "huggingface_hub", "joblib", "tqdm",
                           "jinja2", "markupsafe", "hf_xet", "fsspec", "cloudpickle"}),
    "serve": frozenset({"starlette", "jinja2", "markupsafe", "markdown_it", "mdurl", "uvicorn", "h11", "anyio", "idna",
                        "sniffio"}),
}
EXTRA_INCLUDES: dict[str, frozenset[str]] = {"mcp": frozenset({"index"}), "watch": frozenset({"index"}),
                                              "publish": frozenset({"index"}), "serve": frozenset({"index"})}
# The commands whose own extra is not `index` (every other command that loads a heavy module
# needs the index).
COMMAND_EXTRAS: dict[str, str] = {"mcp": "mcp", "watch": "watch", "publish": "publish", "serve": "serve"}


def missing_extra(exc: BaseException, command: str | None = None) -> IndexFault | None:
    """The environment error for `exc` when it is the import of an extra that is not installed:
    it names the extra to install, the command's own when that one includes the missing
    module's (`obsrepo mcp` without DuckDB: the `mcp` extra, which brings the index); None for
    any other failure, which stays a bug."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    top = (name or "").split(".")[0]
    wanted = COMMAND_EXTRAS.get(command or "", "index")
    # a module several extras bring (starlette: mcp and serve) belongs to the command's own first
    owners = [extra for extra, modules in EXTRA_MODULES.items() if top in modules]
    owner = wanted if wanted in owners else next(iter(owners), None)
    if name is None or owner is None:
        return None
    extra = wanted if owner == wanted or owner in EXTRA_INCLUDES.get(wanted, ()) else owner
    install = f"pip install 'obsrepo[{extra}]'"
    from_git = install_from_git(f"obsrepo[{extra}]")  # works before the release is on PyPI (§18)
    return IndexFault(f"this command needs the {extra} extra, which is not installed ({name} is missing): "
                      f"{install} (before obsrepo is on PyPI: {from_git}; from a clone: pip install '.[{extra}]')",
                      missing=name, extra=extra, install=install, install_from_git=from_git)

"""The one place where failures become output and exit codes, for every command.

An error of the door names a request field (`at`, `max_classification`); `handled` renames it
to the running command's flag (`--at`, `--max-classification`) before it is printed: the JSON
envelope on stdout with `--format json`, else one line on stderr. Anything else that escapes
is a bug: INTERNAL_ERROR with the traceback in a log file, never on screen.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import click

from .. import errors
from ..errors import ObsrepoError, UsageError
from ..ops.surface import NOT_WRITTEN, printable, text_line


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, sort_keys=False))


def handled(func: Callable[..., int]) -> Callable[..., None]:
    """The one place where errors become output and exit codes."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        as_json = kwargs.get("output_format") == "json"
        try:
            _refuse_undecodable(kwargs)
            code = func(*args, **kwargs)
        except ObsrepoError as exc:
            _report_error(exc.renamed(cli_names()), as_json)
            code = exc.exit_code
        except click.exceptions.Exit:
            raise
        except KeyboardInterrupt:
            code = 130
        except Exception as exc:  # a bug: still one envelope, never a traceback on screen
            missing = errors.missing_extra(exc, click.get_current_context().command.name)
            if missing is not None:  # an extra the command needs is not installed
                _report_error(missing, as_json)
                code = missing.exit_code
            else:
                if os.environ.get("OBSREPO_DEBUG"):
                    raise
                _report_error(_internal_error(exc), as_json)
                code = errors.EXIT_INTERNAL
        sys.exit(code)

    return wrapper


def _internal_error(exc: BaseException) -> ObsrepoError:
    """INTERNAL_ERROR naming a log file that holds the traceback, so that a bug can be reported
    without running the command again."""
    log = _write_crash_log(exc)
    where = (f"the details are in {log}; please attach that file to a bug report" if log else
             "the details could not be written to a log file; OBSREPO_DEBUG=1 shows them")
    failure = ObsrepoError(f"internal error (a bug in obsrepo): {type(exc).__name__}: {exc}; {where}",
                           code=errors.INTERNAL_ERROR)
    if log:
        failure.details["log"] = log
    return failure


def _write_crash_log(exc: BaseException) -> str | None:
    """Write the traceback to `.obsrepo/logs/` of the repository, or else the system's temporary
    folder; the file's path, or None when neither can be written."""
    import platform
    import tempfile
    import time
    import traceback

    try:
        from importlib.metadata import version

        from ..ops.surface import log_folder

        try:
            release = version("obsrepo")
        except Exception:  # noqa: BLE001 - not installed as a distribution
            release = "unknown"
        text = (f"obsrepo {release}, Python {platform.python_version()}, {platform.platform()}\n"
                f"command: {' '.join(sys.argv)}\ncwd: {os.getcwd()}\n\n"
                + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        name = f"obsrepo-error-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.log"
        places: list[Callable[[], str | None]] = [lambda: log_folder(os.getcwd()), tempfile.gettempdir]
    except Exception:  # noqa: BLE001 - the report of a bug must not fail in turn
        return None
    for place in places:
        try:
            where = place()
            if where is None:
                continue
            os.makedirs(where, exist_ok=True)
            path = os.path.join(where, name)
            with open(path, "w", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(text)
            return path
        except Exception:  # noqa: BLE001 - try the next place
            continue
    return None


def cli_names() -> dict[str, str]:
    """The command line's name for each request field of the running command: a field named as
    a parameter (`max_classification` → `--max-classification`, `base` → BASE), or as an
    option's own spelling (`format` → `--format`, `to` → `--to`)."""
    names: dict[str, str] = {}
    for param in click.get_current_context().command.params:
        label = _label(param)
        names[param.name or label] = label
        for opt in param.opts:
            if opt.startswith("--"):
                names.setdefault(opt[2:].replace("-", "_"), label)
    return names


def _label(param: click.Parameter) -> str:
    """How the command line spells a parameter: an option by its first flag, an argument as its
    usage line shows it (its metavar when that is one name, `COMP_ID`; else its name, `BASE`)."""
    if param.param_type_name == "option":
        return param.opts[0]
    metavar = param.metavar or ""
    return metavar if re.fullmatch(r"[A-Z][A-Z_]*", metavar) else (param.name or "").upper()


def _refuse_undecodable(kwargs: dict[str, Any]) -> None:
    """Arguments that are not UTF-8 (a shell passes bytes) reach Python as lone surrogates,
    which no query can carry: refuse them by name. File paths are exempt (git allows any bytes,
    and `check` reports such a path itself)."""
    labels = {p.name: _label(p) for p in click.get_current_context().command.params}
    for name, value in kwargs.items():
        if name == "paths":
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    label = labels.get(name, name)
                    raise UsageError(f"{label} is not valid UTF-8 text", parameter=label) from None


def _report_error(exc: ObsrepoError, as_json: bool) -> None:
    if as_json:
        _emit_json(exc.envelope())
        return
    issues = exc.details.get("issues")
    if issues and all(issue["path"] == NOT_WRITTEN for issue in issues):  # `new` refused its draft
        click.echo("error: the observation was not written:", err=True)
        for issue in issues:
            click.echo(printable(f"  {issue['code']}: {issue['message']} [{issue['rule']}]"), err=True)
    elif issues:
        for issue in issues:
            click.echo(text_line(issue["path"], issue["line"], issue["col"], issue["code"], issue["message"], issue["rule"]),
                       err=True)
    else:
        click.echo(printable(f"error: {exc.code}: {exc.message}"), err=True)


class _Group(click.Group):
    """Usage errors from click become VALIDATION_ERROR with exit 2 (and JSON when asked)."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:  # noqa: D401
        kwargs["standalone_mode"] = False
        argv = list(args) if args is not None else sys.argv[1:]
        if not argv:  # bare `obsrepo`: the help, as `obsrepo --help` prints it
            argv = ["--help"]
        try:
            return super().main(argv, *rest, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            sys.exit(130)
        except click.ClickException as exc:
            param = getattr(getattr(exc, "param", None), "opts", None)
            failure = UsageError(exc.format_message(), parameter=param[0] if param else None)
            _report_error(failure, _wants_json(argv))
            sys.exit(errors.EXIT_USAGE)


def _wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg == "--format=json" or (arg == "--format" and i + 1 < len(argv) and argv[i + 1] == "json"):
            return True
    return False


"""The command line: arguments → one library call → render → exit code. No domain logic."""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from .. import errors
from ..errors import ObsrepoError, UsageError
from ..format.report import NOT_WRITTEN, plural, printable, text_line
from ..format.vocabulary import CLASSIFICATIONS, DEFAULT_CLASSIFICATION, QUERY_MODES
from ..params import binding_from, parse_binding

FORMATS = click.Choice(["text", "json"])


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

        from ..gitstore import Git

        try:
            release = version("obsrepo")
        except Exception:  # noqa: BLE001 - not installed as a distribution
            release = "unknown"
        text = (f"obsrepo {release}, Python {platform.python_version()}, {platform.platform()}\n"
                f"command: {' '.join(sys.argv)}\ncwd: {os.getcwd()}\n\n"
                + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        name = f"obsrepo-error-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.log"
        git = Git.discover(os.getcwd())
        folders = [os.path.join(git.root, ".obsrepo", "logs")] if git else []
        folders.append(tempfile.gettempdir())
    except Exception:  # noqa: BLE001 - the report of a bug must not fail in turn
        return None
    for folder in folders:
        try:
            if os.path.basename(os.path.dirname(folder)) == ".obsrepo":
                from ..index.paths import private_folder

                private_folder(os.path.dirname(folder))
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, name)
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
        label = param.opts[0] if param.param_type_name == "option" else (param.name or "").upper()
        names[param.name or label] = label
        for opt in param.opts:
            if opt.startswith("--"):
                names.setdefault(opt[2:].replace("-", "_"), label)
    return names


def _refuse_undecodable(kwargs: dict[str, Any]) -> None:
    """Arguments that are not UTF-8 (a shell passes bytes) reach Python as lone surrogates,
    which no query can carry: refuse them by name. File paths are exempt (git allows any bytes,
    and `check` reports such a path itself)."""
    labels = {p.name: (p.opts[0] if p.param_type_name == "option" else (p.name or "").upper())
              for p in click.get_current_context().command.params}
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


def run() -> NoReturn:
    """The `obsrepo` program (the console script and `python -m obsrepo`): the CLI, then an
    immediate exit. A finished command has closed every file it wrote and joined every worker
    (each is opened in a `with`, or closed before an index is published), so what Python's own
    teardown would still do, freeing DuckDB, pydantic and pyarrow module by module, only costs
    time: about 45 ms a command. Standard output and error are flushed first; when the reader
    has closed the pipe (`obsrepo query | head`), the command ends quietly with its own code."""
    try:
        main(prog_name="obsrepo")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # as Python itself reports `sys.exit("message")`
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left, or the stream was closed
            pass
    store = sys.modules.get("obsrepo.index.generations")
    if store is not None:
        store.wait_for_freeing()  # an old index generation is removed once the answer is out
    os._exit(code)


def _wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg == "--format=json" or (arg == "--format" and i + 1 < len(argv) and argv[i + 1] == "json"):
            return True
    return False


def examples(*lines: str) -> str:
    """A command's epilog: its examples, kept line by line (click's \\b marker)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=examples("obsrepo new --source agent/crm --event \"Acme signed\" --entity company/acme",
                             "obsrepo check", "obsrepo query --scope task/42 --format full",
                             "obsrepo snapshot company/acme", "obsrepo COMMAND --help"))
@click.version_option(package_name="obsrepo", help="Show the version and exit.")
def main() -> None:
    """A git repository as a database of observations.

    Observations are immutable Markdown files with YAML front matter under observations/;
    `new` writes one, `check` validates the repository (in CI and pre-commit), and the other
    commands read an index built from git (.obsrepo/index.duckdb, rebuilt when needed).

    Exit codes: 0 ok, 1 problems in the input, 2 a bad option, 3 not found,
    4 git, the index or a query limit, 5 a bug in obsrepo.
    """


@main.command(epilog=examples("obsrepo check", "obsrepo check observations/2026/02/13/obs-20260213-102500-0001.md",
                              "obsrepo check --base origin/main --format github", "obsrepo check --staged"))
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--base", metavar="REV", help="Also refuse changes to existing observations since REV (its merge base with HEAD), "
                                            "commit by commit.")
@click.option("--staged", is_flag=True, help="Check what is staged for the next commit against HEAD (for pre-commit).")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text: one line per problem; json: one report object; github: annotations for GitHub Actions.")
@handled
def check(paths: tuple[str, ...], base: str | None, staged: bool, output_format: str) -> int:
    """Validate documents and repository rules; exit 1 on problems.

    Checks every document of the work tree (or only PATHS, though the repository rules always
    look at the whole tree): YAML, schema, file names and folders, references, duplicates,
    relation cycles and, with --base or --staged, that no observation was changed or deleted.
    A repository without commits is checked too.
    """
    from ..api import Repository
    from .render import render_report

    report = Repository(os.getcwd()).check(paths, base=base, staged=staged, cwd=os.getcwd(),
                                           progress=_progress_bar("checking"))
    render_report(report, output_format)
    return errors.EXIT_OK if report.ok else errors.EXIT_PROBLEMS


@main.command(epilog=examples(
    'obsrepo new --source agent/crm --event "Invoice INV-2041 issued" --type invoice.issued \\',
    "    --entity invoice/inv-2041 --field total=1250 --field currency=EUR --scope company/acme",
    'obsrepo new --source human/alice --event "Phone number fixed" --entity company/acme \\',
    "    --field phone=+4420 --corrects obs-20260213-102500-0001",
    "echo '{\"source\": \"agent/x\", \"event\": \"Seen\", \"body\": \"Details\"}' | obsrepo new --json -"))
@click.option("--json", "json_input", metavar="FILE", help="Read a JSON object (front matter + optional body) from FILE, or - for stdin.")
@click.option("--source", help="Who observed: agent/x, agent:x, plugin:telegram, human/alice …")
@click.option("--event", help="One line: what was observed.")
@click.option("--type", "type_", help="Event kind, e.g. task.updated.")
@click.option("--timestamp", help="ISO 8601 with a timezone, or a date meaning midnight UTC (default: now).")
@click.option("--scope", multiple=True, help="A scope id (repeatable).")
@click.option("--entity", help="The entity the facts are about: <type>/<key>.")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE",
              help="A fact about --entity (repeatable; VALUE is JSON when it parses, else text).")
@click.option("--priority", type=int, help="Source priority: 0 AI extraction, 100 structured (default), 1000 a correction.")
@click.option("--specificity", type=float, help="0..1: breaks ties between values of equal priority (default 0).")
@click.option("--corrects", multiple=True, metavar="ID", help="The observation this one corrects (repeatable; priority 1000).")
@click.option("--retracts", multiple=True, metavar="ID", help="The observation this one withdraws (repeatable).")
@click.option("--relation", "relations", multiple=True, metavar="TYPE=TARGET", help="e.g. PART_OF=company/acme (repeatable).")
@click.option("--tenant", metavar="org=…,project=…",
              help="Ownership: org, project, agent, user; the write is judged on what this tenant can see.")
@click.option("--classification", type=click.Choice(CLASSIFICATIONS),
              help=f"Who may read it (default {DEFAULT_CLASSIFICATION}).")
@click.option("--source-ref", help="Where the observer found it: a URL, a message id, a file.")
@click.option("--interpretation", help="How the observer read the source, in one line.")
@click.option("--trace-ref", help="The run or trace that produced it.")
@click.option("--data", metavar="JSON", help="Any JSON payload.")
@click.option("--body", help="Markdown body; - reads it from stdin.")
@click.option("--commit", "as_commit", is_flag=True,
              help="Commit the new file on a proposal branch instead of writing it into the work tree.")
@click.option("--branch", metavar="BRANCH",
              help="The proposal branch for --commit (default obsrepo/proposals, made from HEAD when missing).")
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: the new file's path; json: its id, path and content hash (and commit and branch).")
@handled
def new(json_input: str | None, output_format: str, as_commit: bool, branch: str | None, **options: Any) -> int:
    """Write one new observation and print its path.

    The id and the file name come from the timestamp and the content; nothing is written when
    the observation would break a rule (the problems are printed instead, exit 1) or repeats
    one already in the work tree. With --commit the file goes into one new commit on a proposal
    branch instead (checked against the branch), leaving the work tree as it is.
    """
    from ..api import new_observation
    from ..write.new import read_json_input, read_text

    if json_input is not None:
        front, body = read_json_input(json_input)
    else:
        front, body = _front_from_flags(options)
        if body == "-":
            body = read_text("-", "--body")
    writer = front["tenant"] if options["tenant"] and json_input is None else None  # --tenant binds the writer
    if as_commit:
        from ..api import Repository
        from .write import render_written

        written = Repository(os.getcwd(), tenant=writer).propose(front, body, branch=branch, tool="new")
        return render_written(written, output_format)
    if branch is not None:
        raise UsageError("--branch names the proposal branch of --commit", parameter="--branch")
    created = new_observation(os.getcwd(), front, body, tenant=writer)
    if output_format == "json":
        _emit_json(created.as_dict())
    else:
        click.echo(created.path)
    return errors.EXIT_OK


def _front_from_flags(options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    from ..write.new import option_timestamp, parse_field

    for required in ("source", "event"):
        if not options.get(required):
            raise UsageError(f"--{required} is required (or give --json)", parameter=f"--{required}")
    front: dict[str, Any] = {"source": options["source"], "event": options["event"]}
    if options.get("timestamp") is not None:
        front["timestamp"] = option_timestamp(options["timestamp"])
    simple = {"type_": "type", "entity": "entity", "priority": "priority",
              "specificity": "specificity", "classification": "classification", "source_ref": "source_ref",
              "interpretation": "interpretation", "trace_ref": "trace_ref"}
    for option, key in simple.items():
        if options.get(option) is not None:
            front[key] = options[option]
    if options.get("specificity") is not None and not math.isfinite(options["specificity"]):
        raise UsageError("--specificity must be a finite number", parameter="--specificity")
    if options["scope"]:
        front["scope"] = list(options["scope"])
    if options["fields"]:
        front["fields"] = dict(parse_field(f) for f in options["fields"])
    for key in ("corrects", "retracts"):
        if options[key]:
            front[key] = list(options[key])
    if options["relations"]:
        pairs = [r.partition("=") for r in options["relations"]]
        if any(not sep for _, sep, _ in pairs):
            raise UsageError("--relation expects TYPE=TARGET", parameter="--relation")
        front["relations"] = [{"type": t, "target": target} for t, _, target in pairs]
    if options["tenant"]:
        front["tenant"] = parse_binding(options["tenant"], "--tenant")
    if options["data"] is not None:
        front["data"] = parse_field(f"data={options['data']}", "--data")[1]
    return front, options.get("body") or ""


def _repository(index: str | None = None, tenant: str | None = None, branch: str | None = None) -> Any:
    from ..api import Repository

    return Repository(os.getcwd(), index=index, tenant=binding_from(tenant), progress=_progress_bar("indexing"),
                      branch=branch)


index_option = click.option("--index", "index_path", metavar="PATH", envvar="OBSREPO_INDEX",
                            help="The index file (default .obsrepo/index.duckdb, or OBSREPO_INDEX).")
tenant_option = click.option("--tenant", metavar="org=…[,project=…]", help="Bind every read to this tenant (or OBSREPO_TENANT).")


def read_options(func: Callable) -> Callable:
    """The options every read command has: the tenant binding and the index file. The command
    receives them as `tenant` and `index_path` and hands them to `_repository`."""
    return tenant_option(index_option(func))


@main.command("index", epilog=examples("obsrepo index", "obsrepo index --rev v1.2 --index /tmp/v1.duckdb", "obsrepo index --full --strict"))
@click.option("--rev", default=None, metavar="REV", help="The commit to index (default HEAD).")
@click.option("--full", is_flag=True, help="Rebuild from scratch instead of updating.")
@click.option("--strict", is_flag=True, help="Exit 1 (and keep the previous index) if history holds invalid documents.")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no warnings.")
@index_option
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: a summary on stderr; json: the result (commit, counts, problems) on stdout.")
@handled
def index_command(rev: str | None, full: bool, strict: bool, quiet: bool, index_path: str | None, output_format: str) -> int:
    """Build or update the index from git objects at REV.

    The other commands do this themselves when the index is missing or behind HEAD; run it to
    see the warnings about invalid documents in history, or in CI with --strict.
    """
    repo = _repository(index_path)
    progress = None if quiet or output_format == "json" else _progress_bar("indexing", keep=True)
    result = repo.index(rev, full=full, progress=progress, strict=strict)
    if output_format == "json":
        _emit_json(result.as_dict())
    elif not quiet:
        for problem in result.problems:
            click.echo(f"warning: {problem.as_text()}", err=True)
        kind = "built" if result.full else "updated"
        # versions, not documents: a comprehension edited in history is one document (what
        # `check` counts in the work tree) and one version more per edit along the chain
        click.echo(f"index {kind} at {result.commit[:12]}: {plural(result.commits, 'commit')}, "
                   f"{plural(result.added, 'document version')} added, {result.removed} removed", err=True)
    return errors.EXIT_PROBLEMS if strict and result.problems else errors.EXIT_OK


def _progress_bar(label: str, keep: bool = False) -> Callable[[int, int], None] | None:
    """A progress bar on stderr when stderr is a terminal (None otherwise: pipes, CI and logs
    stay clean). When done it stays on its own line with `keep`, else it is wiped."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        line = f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}%"
        sys.stderr.write(line)
        if done >= total:
            sys.stderr.write("\n" if keep else "\r" + " " * (len(line) - 1) + "\r")
        sys.stderr.flush()

    return show


@main.command(epilog=examples("obsrepo query --scope task/42", "obsrepo query --type task.updated --after 2026-02-01 --format full",
                              'obsrepo query --text "payment overdue" --tenant org=northwind --format json',
                              "obsrepo query --source agent: --at v1.2 --order asc --limit 100"))
@click.option("--scope", "scopes", multiple=True, help="A scope id (repeatable; matches ANY).")
@click.option("--type", "type_", help="Exact event type.")
@click.option("--source", help="Source prefix, taken literally (agent: matches agent:x).")
@click.option("--after", help="From this time on (inclusive): ISO 8601 with a timezone, or a date.")
@click.option("--before", help="Before this time (exclusive).")
@click.option("--entity", help="Observations about this entity.")
@click.option("--org", help="Only observations whose tenant has this org.")
@click.option("--project", help="Only observations whose tenant has this project.")
@click.option("--agent", help="Only observations whose tenant has this agent.")
@click.option("--user", help="Only observations whose tenant has this user.")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS),
              help="Leave out anything classified above this level.")
@click.option("--text", help="Full-text search (BM25) over event and body; the best matches first.")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--include-retracted", is_flag=True, help="Also list observations that were retracted.")
@click.option("--committed-only", is_flag=True, help="Leave out a running watcher's uncommitted drafts.")
@click.option("--include-expired", is_flag=True, help="Also list observations that retention expired.")
@click.option("--unweighted", is_flag=True, help="--text ranks by BM25 alone, without feedback weights.")
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many (1..1000).")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first (for the next page).")
@click.option("--order", type=click.Choice(["desc", "asc"]), default="desc", show_default=True,
              help="By timestamp then id: newest first (desc) or oldest first (asc).")
@click.option("--format", "output_format", type=click.Choice(QUERY_MODES), default="short", show_default=True,
              help="short: one line each; full: source, body, data and scopes too; json: one page object; "
                   "jsonl: one record per line.")
@read_options
@handled
def query(scopes: tuple[str, ...], type_: str | None, source: str | None, after: str | None, before: str | None,
          entity: str | None, org: str | None, project: str | None, agent: str | None, user: str | None,
          max_classification: str | None, text: str | None, at: str | None, include_retracted: bool,
          committed_only: bool, include_expired: bool, unweighted: bool, limit: int,
          offset: int, order: str, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """Observations that match every filter given, newest first.

    Builds or updates the index first when it is missing or behind HEAD.
    Prints "No observations found." (short and full) when nothing matches.
    """
    from ..read.query import QueryRequest, parse_time
    from .render import render_observations

    request = QueryRequest(
        scopes=scopes, type=type_, source=source, entity=entity, text=text, include_retracted=include_retracted,
        include_expired=include_expired, unweighted=unweighted,
        after=parse_time(after, "--after") if after else None, before=parse_time(before, "--before") if before else None,
        max_classification=max_classification, limit=limit, offset=offset, order=order,
    )
    request.validate()
    repo = _repository(index_path, tenant)
    page = repo.query(request, at=at, where={k: v for k, v in
                                             (("org", org), ("project", project), ("agent", agent), ("user", user)) if v},
                      overlay=not committed_only)
    click.echo(render_observations(page, output_format))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo watch", "obsrepo watch --committed-only", "obsrepo watch --debounce 50 --max-wait 500"))
@click.option("--committed-only", is_flag=True, help="Index commits only: no overlay of uncommitted drafts.")
@click.option("--debounce", type=click.IntRange(1, 60000), default=100, show_default=True, metavar="MS",
              help="Act when no event came for this long (a burst, an editor's save, a git command).")
@click.option("--max-wait", type=click.IntRange(1, 600000), default=1000, show_default=True, metavar="MS",
              help="Act at the latest this long after the first event of a burst.")
@click.option("--quiet", "-q", is_flag=True, help="Only problems: no line per update.")
@index_option
@handled
def watch(committed_only: bool, debounce: int, max_wait: int, quiet: bool, index_path: str | None) -> int:
    """Keep the index live at the branch tip, with valid drafts as an overlay.

    Commits, checkouts, pulls, rebases and resets become one update each; a draft under
    observations/ that passes the check shows in `query` with "uncommitted": true until it is
    committed; a draft that fails is reported here (path:line:col CODE message) and never hides
    a committed document. One watcher per index. Stops cleanly on Ctrl-C or SIGTERM.
    """
    _preload(*WATCH_IMPORTS, *INDEX_IMPORTS)
    from ..watch.loop import Watcher

    Watcher(_repository(index_path), committed_only=committed_only, quiet=debounce / 1000, max_wait=max_wait / 1000,
            verbose=not quiet).run()
    return errors.EXIT_OK


# What the long-running commands import before they start: a missing extra stops them at once,
# named by `errors.missing_extra` in `handled`, rather than in the watcher's thread, on an MCP
# client's first call, or after the watcher has said it is watching.
INDEX_IMPORTS = ("duckdb", "duckdb_extension_fts", "pyarrow")
WATCH_IMPORTS = ("watchdog.observers",)
MCP_IMPORTS = ("anyio", "mcp.server.lowlevel", "mcp.server.stdio")


def _preload(*modules: str) -> None:
    import importlib

    for name in modules:
        importlib.import_module(name)


@main.command(epilog=examples("obsrepo status", "obsrepo status --format json"))
@index_option
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: one fact a line; json: the whole state on stdout.")
@handled
def status(index_path: str | None, output_format: str) -> int:
    """Which commit the index holds, how far behind HEAD, the watcher and its drafts.

    Also when the index, and the watcher, last updated and how long that took.
    """
    from ..api import Repository

    state = Repository(os.getcwd(), index=index_path).status()
    if output_format == "json":
        _emit_json(state)
        return errors.EXIT_OK
    last = state["last_update"] or {}
    watcher = state["watcher"]
    lines = [
        f"index:            {state['index']}",
        f"indexed commit:   {state['indexed_commit'] or '(none)'}" + (f"  ({state['problem']})" if state["problem"] else ""),
        f"behind HEAD:      {'-' if state['behind'] is None else plural(state['behind'], 'commit')}",
        f"watcher:          {_watcher_line(watcher)}",
        f"overlay:          {_overlay_line(state['overlay_documents'], watcher)}",
        f"last update:      {last.get('updated_at', '-')}" + (f" ({last['duration_ms']} ms)" if "duration_ms" in last else ""),
    ]
    click.echo("\n".join(lines))
    return errors.EXIT_OK


def _overlay_line(documents: int, watcher: dict | None) -> str:
    """The drafts that passed, and those the watcher rejected (they are reported on its stderr)."""
    line = plural(documents, "uncommitted document")
    if watcher and watcher.get("rejected_drafts"):
        line += f"; {plural(watcher['rejected_drafts'], 'draft')} rejected (see the watcher's output)"
    return line


def _watcher_line(watcher: dict | None) -> str:
    """`pid N, its last update at T (D ms)`: the watcher's own last update, which may have
    changed only the overlay, or nothing (the index's last update is a line of its own)."""
    if not watcher:
        return "not running"
    line = f"pid {watcher['pid']}"
    if watcher.get("updated_at"):
        line += f", its last update at {watcher['updated_at']}"
        if watcher.get("duration_ms") is not None:
            line += f" ({watcher['duration_ms']} ms)"
    return line


@main.command(epilog=examples('obsrepo sql "SELECT type, count(*) AS n FROM observations GROUP BY ALL ORDER BY n DESC"',
                              'obsrepo sql "DESCRIBE observations"', 'obsrepo sql "SHOW TABLES" --format json',
                              'obsrepo sql "SELECT * FROM entity_snapshots" --format csv --timeout 120 --memory-limit 4GB'))
@click.argument("statement")
@click.option("--format", "output_format", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="table: aligned columns; csv: with a header row; json: an array of row objects.")
@click.option("--timeout", type=float, default=30.0, show_default=True, metavar="SECONDS",
              help="Stop the statement after this long (QUERY_TIMEOUT, exit 4).")
@click.option("--memory-limit", default="1GB", show_default=True, metavar="AMOUNT",
              help="The most memory the statement may use, e.g. 512MB, 4GB (QUERY_MEMORY_LIMIT, exit 4).")
@index_option
@handled
def sql(statement: str, output_format: str, timeout: float, memory_limit: str, index_path: str | None) -> int:
    """Run one read-only SQL query against the index.

    One query at a time (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN [ANALYZE] of a query,
    CALL of a table function without side effects); writes, settings and file access are refused.
    Reads every tenant's rows, so it is refused to a tenant-bound caller.
    """
    from ..read.sql import render

    columns, rows = _repository(index_path).sql(statement, timeout=timeout, memory_limit=memory_limit)
    click.echo(render(columns, rows, output_format))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo snapshot company/acme", "obsrepo snapshot company/acme --as-of 2026-03-01 --format text",
                              "obsrepo snapshot company/acme --at HEAD~3 --explain"))
@click.argument("entity")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--as-of", metavar="TIME", help="Only observations with timestamp ≤ TIME (valid time).")
@click.option("--explain", is_flag=True, help="Every candidate value per field, and the rule that decided.")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@click.option("--include-expired", is_flag=True, help="Also count observations that retention expired.")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True,
              help="json: the snapshot object; text: one line per field with its source.")
@read_options
@handled
def snapshot(entity: str, at: str | None, as_of: str | None, explain: bool, max_classification: str | None,
             include_expired: bool, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """ENTITY as its observations say it is, field by field.

    ENTITY is type/key (company/acme); each field comes with the observation it came from.
    Per field the value of the highest priority wins, then the most specific, then the latest;
    corrections win over everything else, retracted observations do not count, and an entity
    merged into another (DUPLICATE_OF) answers with the survivor.
    """
    result = _repository(index_path, tenant).snapshot(entity, at=at, as_of=as_of, explain=explain,
                                                      max_classification=max_classification, include_expired=include_expired)
    if output_format == "json":
        _emit_json(result)
    else:
        from .render import render_snapshot

        click.echo(render_snapshot(result))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo provenance company/acme phone", "obsrepo provenance company/acme phone --format text"))
@click.argument("entity")
@click.argument("field")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@click.option("--include-expired", is_flag=True, help="Also count observations that retention expired.")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True,
              help="json: one object; text: one line per key.")
@read_options
@handled
def provenance(entity: str, field: str, at: str | None, max_classification: str | None, include_expired: bool,
               output_format: str, tenant: str | None, index_path: str | None) -> int:
    """Where FIELD of ENTITY's snapshot came from.

    The winning observation, its file, the commit that added it, its author, and the rule that decided.
    """
    result = _repository(index_path, tenant).provenance(entity, field, at=at, max_classification=max_classification,
                                                        include_expired=include_expired)
    if output_format == "json":
        _emit_json(result)
    else:
        click.echo("\n".join(f"{key}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}"
                             for key, value in result.items()))
    return errors.EXIT_OK


def _json_out(result: Any, output_format: str) -> int:
    if output_format == "json":
        _emit_json(result)
    else:
        from .render import render_generic

        click.echo(render_generic(result))
    return errors.EXIT_OK


json_or_text = click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="text", show_default=True,
                            help="text: readable lines; json: the full result object.")
at_option = click.option("--at", metavar="REV", help="The repository as it was at REV.")
paging = [click.option("--limit", type=int, default=50, show_default=True, help="At most this many (1..1000)."),
          click.option("--offset", type=int, default=0, help="Skip this many first (for the next page).")]


def _paged(func: Callable) -> Callable:
    for option in reversed(paging):
        func = option(func)
    return func


@main.command(epilog=examples("obsrepo entities", "obsrepo entities --type invoice --limit 10 --format json"))
@click.option("--type", "entity_type", help="Only entities of this type (the part before the slash).")
@_paged
@at_option
@json_or_text
@read_options
@handled
def entities(entity_type: str | None, limit: int, offset: int, at: str | None, output_format: str, tenant: str | None,
             index_path: str | None) -> int:
    """Entities with their snapshots, by entity id.

    An entity merged into another (DUPLICATE_OF) lives on in its survivor and is not listed.
    """
    return _json_out(_repository(index_path, tenant).entities(entity_type, limit=limit, offset=offset, at=at), output_format)


@main.command(epilog=examples('obsrepo find "ACME Corp."', "obsrepo find billing@acme.example --type company --format json"))
@click.argument("identifier")
@click.option("--type", "entity_type", help="Only entities of this type.")
@_paged
@at_option
@json_or_text
@read_options
@handled
def find(identifier: str, entity_type: str | None, limit: int, offset: int, at: str | None, output_format: str,
         tenant: str | None, index_path: str | None) -> int:
    """Entities by key, name, email or other identifying field.

    IDENTIFIER is compared with case, accents, white space and punctuation ignored.
    """
    result = _repository(index_path, tenant).find(identifier, entity_type, limit=limit, offset=offset, at=at)
    return _json_out(result, output_format)


@main.command(epilog=examples("obsrepo observations company/acme", "obsrepo observations company/acme --limit 10 --offset 10"))
@click.argument("entity")
@_paged
@at_option
@json_or_text
@read_options
@handled
def observations(entity: str, limit: int, offset: int, at: str | None, output_format: str, tenant: str | None,
                 index_path: str | None) -> int:
    """The observations about ENTITY, newest first.

    Observations of entities merged into ENTITY are included.
    """
    return _json_out(_repository(index_path, tenant).observations(entity, limit=limit, offset=offset, at=at), output_format)


@main.command(epilog=examples("obsrepo relations company/acme", "obsrepo relations invoice/inv-2041 --relation PART_OF --direction out"))
@click.argument("entity")
@click.option("--relation", "types", multiple=True, help="Only this relation type (repeatable).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True,
              help="out: ENTITY's own relations; in: those pointing at it; both.")
@at_option
@json_or_text
@read_options
@handled
def relations(entity: str, types: tuple[str, ...], direction: str, at: str | None, output_format: str,
              tenant: str | None, index_path: str | None) -> int:
    """The relationships of ENTITY.

    Both directions unless --direction says otherwise; retracted relations do not count.
    """
    result = _repository(index_path, tenant).relationships(entity, direction=direction, types=types, at=at)
    return _json_out(result, output_format)


@main.command(epilog=examples("obsrepo related company/acme", "obsrepo related task/44 --hops 3 --relation DEPENDS_ON --direction out"))
@click.argument("entity")
@click.option("--relation", "types", multiple=True, help="Follow only this relation type (repeatable).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True,
              help="Follow relations outwards, inwards or both.")
@click.option("--hops", type=int, default=1, show_default=True, help="How many relations away to go (1 or more).")
@at_option
@json_or_text
@read_options
@handled
def related(entity: str, types: tuple[str, ...], direction: str, hops: int, at: str | None, output_format: str,
            tenant: str | None, index_path: str | None) -> int:
    """Entities reachable from ENTITY through relationships.

    Each entity is listed once, up to --hops relations away; a merged-away entity is listed
    only as the entity it was merged into.
    """
    result = _repository(index_path, tenant).related(entity, types=types, direction=direction, hops=hops, at=at)
    return _json_out(result, output_format)


@main.command(epilog=examples("obsrepo timeline --entity invoice/inv-2041", "obsrepo timeline --event-type PaymentDue --after 2026-03-01"))
@click.option("--entity", help="Only events of this entity.")
@click.option("--event-type", help="Only events of this type (InvoiceIssued, PaymentDue, an observation type …).")
@click.option("--after", help="From this time on (inclusive): ISO 8601 with a timezone, or a date.")
@click.option("--before", help="Before this time (exclusive).")
@click.option("--limit", type=int, default=1000, show_default=True, help="At most this many (1..1000).")
@click.option("--offset", type=int, default=0, help="Skip this many first (for the next page).")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@at_option
@json_or_text
@read_options
@handled
def timeline(entity: str | None, event_type: str | None, after: str | None, before: str | None, limit: int, offset: int,
             max_classification: str | None, at: str | None, output_format: str, tenant: str | None,
             index_path: str | None) -> int:
    """Events from date fields and observation times, newest first.

    A snapshot field holding an ISO date (invoice_date → InvoiceIssued) is an event, and so is
    each observation at its own timestamp (with its type).
    """
    result = _repository(index_path, tenant).timeline(entity=entity, event_type=event_type, after=after, before=before,
                                                      limit=limit, offset=offset, at=at,
                                                      max_classification=max_classification)
    return _json_out(result, output_format)


@main.command(epilog=examples("obsrepo history company/acme", "obsrepo history company/acme --format json"))
@click.argument("entity")
@json_or_text
@read_options
@handled
def history(entity: str, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """How ENTITY's snapshot changed, commit by commit.

    Every field that changed, with the commit, its author and the observation that changed it.
    """
    return _json_out(_repository(index_path, tenant).history(entity), output_format)


@main.command(epilog=examples("obsrepo diff", "obsrepo diff main HEAD --format markdown", "obsrepo diff HEAD~1 HEAD --format json",
                              'gh pr create --body "$(obsrepo diff --format markdown main HEAD)"'))
@click.argument("base", required=False)
@click.argument("head", required=False)
@click.option("--format", "output_format", type=click.Choice(["text", "markdown", "json"]), default="text",
              show_default=True, help="text: for a terminal; markdown: a pull request body or job summary; json: one object.")
@click.option("--output", "output_file", metavar="PATH", help="Also write the JSON report to PATH.")
@read_options
@handled
def diff(base: str | None, head: str | None, output_format: str, output_file: str | None, tenant: str | None,
         index_path: str | None) -> int:
    """What BASE..HEAD changes in the truth, entity by entity.

    HEAD defaults to HEAD; BASE to the merge base of HEAD with the default branch
    (origin/HEAD's branch, else main, else master). Either may be any commit, a pull request's
    head on another branch included. Reports the observations added, every entity whose
    snapshot changes field by field (old → new, the winning observation, the rule that
    decided), entities created, deleted, restored and merged, observations that change
    nothing, what retractions withdraw, relations, comprehension edits, and what
    `check --base BASE` refuses in the change (then the exit code is 1).
    """
    result = _repository(index_path, tenant).diff(base, head)
    if output_file:
        from ..files import write_replacing

        write_replacing(output_file, (json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8"))
    if output_format == "json":
        _emit_json(result)
    else:
        from .diff_render import render_markdown, render_text

        click.echo(render_markdown(result) if output_format == "markdown" else render_text(result), nl=output_format == "text")
    return errors.EXIT_OK if result["valid"] else errors.EXIT_PROBLEMS


@main.command(epilog=examples("obsrepo show obs-20260402-091000-c4651c5f",
                              "obsrepo show obs-20260402-091000-c4651c5f --at HEAD~3 --format json"))
@click.argument("observation_id", metavar="ID")
@at_option
@json_or_text
@read_options
@handled
def show(observation_id: str, at: str | None, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """One observation as a reviewer reads it.

    Its front matter and body, the commit that added it, what it corrects or retracts, who
    retracts it, and the fields of its entity's snapshot it currently wins.
    """
    result = _repository(index_path, tenant).show(observation_id, at=at)
    if output_format == "json":
        _emit_json(result)
    else:
        from .diff_render import render_show

        click.echo(render_show(result))
    return errors.EXIT_OK




@main.command("mcp", epilog=examples("obsrepo mcp", "obsrepo mcp --tenant org=northwind --branch proposals/northwind",
                                     "obsrepo mcp --transport http --port 8765",
                                     "OBSREPO_MCP_TOKEN=$(openssl rand -hex 32) obsrepo mcp --transport http --host 0.0.0.0"))
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio: the client starts the server and talks over stdin/stdout; http: streamable HTTP at /mcp.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on (http). Anything but loopback needs OBSREPO_MCP_TOKEN.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port (http; 0: any free port).")
@click.option("--branch", default="obsrepo/proposals", show_default=True, metavar="BRANCH",
              help="The proposal branch the write tools commit on (made from HEAD when missing).")
@click.option("--watch", "watch_tree", is_flag=True,
              help="Run `obsrepo watch` in the server: answers include the work tree's valid drafts (\"uncommitted\": true).")
@read_options
@handled
def mcp_command(transport: str, host: str, port: int, branch: str, watch_tree: bool, tenant: str | None,
                index_path: str | None) -> int:
    """Serve the repository to agents over the Model Context Protocol.

    Agents query observations, read snapshots, provenance, relationships, timelines and
    history, check a document, and propose new observations, corrections, retractions,
    relations and merges (the tools are listed in the README). Each write is one new commit on
    the proposal branch (--branch); the work tree and the checked-out branch are never
    touched, and answers come from HEAD until a proposal is merged. The index stays open and
    is brought up to HEAD before each call. With --tenant (or OBSREPO_TENANT) every answer is
    bound to that tenant and every write carries it; no tool argument can change either.
    Over http, a foreign Origin is refused, and OBSREPO_MCP_TOKEN, when set (required off
    loopback), must come with every request as a bearer token.
    """
    from ..mcp import serve

    _preload(*MCP_IMPORTS, *INDEX_IMPORTS, *(WATCH_IMPORTS if watch_tree else ()))
    watcher = None
    if watch_tree:
        from ..watch.loop import Watcher

        watcher = Watcher(_repository(index_path, None), verbose=False)
    serve(_repository(index_path, tenant, branch), transport=transport, host=host, port=port, watcher=watcher)
    return errors.EXIT_OK


from . import steward as _steward  # noqa: E402,F401 - registers the stewardship commands (docs/design.md §14)
from . import write as _write  # noqa: E402,F401 - registers correct, retract, relate, merge

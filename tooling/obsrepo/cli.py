"""The command line: arguments → one library call → render → exit code. No domain logic."""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any, Callable

import click

from . import errors
from .errors import ObsrepoError, UsageError
from .report import printable, text_line

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
            _report_error(exc, as_json)
            code = exc.exit_code
        except click.exceptions.Exit:
            raise
        except KeyboardInterrupt:
            code = 130
        except Exception as exc:  # a bug: still one envelope, never a traceback
            missing = _index_missing(exc)
            if missing is not None:
                _report_error(missing, as_json)
                code = missing.exit_code
            else:
                failure = ObsrepoError(f"internal error: {type(exc).__name__}: {exc}", code=errors.INTERNAL_ERROR)
                if os.environ.get("OBSREPO_DEBUG"):
                    raise
                _report_error(failure, as_json)
                code = errors.EXIT_INTERNAL
        sys.exit(code)

    return wrapper


# What `pip install .` leaves out: the index extra (`check` and `new` never import these).
INDEX_MODULES = frozenset({"duckdb", "duckdb_extension_fts", "pyarrow"})


def _index_missing(exc: Exception) -> ObsrepoError | None:
    """A command of the index run where only the gate is installed: an environment problem."""
    if not isinstance(exc, ModuleNotFoundError) or (exc.name or "").split(".")[0] not in INDEX_MODULES:
        return None
    return errors.IndexFault(
        f"this command needs the index, which is not installed ({exc.name} is missing): "
        "pip install 'obsrepo[index]' (or, from a clone, pip install '.[index]')",
        missing=exc.name,
    )


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
    if issues:
        for issue in issues:
            click.echo(text_line(issue["path"], issue["line"], issue["col"], issue["code"], issue["message"], issue["rule"]),
                       err=True)
    else:
        click.echo(printable(f"error: {exc.code}: {exc.message}"), err=True)


class _Group(click.Group):
    """Usage errors from click become VALIDATION_ERROR with exit 2 (and JSON when asked)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D401
        kwargs["standalone_mode"] = False
        argv = kwargs.get("args") or sys.argv[1:]
        try:
            return super().main(*args, **kwargs)
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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="obsrepo")
def main() -> None:
    """obsrepo: a git repository as a database of observations."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--base", metavar="REV", help="Check immutability against REV (its merge base with HEAD).")
@click.option("--staged", is_flag=True, help="Check git's index against HEAD (for pre-commit).")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "github"]), default="text", show_default=True)
@handled
def check(paths: tuple[str, ...], base: str | None, staged: bool, output_format: str) -> int:
    """Validate documents and repository rules; exit 1 when problems are found."""
    from .check import CheckRequest, run_check
    from .render import render_report

    report = run_check(CheckRequest(os.getcwd(), paths, base, staged))
    render_report(report, output_format)
    return errors.EXIT_OK if report.ok else errors.EXIT_PROBLEMS


@main.command()
@click.option("--json", "json_input", metavar="FILE", help="Read a JSON object (front matter + optional body) from FILE, or - for stdin.")
@click.option("--source", help="Who observed: agent/x, agent:x, plugin:telegram, human/alice …")
@click.option("--event", help="One line: what was observed.")
@click.option("--type", "type_", help="Event kind, e.g. task.updated.")
@click.option("--timestamp", help="ISO 8601 with a timezone (default: now, UTC).")
@click.option("--scope", multiple=True, help="A scope id (repeatable).")
@click.option("--entity", help="The entity the facts are about: <type>/<key>.")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE", help="A fact about --entity (repeatable; VALUE is JSON when it parses, else text).")
@click.option("--priority", type=int)
@click.option("--specificity", type=float)
@click.option("--corrects", multiple=True, metavar="ID")
@click.option("--retracts", multiple=True, metavar="ID")
@click.option("--relation", "relations", multiple=True, metavar="TYPE=TARGET", help="e.g. PART_OF=company/acme (repeatable).")
@click.option("--tenant", metavar="org=…,project=…", help="Ownership: org, project, agent, user.")
@click.option("--classification", type=click.Choice(["public", "internal", "confidential", "restricted"]))
@click.option("--source-ref")
@click.option("--interpretation")
@click.option("--trace-ref")
@click.option("--data", metavar="JSON", help="Any JSON payload.")
@click.option("--body", help="Markdown body; - reads it from stdin.")
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True)
@handled
def new(json_input: str | None, output_format: str, **options: Any) -> int:
    """Write one new observation and print its path."""
    from .new import create, parse_json_object

    if json_input is not None:
        text = sys.stdin.read() if json_input == "-" else open(json_input, encoding="utf-8").read()
        front = parse_json_object(text, "--json")
        body = front.pop("body", "") or ""
        if not isinstance(body, str):
            raise errors.InputError("body must be a string", parameter="body")
    else:
        front, body = _front_from_flags(options)
        if body == "-":
            body = sys.stdin.read()
    created = create(_root(), front, body)
    if output_format == "json":
        _emit_json(created.as_dict())
    else:
        click.echo(created.path)
    return errors.EXIT_OK


def _front_from_flags(options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    from .new import parse_field

    for required in ("source", "event"):
        if not options.get(required):
            raise UsageError(f"--{required} is required (or give --json)", parameter=f"--{required}")
    front: dict[str, Any] = {"source": options["source"], "event": options["event"]}
    simple = {"type_": "type", "timestamp": "timestamp", "entity": "entity", "priority": "priority",
              "specificity": "specificity", "classification": "classification", "source_ref": "source_ref",
              "interpretation": "interpretation", "trace_ref": "trace_ref"}
    for option, key in simple.items():
        if options.get(option) is not None:
            front[key] = options[option]
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
        front["tenant"] = parse_tenant(options["tenant"], "--tenant")
    if options["data"] is not None:
        front["data"] = parse_field(f"data={options['data']}")[1]
    return front, options.get("body") or ""


def parse_tenant(text: str, parameter: str) -> dict[str, str]:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{parameter} is not valid UTF-8 text", parameter=parameter) from None
    binding: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep or key not in ("org", "project", "agent", "user") or not value or key in binding:
            raise UsageError(f"{parameter} expects org=…[,project=…,agent=…,user=…], got '{text}'", parameter=parameter)
        binding[key] = value
    return binding


def _tenant_option(value: str | None) -> dict[str, str]:
    if value is not None:
        return parse_tenant(value, "--tenant")  # an empty binding is refused, never "every tenant"
    text = os.environ.get("OBSREPO_TENANT")
    return parse_tenant(text, "OBSREPO_TENANT") if text else {}


def _repository(index: str | None = None, tenant: str | None = None) -> Any:
    from .api import Repository

    return Repository(os.getcwd(), index=index, tenant=_tenant_option(tenant))


index_option = click.option("--index", "index_path", metavar="PATH", envvar="OBSREPO_INDEX",
                            help="The index file (default .obsrepo/index.duckdb).")
tenant_option = click.option("--tenant", metavar="org=…[,project=…]", help="Bind every read to this tenant (or OBSREPO_TENANT).")


@main.command("index")
@click.option("--rev", default=None, metavar="REV", help="The commit to index (default HEAD).")
@click.option("--full", is_flag=True, help="Rebuild from scratch instead of updating.")
@click.option("--strict", is_flag=True, help="Exit 1 (and keep the previous index) if history holds invalid documents.")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no warnings.")
@index_option
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True)
@handled
def index_command(rev: str | None, full: bool, strict: bool, quiet: bool, index_path: str | None, output_format: str) -> int:
    """Build or update the DuckDB index from git objects at REV."""
    repo = _repository(index_path)
    progress = None if quiet or output_format == "json" or not sys.stderr.isatty() else _progress_bar()
    result = repo.index(rev, full=full, progress=progress, strict=strict)
    if output_format == "json":
        _emit_json(result.as_dict())
    elif not quiet:
        for problem in result.problems:
            click.echo(f"warning: {problem.as_text()}", err=True)
        kind = "built" if result.full else "updated"
        click.echo(f"index {kind} at {result.commit[:12]}: +{result.added} -{result.removed} documents, "
                   f"{result.commits} commit{'s' if result.commits != 1 else ''}", err=True)
    return errors.EXIT_PROBLEMS if strict and result.problems else errors.EXIT_OK


def _progress_bar() -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\rindexing [{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}%")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


@main.command()
@click.option("--scope", "scopes", multiple=True, help="A scope id (repeatable; matches ANY).")
@click.option("--type", "type_", help="Exact event type.")
@click.option("--source", help="Source prefix, taken literally (agent: matches agent:x).")
@click.option("--after", help="From this time on (inclusive): ISO 8601 with a timezone, or a date.")
@click.option("--before", help="Before this time (exclusive).")
@click.option("--entity", help="Observations about this entity.")
@click.option("--org")
@click.option("--project")
@click.option("--agent")
@click.option("--user")
@click.option("--max-classification", type=click.Choice(["public", "internal", "confidential", "restricted"]))
@click.option("--text", help="Full-text search (BM25) over event and body.")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--include-retracted", is_flag=True)
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--order", type=click.Choice(["desc", "asc"]), default="desc", show_default=True)
@click.option("--format", "output_format", type=click.Choice(["short", "full", "json", "jsonl"]), default="short", show_default=True)
@tenant_option
@index_option
@handled
def query(scopes: tuple[str, ...], type_: str | None, source: str | None, after: str | None, before: str | None,
          entity: str | None, org: str | None, project: str | None, agent: str | None, user: str | None,
          max_classification: str | None, text: str | None, at: str | None, include_retracted: bool, limit: int,
          offset: int, order: str, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """Scoped queries over observations (seed 002's output modes)."""
    from .query import QueryRequest, parse_time
    from .render import render_observations

    request = QueryRequest(
        scopes=scopes, type=type_, source=source, entity=entity, text=text, include_retracted=include_retracted,
        after=parse_time(after, "--after") if after else None, before=parse_time(before, "--before") if before else None,
        max_classification=max_classification, limit=limit, offset=offset, order=order,
    )
    request.validate()
    repo = _repository(index_path, tenant)
    page = repo.query(request, at=at, where={k: v for k, v in
                                             (("org", org), ("project", project), ("agent", agent), ("user", user)) if v})
    click.echo(render_observations(page, output_format))
    return errors.EXIT_OK


@main.command()
@click.argument("statement")
@click.option("--format", "output_format", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@index_option
@handled
def sql(statement: str, output_format: str, index_path: str | None) -> int:
    """Run one read-only SQL statement against the index."""
    from .sql import render

    columns, rows = _repository(index_path).sql(statement)
    click.echo(render(columns, rows, output_format))
    return errors.EXIT_OK


@main.command()
@click.argument("entity")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--as-of", metavar="TIME", help="Only observations with timestamp ≤ TIME (valid time).")
@click.option("--explain", is_flag=True, help="Every candidate value per field, and the rule that decided.")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True)
@tenant_option
@index_option
@handled
def snapshot(entity: str, at: str | None, as_of: str | None, explain: bool, output_format: str,
             tenant: str | None, index_path: str | None) -> int:
    """The entity as its observations say it is, with per-field provenance."""
    result = _repository(index_path, tenant).snapshot(entity, at=at, as_of=as_of, explain=explain)
    if output_format == "json":
        _emit_json(result)
    else:
        from .render import render_snapshot

        click.echo(render_snapshot(result))
    return errors.EXIT_OK


@main.command()
@click.argument("entity")
@click.argument("field")
@click.option("--at", metavar="REV")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True)
@tenant_option
@index_option
@handled
def provenance(entity: str, field: str, at: str | None, output_format: str, tenant: str | None,
               index_path: str | None) -> int:
    """Where a snapshot field came from: observation, file, commit, author."""
    result = _repository(index_path, tenant).provenance(entity, field, at=at)
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


json_or_text = click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="text", show_default=True)
paging = [click.option("--limit", type=int, default=50, show_default=True), click.option("--offset", type=int, default=0)]


def _paged(func: Callable) -> Callable:
    for option in reversed(paging):
        func = option(func)
    return func


@main.command()
@click.option("--type", "entity_type")
@_paged
@click.option("--at", metavar="REV")
@json_or_text
@tenant_option
@index_option
@handled
def entities(entity_type: str | None, limit: int, offset: int, at: str | None, output_format: str, tenant: str | None,
             index_path: str | None) -> int:
    """Entities with their snapshots, by entity id (retrieve_entities)."""
    return _json_out(_repository(index_path, tenant).entities(entity_type, limit=limit, offset=offset, at=at), output_format)


@main.command()
@click.argument("identifier")
@click.option("--type", "entity_type")
@_paged
@click.option("--at", metavar="REV")
@json_or_text
@tenant_option
@index_option
@handled
def find(identifier: str, entity_type: str | None, limit: int, offset: int, at: str | None, output_format: str,
         tenant: str | None, index_path: str | None) -> int:
    """Entities by key, name, email or another identifying field (case and punctuation ignored)."""
    result = _repository(index_path, tenant).find(identifier, entity_type, limit=limit, offset=offset, at=at)
    return _json_out(result, output_format)


@main.command()
@click.argument("entity")
@_paged
@click.option("--at", metavar="REV")
@json_or_text
@tenant_option
@index_option
@handled
def observations(entity: str, limit: int, offset: int, at: str | None, output_format: str, tenant: str | None,
                 index_path: str | None) -> int:
    """The observations about an entity (merged entities included), newest first."""
    return _json_out(_repository(index_path, tenant).observations(entity, limit=limit, offset=offset, at=at), output_format)


@main.command()
@click.argument("entity")
@click.option("--relation", "types", multiple=True, help="Only this relation type (repeatable).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True)
@click.option("--at", metavar="REV")
@json_or_text
@tenant_option
@index_option
@handled
def relations(entity: str, types: tuple[str, ...], direction: str, at: str | None, output_format: str,
              tenant: str | None, index_path: str | None) -> int:
    """The entity's relationships (list_relationships)."""
    result = _repository(index_path, tenant).relationships(entity, direction=direction, types=types, at=at)
    return _json_out(result, output_format)


@main.command()
@click.argument("entity")
@click.option("--relation", "types", multiple=True, help="Follow only this relation type (repeatable).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True)
@click.option("--hops", type=int, default=1, show_default=True)
@click.option("--at", metavar="REV")
@json_or_text
@tenant_option
@index_option
@handled
def related(entity: str, types: tuple[str, ...], direction: str, hops: int, at: str | None, output_format: str,
            tenant: str | None, index_path: str | None) -> int:
    """Entities reachable through relationships, each once, up to --hops away."""
    result = _repository(index_path, tenant).related(entity, types=types, direction=direction, hops=hops, at=at)
    return _json_out(result, output_format)


@main.command()
@click.option("--entity")
@click.option("--event-type")
@click.option("--after")
@click.option("--before")
@click.option("--limit", type=int, default=1000, show_default=True)
@click.option("--offset", type=int, default=0)
@click.option("--at", metavar="REV")
@json_or_text
@tenant_option
@index_option
@handled
def timeline(entity: str | None, event_type: str | None, after: str | None, before: str | None, limit: int, offset: int,
             at: str | None, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """Events from date-valued fields and observation times, newest first."""
    result = _repository(index_path, tenant).timeline(entity=entity, event_type=event_type, after=after, before=before,
                                                      limit=limit, offset=offset, at=at)
    return _json_out(result, output_format)


@main.command()
@click.argument("entity")
@json_or_text
@tenant_option
@index_option
@handled
def history(entity: str, output_format: str, tenant: str | None, index_path: str | None) -> int:
    """How the entity's snapshot changed, commit by commit, and by which observation."""
    return _json_out(_repository(index_path, tenant).history(entity), output_format)


def _root() -> str:
    from .gitstore import Git

    git = Git.discover(os.getcwd())
    return git.root if git else os.getcwd()

"""Bounded values: no document and no option value makes `check`, `index`, `query` or `new` fail
with an internal error (exit 5). A value out of bounds is one problem of one document (or one
refused option), never a crash of the command.

The property tests drive the command line in-process (click's CliRunner: the same entry point,
the same exit codes) in one real git repository that grows by a commit per example.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import Repo, observation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obsrepo.cli import main

LATE = "9999-12-31T23:59:59-01:00"
EARLY = "0001-01-01T00:30:00+01:00"


def _error(proc: Any) -> dict[str, Any]:
    return json.loads(proc.stdout)["error"]


# --- documents out of bounds are problems of those documents only --------------------------

@pytest.mark.parametrize("stamp", [LATE, EARLY])
def test_an_out_of_range_timestamp_is_one_problem_and_never_stops_index_or_query(repo: Repo, stamp: str) -> None:
    good = observation("obs-20260213-100000-0001", entity="company/acme", fields={"name": "Acme"})
    bad = observation("obs-20260213-100000-0002", stamp, folder="observations/2026/02/13")
    repo.add(good, bad)
    result = repo.check()
    assert result.returncode == 1, result
    assert result.issues == [("VALIDATION_ERROR", "timestamp-range", bad.path)]
    assert result.data["issues"][0]["line"] == 4  # the timestamp key
    repo.commit("one document out of range")

    index = repo.obsrepo("index", "--format", "json")
    assert index.returncode == 0, index.stderr
    assert [(p["path"], p["rule"]) for p in json.loads(index.stdout)["problems"]] == [(bad.path, "timestamp-range")]
    query = repo.obsrepo("query", "--format", "json")
    assert query.returncode == 0, query.stderr
    assert [o["id"] for o in json.loads(query.stdout)["observations"]] == [good.id]
    assert repo.obsrepo("snapshot", "company/acme").returncode == 0
    assert repo.obsrepo("timeline").returncode == 0


def test_the_extreme_instants_themselves_are_valid_and_print_with_four_digit_years(repo: Repo) -> None:
    first = observation("obs-00010101-000000-0001", "0001-01-01T00:00:00Z")
    last = observation("obs-99991231-235959-0002", "9999-12-31T23:59:59.999999Z")
    repo.add(first, last)
    assert repo.check().returncode == 0
    repo.commit("the first and last instants")
    assert repo.obsrepo("index").returncode == 0
    short = repo.obsrepo("query", "--order", "asc")
    assert short.stdout.splitlines() == [f"[0001-01-01T00:00:00.000Z] [-] observed {first.id}",
                                          f"[9999-12-31T23:59:59.999Z] [-] observed {last.id}"]
    after = repo.obsrepo("query", "--after", "9999-12-31T23:59:59Z", "--format", "json")
    assert [o["id"] for o in json.loads(after.stdout)["observations"]] == [last.id]


# --- option values out of bounds are usage errors ---------------------------------------------

TIME_OPTIONS = [
    ("query", "--after"), ("query", "--before"), ("timeline", "--after"), ("timeline", "--before"),
    ("snapshot", "--as-of"),
]


@pytest.fixture
def indexed(repo: Repo) -> Repo:
    repo.add(observation("obs-20260213-100000-0001", entity="company/acme", fields={"name": "Acme"}))
    repo.commit("one observation")
    assert repo.obsrepo("index").returncode == 0
    return repo


BAD_TIMES = [LATE, EARLY, "0000-01-01", "10000-01-01T00:00:00Z", "2026-02-30", "soon"]


@pytest.mark.parametrize(("command", "option"), TIME_OPTIONS)
def test_time_options_out_of_range_or_unreadable_are_usage_errors(indexed: Repo, monkeypatch: pytest.MonkeyPatch,
                                                                   command: str, option: str) -> None:
    monkeypatch.chdir(indexed.path)
    entity = ["company/acme"] if command == "snapshot" else []
    proc = indexed.obsrepo(command, *entity, option, LATE, "--format", "json")  # once through a real process
    assert proc.returncode == 2, proc.stderr
    assert _error(proc)["code"] == "VALIDATION_ERROR" and _error(proc)["details"]["parameter"] == option
    for value in BAD_TIMES:
        result = Cli(indexed)(command, *entity, option, value, "--format", "json")
        assert result.exit_code == 2, (value, result.output)
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == option, value


def test_an_empty_tenant_variable_is_refused_never_every_tenant(indexed: Repo) -> None:
    bound = Repo(indexed.path, dict(indexed.env, OBSREPO_TENANT=""), None)  # type: ignore[arg-type]
    for args in (["query"], ["snapshot", "company/acme"], ["entities"], ["sql", "SELECT 1 AS one"]):
        proc = bound.obsrepo(*args, "--format", "json")
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert _error(proc) == {**_error(proc), "code": "VALIDATION_ERROR"}
        assert _error(proc)["details"]["parameter"] == "OBSREPO_TENANT"


# --- `new`: JSON the front matter cannot hold, and unreadable input ---------------------------

DEEP = "[" * 40 + "]" * 40


@pytest.mark.parametrize(("args", "parameter", "words"), [
    (["--field", "v=1e999"], "--field", "range of a double"),
    (["--field", "v=-1e999"], "--field", "range of a double"),
    (["--field", "v=[1, 2e400]"], "--field", "range of a double"),
    (["--field", "v=99999999999999999999"], "--field", "64 bits"),
    (["--field", 'v={"a":1,"a":2}'], "--field", "duplicate key 'a'"),
    (["--field", f"v={DEEP}"], "--field", "deeper than 32"),
    (["--field", "v=" + "[" * 30_000 + "]" * 30_000], "--field", "deeper than 32"),
    (["--field", "=x"], "--field", "key=value"),
    (["--data", "1e999"], "--data", "range of a double"),
    (["--data", '{"k": {"a": 1, "a": 1}}'], "--data", "duplicate key"),
    (["--timestamp", LATE], "--timestamp", "0001..9999"),
    (["--timestamp", EARLY], "--timestamp", "0001..9999"),
    (["--timestamp", "2026-02-13T10:00:00"], "--timestamp", "timezone"),
    (["--specificity", "inf"], "--specificity", "finite"),
    (["--json", "missing.json"], "--json", "cannot read"),
])
def test_new_refuses_option_values_by_name_with_exit_2(repo: Repo, args: list[str], parameter: str,
                                                        words: str) -> None:
    base = [] if args[0] == "--json" else ["--source", "agent/x", "--event", "e", "--entity", "company/acme"]
    proc = repo.obsrepo("new", *base, *args, "--format", "json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    error = _error(proc)
    assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == parameter
    assert words in error["message"]
    assert not (repo.path / "observations").exists()


@pytest.mark.parametrize(("payload", "words"), [
    ('{"source": "agent/x", "event": "e", "data": 1e999}', "range of a double"),
    ('{"source": "agent/x", "event": "e", "data": 1, "data": 2}', "duplicate key 'data'"),
    ('{"source": "agent/x", "event": "e", "data": ' + "[" * 5000 + "]" * 5000 + "}", "deeper than 32"),
])
def test_new_refuses_json_content_it_cannot_hold_with_exit_1(repo: Repo, payload: str, words: str) -> None:
    for source in ("-", "input.json"):
        (repo.path / "input.json").write_text(payload, "utf-8")
        proc = repo.obsrepo("new", "--json", source, "--format", "json", input=payload)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        error = _error(proc)
        assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == "--json"
        assert words in error["message"]


@pytest.mark.parametrize("event", ["a\u2028b", "a\u2029b", "a\x85b", "a\x0bb", "a\x0cb", "a\rb", "a\x1eb"])
def test_new_refuses_an_event_with_any_line_break(repo: Repo, event: str) -> None:
    proc = repo.obsrepo("new", "--json", "-", "--format", "json",
                        input=json.dumps({"source": "agent/x", "event": event}))
    assert proc.returncode == 1
    assert [i["rule"] for i in _error(proc)["details"]["issues"]] == ["event-one-line"]


def test_new_refuses_nul_in_a_value_or_a_key(repo: Repo) -> None:
    for front in ({"source": "agent/x", "event": "e", "data": "a\0b"}, {"source": "agent/x", "event": "e",
                                                                         "data": {"k\0": 1}}):
        proc = repo.obsrepo("new", "--json", "-", "--format", "json", input=json.dumps(front))
        assert proc.returncode == 1
        assert [i["rule"] for i in _error(proc)["details"]["issues"]] == ["value-nul"]


# --- properties: no hostile value ever makes a command exit 5 --------------------------------

def _timestamp(year: int, month: int, day: int, hour: int, offset: str) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:30:00{offset}"


years = st.one_of(st.sampled_from([0, 1, 2, 1969, 1970, 2026, 9998, 9999]), st.integers(0, 9999))
offsets = st.one_of(st.sampled_from(["Z", "+00:00", "-01:00", "+01:00", "+23:59", "-23:59", "+24:00", "-99:99"]),
                    st.builds(lambda s, h, m: f"{s}{h:02d}:{m:02d}", st.sampled_from("+-"), st.integers(0, 30),
                              st.integers(0, 59)))
hostile_timestamps = st.builds(_timestamp, years, st.sampled_from([1, 2, 12, 13]),
                               st.sampled_from([1, 28, 29, 31, 32]), st.sampled_from([0, 23, 24]), offsets)
ESCAPES = ["\\0", "\\n", "\\r", "\\L", "\\N", "\\P", "\\v", "\\f", "\\t", "\\e", "\\x1e", "\\x85", "\\u2028",
           "\\U0010FFFF", "\\ud800", "\\\\", '\\"', "\\x00"]
quoted = st.builds(lambda parts: '"' + "".join(parts) + '"',
                   st.lists(st.one_of(st.sampled_from(ESCAPES), st.sampled_from(["a", " ", "é", "'", "#"])),
                            min_size=1, max_size=6))
numbers = st.sampled_from(["1e999", "-1e999", "1e-999", "-0", "0.1", "9223372036854775807", "9223372036854775808",
                           "-9223372036854775809", "1" * 70, ".inf", ".nan", "0x10", "1_000"])
nested = st.integers(1, 40).map(lambda n: "[" * n + "1" + "]" * n) | st.just("[" * 3000 + "]" * 3000)
long_strings = st.integers(1990, 2010).map(lambda n: '"' + "x" * n + '"')
hostile_scalars = st.one_of(hostile_timestamps, quoted, numbers, nested, long_strings, st.just("ok"))
hostile_keys = st.one_of(quoted, st.sampled_from(["x-a", '"x-\\0"', '"x-\\L"', "x-" + "k" * 200]))


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, str]:
    """(front matter lines, kind): each slot holds a hostile scalar or a plain valid one."""
    kind = draw(st.sampled_from(["observation", "comprehension"]))
    def slot() -> str | None:  # None: the valid value
        return draw(st.one_of(st.just(None), hostile_scalars))

    if kind == "observation":
        lines = [f"timestamp: {slot() or '2026-02-13T10:00:00Z'}", f"source: {slot() or 'agent/x'}",
                 f"event: {slot() or 'seen'}", "entity: company/acme", f"fields: {{name: {slot() or 'Acme'}}}",
                 f"data: {slot() or 'null'}"]
    else:
        lines = ["topic: t", "domain: d", f"created: {slot() or '2026-02-13'}", f"updated: {slot() or '2026-02-14'}",
                 "prior: {statement: s, confidence: low, source: s}", "observations: [obs-20260101-000000-0001]",
                 ("posterior: {statement: s, confidence: low, update_reasoning: r, "
                  "observations_used: [obs-20260101-000000-0001]}")]
    extra = draw(st.lists(st.tuples(hostile_keys, hostile_scalars), max_size=2))
    lines += [f"{key}: {value}" for key, value in extra]
    return "\n".join(lines), kind


time_values = st.one_of(hostile_timestamps, st.sampled_from(["2026-02-13", "0000-01-01", "9999-12-31", "", " ",
                                                             "2026-02-13T10:00:00", "1e999", "\u2028", "now"]))
TENANTS = {"": 2, " ": 2, ",": 2, "org=": 2, "x=y": 2, "org=a,org=b": 2, "org=a": 0, "org=a\u2028": None,
           "org=" + "a" * 200: None}  # the exit code, or None: 0 or 2
tenant_values = st.sampled_from(sorted(TENANTS))


class Cli:
    """The command line in-process, in `repo`, with the repository's pinned environment."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        cleared = {k: None for k in os.environ if k.startswith(("GIT_", "OBSREPO_")) and k not in repo.env}
        self.env = {**repo.env, **cleared}
        self.n = 0  # documents written so far
        self.codes: set[int] = set()  # exit codes seen

    def __call__(self, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
        result = CliRunner().invoke(main, list(args), env={**self.env, **(env or {})}, input=input,
                                    catch_exceptions=False)
        assert result.exit_code != 5, f"obsrepo {' '.join(args)[:300]} → exit 5\n{result.output[:2000]}"
        assert "Traceback" not in result.output
        return result


@pytest.fixture
def cli(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.chdir(repo.path)
    repo.add(observation("obs-20260101-000000-0001", entity="company/acme", fields={"name": "Acme"}))
    repo.commit("base")
    return Cli(repo)


HOSTILE = settings(max_examples=25, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@HOSTILE
@given(document=documents(), after=time_values, as_of=time_values, tenant=tenant_values)
def test_no_document_or_option_value_makes_check_index_or_query_exit_5(cli: Cli, document: tuple[str, str],
                                                                       after: str, as_of: str, tenant: str) -> None:
    front, kind = document
    cli.n += 1
    if kind == "observation":
        doc_id = f"obs-20260213-100000-{cli.n:04d}"
        path = f"observations/2026/02/13/{doc_id}.md"
        head = f"spec: observation/v1\nid: {doc_id}\n"
    else:
        doc_id = f"comp-hostile-{cli.n}"
        path = f"comprehension/{doc_id}.md"
        head = f"spec: comprehension/v1\nid: {doc_id}\n"
    cli.repo.write(path, f"---\n{head}{front}\n---\n\nBody.\n")
    assert cli("check", "--format", "json").exit_code in (0, 1)
    cli.repo.commit(f"document {cli.n}")
    assert cli("index", "--format", "json").exit_code == 0
    assert cli("query", "--format", "json").exit_code == 0
    assert cli("query", "--after", after, "--before", as_of, "--format", "jsonl").exit_code in (0, 2)
    assert cli("snapshot", "company/acme", "--as-of", as_of).exit_code in (0, 2)
    assert cli("timeline", "--after", after, "--format", "json").exit_code in (0, 2)
    bound = cli("query", "--format", "json", env={"OBSREPO_TENANT": tenant})
    assert bound.exit_code in ((0, 2) if TENANTS[tenant] is None else (TENANTS[tenant],))


field_values = st.one_of(numbers, nested, hostile_timestamps,
                         st.sampled_from(['{"a":1,"a":2}', '{"a":{"b":1,"b":1}}', "Infinity", "NaN", "[1e999]",
                                          '"\\u0000"', '"\\u2028"', '"\\ud800"', "", "=", "{", '{"a":1}']))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(key=st.sampled_from(["v", "v", "", "_x", "a b", "k" * 200]), value=field_values,
       stamp=st.one_of(st.none(), st.none(), time_values), event=st.sampled_from(["e", "e", "a\u2028b", "a\x0bb", "\0"]),
       as_json=st.booleans())
def test_no_value_makes_new_exit_5(cli: Cli, key: str, value: str, stamp: str | None, event: str,
                                   as_json: bool) -> None:
    cli.n += 1
    event = f"{event} {cli.n}"  # never the same content twice
    if as_json:
        front = '{"source": "agent/x", "event": ' + json.dumps(event) + ', "entity": "company/acme", ' + \
                ('"timestamp": ' + json.dumps(stamp) + ", " if stamp is not None else "") + \
                '"fields": {' + json.dumps(key) + ": " + (value or "null") + "}}"
        result = cli("new", "--json", "-", "--format", "json", input=front)
    else:
        result = cli("new", "--source", "agent/x", "--event", event, *(["--timestamp", stamp] if stamp else []),
                     "--entity", "company/acme", "--field", f"{key}={value}", "--format", "json")
    cli.codes.add(result.exit_code)
    assert result.exit_code in (0, 1, 2)
    if result.exit_code:
        assert json.loads(result.stdout)["error"]["code"] == "VALIDATION_ERROR"
    cli.repo.git("clean", "-fdq", "--", "observations")  # back to the base commit's work tree


def test_the_new_property_reaches_every_outcome(cli: Cli) -> None:
    """The generated values are not all refused at the door: some are written, some are invalid
    documents, some are bad options."""
    test_no_value_makes_new_exit_5(cli)
    assert cli.codes == {0, 1, 2}

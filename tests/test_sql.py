"""`obsrepo sql` (docs/design.md §5, §7): one read-only statement over the public tables.

The public tables and views hold what the documents say at the indexed commit; any write is
refused with VALIDATION_ERROR (exit 2) and so is any file access (COPY … TO, read_csv, ATTACH …),
and none of them changes the index file or touches the file system.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, comprehension, git_env, hermetic, obs_id, observation

A = observation(obs_id(1), scope=["task/1", "company/acme"], entity="company/acme", type="company.updated",
                fields={"name": "Acme", "employees": 12, "tags": ["b2b"], "closed": None},
                tenant={"org": "acme", "project": "web"})
B = observation(obs_id(2), entity="company/globex", fields={"name": "Globex"},
                relations=[{"type": "REFERS_TO", "target": "company/acme"}], tenant={"org": "acme", "project": "web"})
C = observation(obs_id(3), scope=["task/1"], tenant={"org": "globex"})
D = observation(obs_id(4))  # deleted again: not in the public tables
COMP = comprehension("comp-acme", [A.id, B.id], posterior={
    "statement": "Acme is a small b2b company", "confidence": "medium", "update_reasoning": "A says so",
    "observations_used": [A.id]}, version=2)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: Any) -> Iterator[Repo]:
    base = tmp_path_factory.mktemp("sql")
    home = base / "_home"
    home.mkdir()
    repo = Repo(base / "repo", git_env(home, base), None)  # type: ignore[arg-type]
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    repo.add(A, C, D, comprehension("comp-acme", [A.id]))
    repo.commit("first")
    repo.git("rm", "-q", D.path)
    repo.add(B, COMP)
    repo.commit("second")
    (base / "secret.csv").write_text("user,password\nroot,hunter2\n")
    with hermetic(repo.env):
        sql(repo, "SELECT 1")  # no index yet: `sql` builds it from git first
        yield repo


def sql(repo: Repo, statement: str) -> tuple[list[str], list[tuple]]:
    from obsrepo.api import Repository

    return Repository(str(repo.path)).sql(statement)


def index_file(repo: Repo) -> Path:
    return repo.path / ".obsrepo" / "index.duckdb"


def fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the public tables ---------------------------------------------------------------------

def test_meta_holds_the_indexed_commit_and_format(repo: Repo) -> None:
    columns, rows = sql(repo, "SELECT key, value FROM meta ORDER BY key")
    found = dict(rows)
    assert found["commit"] == repo.sha() and len(found["commit"]) == 40
    assert found["format_version"]


def test_observations(repo: Repo) -> None:
    columns, rows = sql(repo, 'SELECT id, entity, type, tenant_org, tenant_project, path, "commit" FROM observations ORDER BY id')
    first, second = repo.sha("HEAD~1"), repo.sha()
    assert rows == [
        (A.id, "company/acme", "company.updated", "acme", "web", A.path, first),
        (B.id, "company/globex", None, "acme", "web", B.path, second),
        (C.id, None, None, "globex", None, C.path, first),
    ]


def test_observation_scopes_is_the_junction_of_seed_002(repo: Repo) -> None:
    columns, rows = sql(repo, "SELECT * FROM observation_scopes ORDER BY ALL")
    assert columns == ["observation_id", "scope_id"]
    assert rows == [(A.id, "company/acme"), (A.id, "task/1"), (C.id, "task/1")]


def test_observation_fields_is_long_form_with_json_values(repo: Repo) -> None:
    columns, rows = sql(repo, "SELECT observation_id, entity, field, value FROM observation_fields ORDER BY ALL")
    assert [(r[0], r[1], r[2], json.loads(r[3])) for r in rows] == [
        (A.id, "company/acme", "closed", None),
        (A.id, "company/acme", "employees", 12),
        (A.id, "company/acme", "name", "Acme"),
        (A.id, "company/acme", "tags", ["b2b"]),
        (B.id, "company/globex", "name", "Globex"),
    ]


def test_relations(repo: Repo) -> None:
    columns, rows = sql(repo, "SELECT observation_id, source_entity, type, target_entity FROM relations")
    assert rows == [(B.id, "company/globex", "REFERS_TO", "company/acme")]


def test_comprehensions_and_their_citations(repo: Repo) -> None:
    _, rows = sql(repo, "SELECT id, version, path FROM comprehensions")
    assert rows == [("comp-acme", 2, "comprehension/comp-acme.md")]
    _, rows = sql(repo, "SELECT comprehension_id, observation_id, used FROM comprehension_observations ORDER BY ALL")
    assert rows == [("comp-acme", A.id, True), ("comp-acme", B.id, False)]


def test_public_tables_follow_the_indexed_commit(repo: Repo) -> None:
    _, rows = sql(repo, f"SELECT count(*) FROM observations WHERE id = '{D.id}'")
    assert rows == [(0,)], "a document deleted in history is not in the public tables"


# --- output formats -------------------------------------------------------------------------

def test_cli_formats(repo: Repo) -> None:
    statement = "SELECT id, scope, priority FROM observations ORDER BY id"
    proc = repo.obsrepo("sql", statement, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        {"id": A.id, "scope": ["task/1", "company/acme"], "priority": 100},
        {"id": B.id, "scope": [], "priority": 100},
        {"id": C.id, "scope": ["task/1"], "priority": 100},
    ]
    proc = repo.obsrepo("sql", statement, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0] == ["id", "scope", "priority"] and [r[0] for r in rows[1:]] == [A.id, B.id, C.id]
    proc = repo.obsrepo("sql", statement)
    assert proc.returncode == 0, proc.stderr
    assert all(i in proc.stdout for i in (A.id, B.id, C.id)) and proc.stdout.splitlines()[0].split()[0] == "id"


# --- read-only and sandboxed ---------------------------------------------------------------

def _writes(repo: Repo) -> list[str]:
    return [
        "INSERT INTO meta VALUES ('x', 'y')",
        "UPDATE meta SET value = '0' WHERE key = 'format_version'",
        "DELETE FROM obs_versions",
        "DROP TABLE meta",
        "DROP VIEW observations",
        "CREATE TABLE t AS SELECT 1 AS x",
        "CREATE VIEW v AS SELECT 1 AS x",
        "ALTER TABLE meta ADD COLUMN z INTEGER",
        "SELECT 1; DELETE FROM meta",
        "CREATE MACRO m(x) AS x + 1",
        "CREATE TEMP TABLE t AS SELECT 1 AS x",
        "SET threads = 1",
    ]


def _file_access(repo: Repo) -> list[str]:
    outside = repo.path.parent
    secret = outside / "secret.csv"
    return [
        f"COPY observations TO '{outside}/out.csv'",
        f"COPY (SELECT * FROM meta) TO '{outside}/out.parquet' (FORMAT parquet)",
        f"EXPORT DATABASE '{outside}/export'",
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM read_csv_auto('{secret}')",
        f"SELECT * FROM '{secret}'",
        f"SELECT content FROM read_text('{secret}')",
        f"SELECT * FROM read_blob('{secret}')",
        f"SELECT * FROM glob('{outside}/*')",
        f"ATTACH '{outside}/other.duckdb' AS other",
        f"ATTACH '{index_file(repo)}.copy' AS again",
        f"SET enable_external_access = true; SELECT * FROM read_csv('{secret}')",
        "SET enable_external_access = true",
        "RESET enable_external_access",
        "SET lock_configuration = false",
        f"LOAD '{outside}/evil.duckdb_extension'",
        f"INSTALL '{outside}/evil.duckdb_extension'",
    ]


def _created(repo: Repo) -> set[str]:
    return {p.name for p in repo.path.parent.iterdir()}


def test_writes_and_file_access_are_refused_and_change_nothing(repo: Repo) -> None:
    from obsrepo.errors import UsageError

    before, files = fingerprint(index_file(repo)), _created(repo)
    for kind, statements in (("write", _writes(repo)), ("file", _file_access(repo))):
        for statement in statements:
            with pytest.raises(UsageError) as caught:
                columns, rows = sql(repo, statement)
                pytest.fail(f"{statement!r} was allowed: {columns} {rows}")
            error = caught.value
            assert error.code == "VALIDATION_ERROR" and error.exit_code == 2, statement
            assert "hunter2" not in error.message
            if kind == "write":
                assert "read-only" in error.message or "read only" in error.message, (statement, error.message)
    assert fingerprint(index_file(repo)) == before
    assert _created(repo) == files, "nothing was written outside the index"
    assert sql(repo, "SELECT count(*) FROM observations")[1] == [(3,)]


@pytest.mark.parametrize("statement,words", [
    ("DELETE FROM meta", "read-only"),
    ("COPY observations TO '{outside}/leak.csv'", ""),
    ("SELECT * FROM read_csv('{outside}/secret.csv')", ""),
    ("ATTACH '{outside}/x.duckdb' AS x", ""),
], ids=["delete", "copy-to", "read_csv", "attach"])
def test_cli_refusals_exit_2_with_the_envelope(repo: Repo, statement: str, words: str) -> None:
    before, files = fingerprint(index_file(repo)), _created(repo)
    statement = statement.format(outside=repo.path.parent)
    proc = repo.obsrepo("sql", statement, "--format", "json")
    assert proc.returncode == 2, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "VALIDATION_ERROR" and words in error["message"]
    assert "hunter2" not in proc.stdout + proc.stderr
    assert fingerprint(index_file(repo)) == before and _created(repo) == files


def test_one_query_at_a_time_and_every_read_only_form_of_query_allowed(repo: Repo) -> None:
    from obsrepo.errors import UsageError

    with pytest.raises(UsageError) as caught:
        sql(repo, "SELECT 1; SELECT 2")
    assert "one statement" in caught.value.message
    for statement in ("DESCRIBE observations", "SHOW TABLES", "SUMMARIZE SELECT 1 AS x", "EXPLAIN SELECT 1",
                      "PRAGMA show_tables", "FROM meta SELECT key", "VALUES (1)", "CALL pragma_version()",
                      "WITH a AS (SELECT 2 AS x) SELECT x FROM a", "SELECT 1 AS a; "):
        columns, rows = sql(repo, statement)
        assert columns and rows, statement


def test_cli_refusal_in_text_mode_goes_to_stderr(repo: Repo) -> None:
    proc = repo.obsrepo("sql", "DROP TABLE meta")
    assert (proc.returncode, proc.stdout) == (2, "") and "VALIDATION_ERROR" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_sql_is_a_validation_error_not_a_crash(repo: Repo) -> None:
    from obsrepo.errors import UsageError

    for statement in ("SELEC 1", "SELECT * FROM no_such_table", "", "SELECT 1/0::INTEGER"):
        try:
            sql(repo, statement)
        except UsageError as error:
            assert error.code == "VALIDATION_ERROR"


def test_a_tenant_bound_caller_cannot_read_other_tenants_through_sql(repo: Repo) -> None:
    bound = Repo(repo.path, dict(repo.env, OBSREPO_TENANT="org=acme"), None)  # type: ignore[arg-type]
    proc = bound.obsrepo("sql", "SELECT id, tenant_org FROM observations", "--format", "json")
    assert C.id not in proc.stdout and "globex" not in proc.stdout
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["code"] == "VALIDATION_ERROR"


# --- only queries, and within limits -------------------------------------------------------

def _temporary_objects(repo: Repo) -> list[tuple]:
    return sql(repo, "SELECT table_name FROM duckdb_tables() WHERE temporary")[1]


@pytest.mark.parametrize("statement", [
    "EXPLAIN ANALYZE CREATE TEMP TABLE t AS SELECT 1 AS x",
    "/* why not */ explain -- twice\n analyze CREATE TEMP TABLE t AS SELECT 1 AS x",
    "EXPLAIN ANALYZE INSERT INTO meta VALUES ('x', 'y')",
    "EXPLAIN CREATE TEMP TABLE t AS SELECT 1 AS x",
    "CALL checkpoint()",
    "CALL force_checkpoint()",
    "SELECT * FROM checkpoint()",
    "WITH c AS MATERIALIZED (SELECT * FROM \"checkpoint\"()) SELECT * FROM c, meta",
    "EXPLAIN ANALYZE CALL checkpoint()",
    "SELECT * FROM query('SELECT * FROM checkpoint()')",
    "CALL enable_logging()",
    "CALL truncate_duckdb_logs()",
], ids=["explain-analyze-temp-table", "comments", "explain-analyze-insert", "explain-temp-table", "call-checkpoint",
        "call-force-checkpoint", "select-checkpoint", "quoted-in-cte", "explain-analyze-call", "through-query",
        "logging", "truncate-logs"])
def test_statements_with_side_effects_are_refused_even_inside_explain(repo: Repo, statement: str) -> None:
    from obsrepo.errors import UsageError

    before = fingerprint(index_file(repo))
    with pytest.raises(UsageError) as caught:
        sql(repo, statement)
    assert caught.value.code == "VALIDATION_ERROR" and caught.value.exit_code == 2
    assert "read-only" in caught.value.message or "only reads the index" in caught.value.message, caught.value.message
    assert fingerprint(index_file(repo)) == before


def test_explain_analyze_of_a_query_runs_and_creates_nothing(repo: Repo) -> None:
    columns, rows = sql(repo, "EXPLAIN ANALYZE SELECT count(*) FROM observations")
    assert columns == ["explain_key", "explain_value"] and rows[0][0] == "analyzed_plan"
    assert sql(repo, "CALL pragma_table_info('observations')")[1][0][1] == "id"
    assert sql(repo, "SELECT * FROM query('SELECT 42 AS x')")[1] == [(42,)]
    assert _temporary_objects(repo) == []


def test_a_long_statement_is_stopped_after_the_timeout(repo: Repo) -> None:
    import time

    from obsrepo.api import Repository
    from obsrepo.errors import QueryLimit

    started = time.monotonic()
    with pytest.raises(QueryLimit) as caught:
        Repository(str(repo.path)).sql("SELECT count(*) FROM range(1000000000000) a", timeout=0.3)
    assert time.monotonic() - started < 20
    assert (caught.value.code, caught.value.exit_code) == ("QUERY_TIMEOUT", 4)
    assert "0.3 seconds" in caught.value.message and "--timeout" in caught.value.message
    proc = repo.obsrepo("sql", "SELECT count(*) FROM range(1000000000000) a", "--timeout", "0.3", "--format", "json")
    assert proc.returncode == 4 and json.loads(proc.stdout)["error"]["code"] == "QUERY_TIMEOUT", proc
    assert sql(repo, "SELECT 1 AS x") == (["x"], [(1,)])  # the next statement is not interrupted


def test_memory_is_bounded(repo: Repo) -> None:
    import duckdb
    from obsrepo.api import Repository
    from obsrepo.errors import QueryLimit

    def as_duckdb_shows(amount: str) -> str:
        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{amount}'")
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    api = Repository(str(repo.path))
    assert api.sql("SELECT current_setting('memory_limit') AS m")[1] == [(as_duckdb_shows("1GB"),)]  # the default
    assert api.sql("SELECT current_setting('memory_limit') AS m", memory_limit="512mb")[1] == [(as_duckdb_shows("512MB"),)]
    with pytest.raises(QueryLimit) as caught:
        api.sql("SELECT string_agg(range::VARCHAR, ',') FROM range(20000000)", memory_limit="10MB")
    assert (caught.value.code, caught.value.exit_code) == ("QUERY_MEMORY_LIMIT", 4)
    proc = repo.obsrepo("sql", "SELECT string_agg(range::VARCHAR, ',') FROM range(20000000)", "--memory-limit", "10MB")
    assert proc.returncode == 4 and proc.stderr.startswith("error: QUERY_MEMORY_LIMIT: "), proc


@pytest.mark.parametrize("option,value", [("--timeout", "0"), ("--timeout", "-1"), ("--timeout", "nan"),
                                          ("--memory-limit", "lots"), ("--memory-limit", "0GB"),
                                          ("--memory-limit", "1GB'; SET x='y")])
def test_bad_limits_are_refused_naming_the_option(repo: Repo, option: str, value: str) -> None:
    proc = repo.obsrepo("sql", "SELECT 1", option, value, "--format", "json")
    assert proc.returncode == 2, proc
    assert json.loads(proc.stdout)["error"]["details"]["parameter"] == option


def test_duckdbs_hints_reach_the_user(repo: Repo) -> None:
    proc = repo.obsrepo("sql", "SELECT * FROM observatons")
    assert proc.returncode == 2 and 'Did you mean "observations"' in proc.stderr, proc
    assert "LINE 1" not in proc.stderr and proc.stderr.count("\n") == 1

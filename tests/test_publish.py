"""`obsrepo publish` (docs/design.md §16): the index as Apache Iceberg tables in a SQL catalog on
SQLite, read back by three independent readers (pyiceberg, DuckDB's iceberg extension, Polars'
scan_iceberg) and compared with obsrepo's own `query --at` and `snapshot --at` at each commit."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, obs_id, observation

pyiceberg = pytest.importorskip("pyiceberg")

ACME = "company/acme"
TABLES = ("observations", "observation_removals", "observation_fields", "relations", "entity_snapshots",
          "identity_candidates", "contested_fields", "commits")


def catalog_env(repo: Repo, folder: Path, name: str = "local") -> None:
    """A SQL catalog on SQLite in `folder`, configured the pyiceberg way (environment variables)."""
    folder.mkdir(exist_ok=True)
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    repo.env.update({f"{prefix}TYPE": "sql", f"{prefix}URI": f"sqlite:///{folder}/catalog.db",
                     f"{prefix}WAREHOUSE": f"file://{folder}"})


def publish(repo: Repo, *args: str) -> dict[str, Any]:
    proc = repo.obsrepo("publish", "--catalog", "local", "--format", "json", *args)
    assert proc.returncode == 0, proc
    return json.loads(proc.stdout)


def open_catalog(repo: Repo) -> Any:
    from pyiceberg.catalog import load_catalog

    props = {key.split("__")[-1].lower(): value for key, value in repo.env.items() if key.startswith("PYICEBERG_CATALOG__LOCAL__")}
    return load_catalog("local", **props)


def build_history(repo: Repo, tmp_path: Path) -> list[str]:
    """Three commits: acme and a relation; a correction of acme's name and a second entity; the
    retraction of the first observation and a policy. Published after each; the commits' shas."""
    catalog_env(repo, tmp_path / "catalog")
    first = observation(obs_id(1), entity=ACME, fields={"name": "Acme", "size": 3},
                        relations=[{"type": "PART_OF", "target": "company/group"}])
    repo.add(first)
    shas = [repo.commit("one")]
    assert publish(repo)["last_seq"] == 1
    repo.add(observation(obs_id(2), entity=ACME, fields={"name": "Acme Corp"}, corrects=[first.id]),
             observation(obs_id(3), entity="company/globex", fields={"name": "Globex"}))
    shas.append(repo.commit("two"))
    assert publish(repo)["first_seq"] == 2
    repo.add(observation(obs_id(4), retracts=[first.id]))
    # a policy changes with it: every entity's snapshot is reduced again at this commit
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields:\n  name: {policy: last_write}\n")
    shas.append(repo.commit("three"))
    answer = publish(repo)
    assert (answer["first_seq"], answer["last_seq"], answer["rows"]["observation_removals"]) == (3, 3, 1)
    return shas


@pytest.fixture(scope="module")
def history(make_module_repo: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, list[str]]:
    """build_history once for the tests that only read the catalog (and one that publishes again
    and proves it changes nothing): the repository and its three commits' shas."""
    repo = make_module_repo()
    return repo, build_history(repo, tmp_path_factory.mktemp("published"))


@pytest.fixture(scope="module")
def answer(history: tuple[Repo, list[str]]) -> Callable[..., Any]:
    """answer(query_ids, sha) or answer(snapshot_at, entity, sha) on the shared history, each asked
    of obsrepo once for the three readers to be compared with."""
    repo, _ = history
    return functools.cache(lambda ask, *args: ask(repo, *args))


# -- the three readers: every table of the namespace as a list of row dicts -------------------
def read_pyiceberg(repo: Repo) -> dict[str, list[dict]]:
    catalog = open_catalog(repo)
    return {name: catalog.load_table(("obsrepo", name)).scan().to_arrow().to_pylist() for name in TABLES}


def read_duckdb(repo: Repo, con: Any = None) -> dict[str, list[dict]]:
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    con = con or duckdb.connect()
    for package, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):  # avro first
        folder = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}"
        con.execute(f"LOAD '{(folder / f'{name}.duckdb_extension').as_posix()}'")
    catalog = open_catalog(repo)
    tables = {}
    for name in TABLES:
        location = catalog.load_table(("obsrepo", name)).metadata_location.removeprefix("file://")
        cursor = con.execute(f"SELECT * FROM iceberg_scan('{location}')")
        columns = [d[0] for d in cursor.description]
        tables[name] = [dict(zip(columns, row)) for row in cursor.fetchall()]
    return tables


def read_polars(repo: Repo) -> dict[str, list[dict]]:
    import polars as pl

    os.environ["POLARS_ICEBERG_PLANNER"] = "pyiceberg"  # what Polars falls back to without its planner plugin, unwarned
    catalog = open_catalog(repo)
    return {name: pl.scan_iceberg(catalog.load_table(("obsrepo", name))).collect().to_dicts() for name in TABLES}


def as_of(tables: dict[str, list[dict]], seq: int) -> tuple[set[str], dict[str, dict]]:
    """The §16 "as of seq" reading: the visible ids, and each entity's latest snapshot row."""
    head = max(row["seq"] for row in tables["commits"])
    assert seq <= head
    # a removal withdraws the addition it follows: an observation a rebased history holds again
    # is added again, after its removal
    removals = [(row["observation_id"], row["removed_seq"]) for row in tables["observation_removals"] if row["removed_seq"] <= seq]
    ids = {row["id"] for row in tables["observations"] if row["added_seq"] <= seq
           and not any(i == row["id"] and row["added_seq"] <= removed for i, removed in removals)}
    latest: dict[str, dict] = {}
    for row in sorted(tables["entity_snapshots"], key=lambda r: r["from_seq"]):
        if row["from_seq"] <= seq:
            latest[row["entity_id"]] = row
    return ids, latest


def query_ids(repo: Repo, sha: str) -> set[str]:
    proc = repo.obsrepo("query", "--at", sha, "--limit", "1000", "--format", "json")
    assert proc.returncode == 0, proc
    return {record["id"] for record in json.loads(proc.stdout)["observations"]}


def snapshot_at(repo: Repo, entity: str, sha: str) -> dict:
    proc = repo.obsrepo("snapshot", entity, "--at", sha)
    assert proc.returncode == 0, proc
    return json.loads(proc.stdout)


@pytest.mark.parametrize("reader", [read_pyiceberg, read_duckdb, read_polars], ids=["pyiceberg", "duckdb", "polars"])
def test_three_readers_see_what_query_and_snapshot_answer_at_each_commit(history: tuple[Repo, list[str]],
                                                                         answer: Callable[..., Any], reader: Any) -> None:
    repo, shas = history
    tables = reader(repo)
    assert sorted((row["seq"], row["sha"]) for row in tables["commits"]) == list(enumerate(shas, start=1))
    for seq, sha in enumerate(shas, start=1):
        ids, snapshots = as_of(tables, seq)
        assert ids == answer(query_ids, sha), f"seq {seq}"
        for entity in (ACME, "company/globex"):
            if entity not in snapshots:
                assert seq == 1 and entity == "company/globex"
                continue
            expected = answer(snapshot_at, entity, sha)
            row = snapshots[entity]
            assert (json.loads(row["snapshot"]), json.loads(row["provenance"])) == (expected["snapshot"], expected["provenance"])
    assert {row["observation_id"] for row in tables["relations"]} == {obs_id(1)}
    assert {(row["observation_id"], row["field"], row["value"]) for row in tables["observation_fields"]
            if row["observation_id"] == obs_id(2)} == {
        (obs_id(2), "name", '"Acme Corp"')}
    assert [(r["observation_id"], r["removed_seq"], r["reason"]) for r in tables["observation_removals"]] == [
        (obs_id(1), 3, "retracted")]


def test_each_publish_is_one_snapshot_per_table_with_the_commit_and_a_tag(history: tuple[Repo, list[str]]) -> None:
    repo, shas = history
    catalog = open_catalog(repo)
    for name in TABLES:
        table = catalog.load_table(("obsrepo", name))
        assert [s.summary["obsrepo.git-commit"] for s in table.snapshots()] == shas, name  # empty appends included
        for sha in shas:
            tagged = table.metadata.refs[f"git-{sha}"].snapshot_id
            assert table.snapshot_by_id(tagged).summary["obsrepo.git-commit"] == sha


def test_the_same_commit_twice_and_an_older_one_change_nothing(history: tuple[Repo, list[str]]) -> None:
    repo, shas = history
    before = {name: len(open_catalog(repo).load_table(("obsrepo", name)).snapshots()) for name in TABLES}
    assert publish(repo)["status"] == "current"
    older = repo.obsrepo("publish", "--catalog", "local", "--rev", shas[0])
    assert older.returncode == 0 and "nothing changed" in older.stdout, older
    after = {name: len(open_catalog(repo).load_table(("obsrepo", name)).snapshots()) for name in TABLES}
    assert after == before
    assert len(read_pyiceberg(repo)["observations"]) == 4  # each observation once


def test_a_rewritten_history_is_refused_unless_rebase_published(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo()
    shas = build_history(repo, tmp_path)
    repo.git("reset", "-q", "--hard", shas[1])
    repo.add(observation(obs_id(5), entity="company/initech", fields={"name": "Initech"}))
    new_head = repo.commit("three, again")
    refused = repo.obsrepo("publish", "--catalog", "local", "--format", "json")
    assert refused.returncode == 1, refused
    error = json.loads(refused.stdout)["error"]
    assert error["details"]["commit"] == shas[2] and "--rebase-published" in error["message"]
    answer = publish(repo, "--rebase-published")
    assert (answer["first_seq"], answer["rebased"]) == (4, shas[2])  # sequence numbers are never reused
    tables = read_pyiceberg(repo)
    ids, _ = as_of(tables, 4)
    assert ids == query_ids(repo, new_head)
    assert ("rebased", obs_id(4)) in {(r["reason"], r["observation_id"]) for r in tables["observation_removals"]}
    assert (obs_id(1), 4) in {(r["id"], r["added_seq"]) for r in tables["observations"]}  # retracted only on the old chain


def test_two_repositories_share_a_namespace_told_apart_by_repo(make_repo: Any, tmp_path: Path) -> None:
    first, second = make_repo("first"), make_repo("second")
    for n, repo in enumerate((first, second), start=1):
        catalog_env(repo, tmp_path / "catalog")
        repo.add(observation(obs_id(n), entity=f"company/c{n}", fields={"name": f"C{n}"}))
        repo.commit("one")
    second.git("remote", "add", "origin", "https://user:secret@example.com/org/second.git")
    # a local path names no repository another machine shares, and would publish this machine's folders
    first.git("remote", "add", "origin", str(second.path))
    assert publish(first)["repo"] == first.sha()  # a local-path origin, as no origin: the root commit
    assert publish(second)["repo"] == "https://example.com/org/second.git"  # the origin without credentials
    rows = read_pyiceberg(first)["observations"]
    assert str(tmp_path) not in json.dumps(read_pyiceberg(first), default=str)
    assert {(row["repo"], row["id"]) for row in rows} == {(first.sha(), obs_id(1)), ("https://example.com/org/second.git", obs_id(2))}
    assert publish(first)["status"] == "current"


def test_the_ceiling_and_the_binding_decide_what_leaves(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo()
    catalog_env(repo, tmp_path / "catalog")
    repo.add(observation(obs_id(1), tenant={"org": "a"}), observation(obs_id(2), tenant={"org": "b"}),
             observation(obs_id(3), tenant={"org": "a"}, classification="confidential"))
    repo.commit("one")
    assert publish(repo, "--tenant", "org=a")["rows"]["observations"] == 1  # org b's and the confidential one stay
    assert {row["id"] for row in read_pyiceberg(repo)["observations"]} == {obs_id(1)}
    other = repo.obsrepo("publish", "--catalog", "local", "--tenant", "org=b")
    assert other.returncode == 4 and "PUBLISH_ERROR" in other.stderr and "namespace" in other.stderr, other


def test_an_unknown_catalog_is_an_environment_error(repo: Repo) -> None:
    repo.add(observation(obs_id(1)))
    repo.commit("one")
    proc = repo.obsrepo("publish", "--catalog", "nowhere", "--format", "json")
    assert proc.returncode == 4, proc
    error = json.loads(proc.stdout)["error"]
    assert (error["code"], error["details"]["parameter"]) == ("PUBLISH_ERROR", "--catalog")
    assert "PYICEBERG_CATALOG__NOWHERE__" in error["message"]


# -- the readers' SQL of docs/guide/publication.md, run by DuckDB on the published tables ------------
DOCS = Path(__file__).resolve().parent.parent / "docs" / "guide" / "publication.md"


def duckdb_queries() -> list[str]:
    """The ```sql blocks of the page's DuckDB section that are not marked as not run."""
    section = DOCS.read_text("utf-8").split("\n## DuckDB\n", 1)[1].split("\n## ", 1)[0]
    lines, queries, block = section.splitlines(), [], None
    for number, line in enumerate(lines):
        if line == "```sql" and not lines[number - 1].startswith("<!-- examples: not run"):
            block = []
        elif line == "```" and block is not None:
            queries.append("\n".join(block))
            block = None
        elif block is not None:
            block.append(line)
    return queries


def test_the_duckdb_sql_of_the_docs_answers_as_query_and_snapshot_do(history: tuple[Repo, list[str]],
                                                                     answer: Callable[..., Any]) -> None:
    import duckdb

    repo, shas = history
    as_of_commit, entity_snapshot, changes, changed_entities = duckdb_queries()
    con = duckdb.connect()
    read_duckdb(repo, con)  # loads the extensions
    con.execute("CREATE SCHEMA obsrepo")
    catalog = open_catalog(repo)
    for name in TABLES:
        location = catalog.load_table(("obsrepo", name)).metadata_location.removeprefix("file://")
        con.execute(f"CREATE VIEW obsrepo.{name} AS SELECT * FROM iceberg_scan('{location}')")
    con.execute("SET VARIABLE repo = (SELECT any_value(repo) FROM obsrepo.commits)")  # the only repository
    con.execute(f"SET VARIABLE entity = '{ACME}'")
    for sha in shas:
        con.execute(f"SET VARIABLE sha = '{sha}'")
        assert {row[1] for row in con.execute(as_of_commit).fetchall()} == answer(query_ids, sha)  # column 2 is id
        snapshot = con.execute(entity_snapshot).fetchone()
        expected = answer(snapshot_at, ACME, sha)
        assert (json.loads(snapshot[2]), json.loads(snapshot[3])) == (expected["snapshot"], expected["provenance"])
    con.execute(f"SET VARIABLE from_sha = '{shas[0]}'")
    con.execute(f"SET VARIABLE to_sha = '{shas[2]}'")
    before, after = answer(query_ids, shas[0]), answer(query_ids, shas[2])
    rows = con.execute(changes).fetchall()
    assert {row[1] for row in rows if row[0] == "added"} == after - before
    assert {(row[0], row[1]) for row in rows if row[0] != "added"} == {("retracted", id) for id in before - after}
    assert {row[0] for row in con.execute(changed_entities).fetchall()} == {ACME, "company/globex"}


def test_a_published_table_names_what_it_shares_with_the_index_as_the_index_does(history: tuple[Repo, list[str]]) -> None:
    """One vocabulary: every column of a published table that mirrors an index table is the
    index's column of that name, unless the mapping declares it publication's own."""
    from obsrepo.ops.publication import MIRRORS

    repo, _ = history
    proc = repo.obsrepo("sql", "SELECT table_name, column_name FROM information_schema.columns", "--format", "json")
    assert proc.returncode == 0, proc
    index: dict[str, set[str]] = {}
    for row in json.loads(proc.stdout):
        index.setdefault(row["table_name"], set()).add(row["column_name"])
    catalog = open_catalog(repo)
    for name, (mirrored, own) in MIRRORS.items():
        published = {field.name for field in catalog.load_table(("obsrepo", name)).schema().fields}
        assert set(own) <= published, name
        assert published - set(own) <= index[mirrored], f"{name}: {sorted(published - set(own) - index[mirrored])}"

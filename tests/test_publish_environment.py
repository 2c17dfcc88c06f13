"""`obsrepo publish` fails like an environment (docs/design.md §8b): a bad namespace, a
warehouse or catalog that cannot be written, a table of another shape are `PUBLISH_ERROR`
(exit 4) naming the catalog, the table and the reason in one line, and what was published
before is still read by pyiceberg and DuckDB. A missing warehouse folder is created; the
publication page's quick start runs as written."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, obs_id, observation
from test_publish import as_of, open_catalog, publish, query_ids, read_duckdb, read_pyiceberg

pytest.importorskip("pyiceberg")

ROOT = os.geteuid() == 0  # chmod does not stop root: another way makes a path unwritable then
PREFIX = "PYICEBERG_CATALOG__LOCAL__"


def local_catalog(repo: Repo, database: Path, warehouse: Path) -> None:
    repo.env.update({f"{PREFIX}TYPE": "sql", f"{PREFIX}URI": f"sqlite:///{database}", f"{PREFIX}WAREHOUSE": f"file://{warehouse}"})


def refused(repo: Repo, *args: str) -> dict[str, Any]:
    """A publish that fails as an environment does: exit 4, one clean line; its error."""
    proc = repo.obsrepo("publish", "--catalog", "local", "--format", "json", *args)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "PUBLISH_ERROR"
    assert "\n" not in error["message"] and "\\n" not in error["message"], error["message"]
    assert not re.search(r"sqlalche\.me|\[SQL:|Errno|Detail:|OperationalError", error["message"]), error["message"]
    return error


@pytest.fixture
def published_once(make_repo: Any, tmp_path: Path) -> tuple[Repo, Path, Path, str]:
    """A repository published at its first commit (no removals yet, so `observation_removals`
    has no data folder) and a second commit waiting: the repository, the catalog's database,
    the warehouse, the first commit."""
    repo = make_repo()
    (tmp_path / "catalog").mkdir()
    database, warehouse = tmp_path / "catalog" / "catalog.db", tmp_path / "lake"
    local_catalog(repo, database, warehouse)
    repo.add(observation(obs_id(1), entity="company/acme", fields={"name": "Acme"}))
    first = repo.commit("one")
    publish(repo)
    repo.add(observation(obs_id(2), retracts=[obs_id(1)]), observation(obs_id(3), entity="company/acme", fields={"name": "Acme 2"}))
    repo.commit("two")
    return repo, database, warehouse, first


def still_the_first(repo: Repo, first: str) -> None:
    for reader in (read_pyiceberg, read_duckdb):
        tables = reader(repo)
        assert [row["sha"] for row in tables["commits"]] == [first], reader
        assert as_of(tables, 1)[0] == {obs_id(1)}, reader


def test_an_unwritable_warehouse_is_exit_4_and_the_first_snapshot_stays_readable(published_once: Any) -> None:
    repo, _, warehouse, first = published_once
    if ROOT:  # a file where the table's data folder must be
        blocker = warehouse / "obsrepo" / "observation_removals" / "data"
        blocker.write_text("not a folder")
    else:
        folders = [path for path in (warehouse, *warehouse.rglob("*")) if path.is_dir()]
        for path in folders:
            path.chmod(0o555)
    error = refused(repo)
    assert (error["details"]["catalog"], error["details"]["namespace"]) == ("local", "obsrepo")
    assert error["details"]["table"] in ("observations", "observation_removals")
    assert "catalog 'local'" in error["message"] and f"obsrepo.{error['details']['table']}" in error["message"]
    assert str(warehouse) in error["message"] or "permission denied" in error["message"]
    still_the_first(repo, first)
    if ROOT:
        blocker.unlink()
    else:
        for path in folders:
            path.chmod(0o755)
    assert publish(repo)["last_seq"] == 2  # the next publish completes it
    assert as_of(read_pyiceberg(repo), 2)[0] == query_ids(repo, repo.sha())


def test_a_read_only_catalog_is_exit_4_and_the_first_snapshot_stays_readable(published_once: Any) -> None:
    repo, database, _, first = published_once
    if ROOT:  # the catalog's database opened read-only, as a reader's replica would be
        repo.env[f"{PREFIX}URI"] = f"sqlite:///file:{database}?mode=ro&uri=true"
    else:
        database.chmod(0o444)
        database.parent.chmod(0o555)
    error = refused(repo)
    assert error["details"]["table"] == "observations" and "read-only" in error["message"], error
    assert error["message"].startswith("catalog 'local' could not write table obsrepo.observations: ")
    still_the_first(repo, first)
    if not ROOT:
        database.parent.chmod(0o755)
        database.chmod(0o644)


def test_a_bad_namespace_is_exit_4_naming_it(published_once: Any) -> None:
    repo = published_once[0]
    for namespace in ("", "..", "a..b", " obsrepo", "ob\tsrepo"):
        error = refused(repo, "--namespace", namespace)
        assert error["details"]["parameter"] == "--namespace" and repr(namespace) in error["message"], error


def test_a_table_of_another_shape_is_exit_4_and_left_as_it_was(published_once: Any) -> None:
    import pyarrow as pa

    repo = published_once[0]
    catalog = open_catalog(repo)
    catalog.create_namespace("theirs")
    theirs = catalog.create_table(("theirs", "commits"), schema=pa.schema([("name", pa.string())]))
    error = refused(repo, "--namespace", "theirs")
    assert (error["details"]["table"], error["details"]["reason"]) == ("commits", "not obsrepo's")
    assert "theirs.commits" in error["message"] and "another namespace" in error["message"]
    assert theirs.refresh().current_snapshot() is None  # nothing appended to it
    # a table obsrepo wrote, in another shape (a column renamed since): refused before anything is written
    fields = catalog.load_table(("obsrepo", "observation_fields"))
    with fields.update_schema() as update:
        update.rename_column("value", "value_json")
    before = {name: len(catalog.load_table(("obsrepo", name)).snapshots()) for name in ("observations", "commits")}
    error = refused(repo)
    assert (error["details"]["table"], error["details"]["reason"]) == ("observation_fields", "another shape")
    assert "value_json" in error["message"] and "value" in error["details"]["missing"]
    assert {name: len(catalog.load_table(("obsrepo", name)).snapshots()) for name in before} == before


def test_a_missing_warehouse_folder_is_created_and_a_missing_parent_named(repo: Repo, tmp_path: Path) -> None:
    repo.add(observation(obs_id(1), entity="company/acme", fields={"name": "Acme"}))
    repo.add(observation(obs_id(2), classification="confidential"))
    head = repo.commit("one")
    local_catalog(repo, tmp_path / "nowhere" / "deep" / "catalog.db", tmp_path / "nowhere" / "deep")
    error = refused(repo)
    assert f"mkdir -p {tmp_path / 'nowhere' / 'deep'}" in error["message"], error
    lake = tmp_path / "lake"
    local_catalog(repo, lake / "catalog.db", lake)
    proc = repo.obsrepo("publish", "--catalog", "local")
    assert proc.returncode == 0 and lake.is_dir(), proc
    # the commit published is HEAD's, by its short sha; the ceiling's count is said
    assert f"up to {head[:12]}" in proc.stdout and "1 observation above internal held back" in proc.stdout, proc.stdout


def test_the_quick_start_of_the_publication_page_runs_as_written(repo: Repo) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "publication.md").read_text("utf-8")
    block = re.search(r"<!-- quick start -->\n(?:<!--[^\n]*-->\n)?```sh\n(.*?)```", page, re.S)
    assert block, "the quick start is gone"
    script = "\n".join(line for line in block.group(1).splitlines() if not line.startswith("pip "))  # installed here
    repo.add(observation(obs_id(1), entity="company/acme", fields={"name": "Acme"}))
    head = repo.commit("one")
    env = {key: value for key, value in repo.env.items() if not key.startswith("PYICEBERG_")}
    bin_dir = repo.path.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "obsrepo").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m obsrepo "$@"\n')
    (bin_dir / "obsrepo").chmod(stat.S_IRWXU)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=repo.path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc
    assert head[:12] in proc.stdout and (repo.path / "lake" / "catalog.db").is_file(), proc.stdout

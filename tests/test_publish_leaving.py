"""`obsrepo publish` (docs/design.md §16) when rows must leave the published tables: a publish
killed (`kill -9`) after its first data table and before `commits`, completed by the next
publish without a duplicate, and one that loses the catalog's race to another; retention and a
reclassification above the ceiling, whose observations are erased from every seq once the head
withholds them. Read back by the three readers of tests/test_publish.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, obs_id, observation
from test_publish import ACME, as_of, catalog_env, publish, read_duckdb, read_polars, read_pyiceberg

pytest.importorskip("pyiceberg")

READERS = {"pyiceberg": read_pyiceberg, "duckdb": read_duckdb, "polars": read_polars}
# what identifies one published row: a second such row is a duplicate
ROW_KEYS = {"observations": ("id", "added_seq"), "observation_removals": ("observation_id", "removed_seq"),
            "observation_fields": ("observation_id", "field", "added_seq"), "relations": ("observation_id", "type", "target_entity"),
            "entity_snapshots": ("entity_id", "from_seq"), "commits": ("seq",)}


def duplicates(tables: dict[str, list[dict]]) -> dict[str, list]:
    found = {}
    for name, key in ROW_KEYS.items():
        counts = Counter(tuple(row[k] for k in key) for row in tables[name])
        found[name] = [k for k, n in counts.items() if n > 1]
    return {name: keys for name, keys in found.items() if keys}


def metadata_locations(database: Path) -> dict[str, str]:
    with sqlite3.connect(database) as con:
        return dict(con.execute("SELECT table_name, metadata_location FROM iceberg_tables").fetchall())


def start_publish(repo: Repo, database: Path, then: Callable[[subprocess.Popen], None]) -> subprocess.Popen:
    """Start a publish and, as soon as `observations`, the first table it appends, has a new
    snapshot, hold the catalog locked (so the publish cannot commit another table) while
    `then(process)` signals it. The process, its output (JSON) piped."""
    before = metadata_locations(database)
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "publish", "--catalog", "local", "--format", "json"],
                            cwd=repo.path, env=repo.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    con = sqlite3.connect(database, timeout=30, isolation_level=None)
    try:
        deadline = time.monotonic() + 60
        while metadata_locations(database).get("observations") == before["observations"]:
            assert proc.poll() is None and time.monotonic() < deadline, "the publish ended before its first append"
            time.sleep(0.002)
        con.execute("BEGIN IMMEDIATE")  # the publish's next catalog commit waits on this lock
        then(proc)
        con.execute("ROLLBACK")
    finally:
        con.close()
    return proc


def kill_after_first_data_table(repo: Repo, database: Path) -> dict[str, str]:
    """A publish `kill -9`ed after its first data table; the tables' metadata as it was left."""
    proc = start_publish(repo, database, lambda proc: (os.kill(proc.pid, signal.SIGKILL), proc.communicate()))
    assert proc.returncode == -signal.SIGKILL
    return metadata_locations(database)


def test_a_publish_killed_half_way_or_losing_a_race_is_never_seen_and_the_next_one_completes_it(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo()
    catalog_env(repo, tmp_path / "catalog")
    repo.add(observation(obs_id(1), entity=ACME, fields={"name": "Acme"}))
    repo.commit("one")
    publish(repo)
    repo.add(*(observation(obs_id(n), entity=f"company/c{n}", fields={"name": f"C{n}", "size": n},
                           relations=[{"type": "PART_OF", "target": "company/group"}]) for n in range(2, 12)))
    repo.add(observation(obs_id(12), retracts=[obs_id(1)]))
    second = repo.commit("two")
    before = metadata_locations(tmp_path / "catalog" / "catalog.db")
    left = kill_after_first_data_table(repo, tmp_path / "catalog" / "catalog.db")
    assert left["observations"] != before["observations"] and left["commits"] == before["commits"]

    # DuckDB's reading before the next publish, pyiceberg's and DuckDB's after (Polars plans with pyiceberg)
    tables = read_duckdb(repo)
    assert max(row["seq"] for row in tables["commits"]) == 1
    assert {row["added_seq"] for row in tables["observations"]} == {1, 2}  # the half publication is there…
    assert as_of(tables, 1)[0] == {obs_id(1)}  # …and unseen by a reader that filters on max(commits.seq)

    answer = publish(repo)
    assert (answer["first_seq"], answer["last_seq"], answer["rows"]["observations"]) == (2, 2, 11)
    expected = {obs_id(n) for n in range(2, 13)}  # what query --at lists: the first one is retracted
    for name, reader in (("pyiceberg", read_pyiceberg), ("duckdb", read_duckdb)):
        tables = reader(repo)
        assert duplicates(tables) == {}, name
        assert as_of(tables, 2)[0] == expected, name
        assert len(tables["observations"]) == 12 and len(tables["observation_fields"]) == 21, name
    from test_publish import open_catalog

    observations = open_catalog(repo).load_table(("obsrepo", "observations"))
    tagged = observations.snapshot_by_id(observations.metadata.refs[f"git-{second}"].snapshot_id)
    assert tagged.snapshot_id == observations.current_snapshot().snapshot_id  # the tag moved off the stopped append
    assert publish(repo)["status"] == "current"
    lose_the_catalogs_race(repo, tmp_path / "catalog" / "catalog.db")


def lose_the_catalogs_race(repo: Repo, database: Path) -> None:
    """Two real publishes of a third commit: the first commits `observations` and is held (the
    catalog locked, then the process stopped) while the second publishes whole; then it goes
    on and finds its next table moved since it loaded it: a clean error, the winner whole."""
    repo.add(observation(obs_id(13), entity=ACME, fields={"name": "Acme Corp"}), observation(obs_id(14), retracts=[obs_id(2)]))
    repo.commit("three")
    first = start_publish(repo, database, lambda proc: os.kill(proc.pid, signal.SIGSTOP))  # held while the second runs
    try:
        second = publish(repo)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=60)
    assert (second["first_seq"], second["last_seq"]) == (3, 3)
    assert first.returncode == 4 and "Traceback" not in err, err
    error = json.loads(out)["error"]
    assert (error["code"], error["details"]["conflict"]) == ("PUBLISH_ERROR", True)
    # observation_removals, unless a loaded machine let it commit that one before the lock was held
    assert error["details"]["table"] in ROW_KEYS.keys() - {"observations"}
    tables = read_pyiceberg(repo)
    assert duplicates(tables) == {}
    assert as_of(tables, 3)[0] == {obs_id(n) for n in range(3, 15)}
    assert {(r["observation_id"], r["removed_seq"]) for r in tables["observation_removals"]} == {
        (obs_id(1), 2), (obs_id(2), 3)}


RETENTION = "spec: retention/v1\npolicies:\n  - {type: chat.line, ttl: 30d}\n"


def commit_at(repo: Repo, when: str, message: str) -> str:
    repo.env["GIT_COMMITTER_DATE"] = when
    return repo.commit(message, allow_empty=True)


@pytest.fixture(scope="module")
def withheld(make_module_repo: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, dict[str, Any], dict[str, Any]]:
    """Published at two commits: a chat line that expires (ttl 30 days) by the second, and an
    observation reclassified `confidential` (above the default ceiling) by it. The repository,
    the second publish's answer, and what obsrepo answers under the ceiling internal (the ids
    at each commit, acme's snapshot at the second)."""
    repo = make_module_repo()
    catalog_env(repo, tmp_path_factory.mktemp("withheld"))
    repo.write("schemas/retention.yaml", RETENTION)
    repo.add(observation(obs_id(1, "2026-02-01T00:00:00Z"), type="chat.line", entity="person/ada",
                         fields={"email": "ada@example.com"}, relations=[{"type": "WORKS_AT", "target": ACME}]),
             observation(obs_id(2, "2026-02-01T00:00:00Z"), entity=ACME, fields={"name": "Acme", "revenue": 1200}),
             observation(obs_id(3, "2026-02-01T00:00:00Z"), entity=ACME, fields={"name": "Acme Inc"}, priority=1))
    shas = [commit_at(repo, "2026-02-10T00:00:00+00:00", "one")]
    assert publish(repo)["rows"]["observations"] == 3
    repo.add(observation(obs_id(4, "2026-03-05T00:00:00Z"),
                         reclassify={"targets": [obs_id(2, "2026-02-01T00:00:00Z")], "classification": "confidential"}))
    shas.append(commit_at(repo, "2026-03-05T00:00:00+00:00", "two"))
    # what query --at and snapshot --at answer under the ceiling internal (tests/test_publish.py compares them)
    early = [obs_id(n, "2026-02-01T00:00:00Z") for n in (1, 2, 3)]
    expected = {"ids": [set(early), {early[2], obs_id(4, "2026-03-05T00:00:00Z")}], "acme": {"name": "Acme Inc"}}
    return repo, publish(repo), expected


@pytest.mark.parametrize("reader", list(READERS))
def test_what_the_head_withholds_leaves_every_seq(withheld: tuple[Repo, dict[str, Any], dict[str, Any]], reader: str) -> None:
    repo, answer, expected = withheld
    chat, secret = obs_id(1, "2026-02-01T00:00:00Z"), obs_id(2, "2026-02-01T00:00:00Z")
    assert answer["erased"] == [chat, secret]
    tables = READERS[reader](repo)
    for name, column in (("observations", "id"), ("observation_removals", "observation_id"),
                         ("observation_fields", "observation_id"), ("relations", "observation_id")):
        assert not {row[column] for row in tables[name]} & {chat, secret}, name
    assert not [row for row in tables["entity_snapshots"] if chat in row["provenance"] or secret in row["provenance"]]
    assert "ada@example.com" not in json.dumps(tables, default=str) and "1200" not in json.dumps(tables["entity_snapshots"])
    assert as_of(tables, 2)[0] == expected["ids"][1]
    # the erased observations leave the earlier seqs too: retention and the ceiling hold at the head
    assert as_of(tables, 1)[0] == expected["ids"][0] - {chat, secret}
    snapshots = as_of(tables, 2)[1]
    assert json.loads(snapshots[ACME]["snapshot"]) == expected["acme"] == {"name": "Acme Inc"}
    # ada was only ever spoken of by the expired chat line: no row says she was, nor that she was deleted
    assert "person/ada" not in {row["entity_id"] for row in tables["entity_snapshots"]}


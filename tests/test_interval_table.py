"""The index's `field_intervals` table (docs/design.md §19): for every entity a period touches, the
rows `obsrepo intervals` prints; none for an entity without a period; an update commit by commit
equals a full build."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from helpers import Doc, Repo, observation

TENANTS = [{"org": "northwind"}, {"org": "globex"}]


def _generated() -> list[list[Doc]]:
    """Commits of observations over a few entities: periods open and closed, values that repeat,
    nulls, corrections, a retraction, a merge, two tenants; one entity without any period."""
    rng = random.Random(19)
    steps: list[list[Doc]] = []
    made: list[str] = []
    tenants: dict[str, dict[str, str]] = {}
    for step in range(4):
        docs = []
        for n in range(12):
            number = step * 100 + n
            obs_id = f"obs-2026{1 + number % 9:02d}{1 + n:02d}-{step:02d}0000-{number:04d}"
            entity = rng.choice(["contract/c1", "contract/c2", "contract/c3"])
            front: dict[str, Any] = {"entity": entity, "source": rng.choice(["agent/a", "agent/b"]),
                                     "tenant": rng.choice(TENANTS),
                                     "fields": {"price": rng.choice([80, 100, 120, None]), "note": rng.choice(["x", "y"])}}
            if entity != "contract/c3" and rng.random() < 0.7:
                start = datetime(2026, rng.randint(1, 11), rng.randint(1, 28), tzinfo=timezone.utc)
                valid = {"from": start.isoformat().replace("+00:00", "Z")}
                if rng.random() < 0.6:
                    valid["until"] = start.replace(month=start.month + 1).isoformat().replace("+00:00", "Z")
                front["valid"] = valid
            if made and rng.random() < 0.15:
                front.update(priority=1000, corrects=[rng.choice(made)])
            docs.append(observation(obs_id, **front))
            made.append(obs_id)
            tenants[obs_id] = front["tenant"]
        steps.append(docs)
    steps[2].append(observation("obs-20261201-000000-0901", entity="contract/c4", fields={"price": 5},
                                source="agent/a", tenant=TENANTS[0],
                                relations=[{"type": "DUPLICATE_OF", "target": "contract/c1"}]))
    steps[3].append(observation("obs-20261202-000000-0902", source="agent/a", tenant=tenants[made[5]],
                                retracts=[made[5]]))
    return steps


def _table(index: Any) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(index), read_only=True)
    try:
        return con.execute("SELECT entity_id, field, valid_from, valid_until, value_json::VARCHAR, observation_id "
                           "FROM field_intervals ORDER BY ALL").fetchall()
    finally:
        con.close()


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)


@pytest.fixture(scope="module")
def generated(make_module_repo: Callable[..., Repo]) -> tuple[Repo, list[str]]:
    repo = make_module_repo()
    commits = []
    for n, docs in enumerate(_generated()):
        repo.add(*docs)
        commits.append(repo.commit(f"step {n}"))
    return repo, commits


def test_the_table_holds_what_intervals_prints_for_every_entity(generated: tuple[Repo, list[str]], tmp_path: Any) -> None:
    from obsrepo.api import Repository

    repo, commits = generated
    index = tmp_path / "index.duckdb"
    Repository(str(repo.path), index=str(index)).index(commits[-1], full=True)
    rows = _table(index)
    expected = []
    seen = set()
    for entity in ("contract/c1", "contract/c2", "contract/c3", "contract/c4"):
        proc = repo.obsrepo("intervals", entity, "--at", commits[-1])
        assert proc.returncode == 0, proc.stderr
        answer = json.loads(proc.stdout)
        if entity == "contract/c3":  # no period: the table says nothing of it
            assert answer["fields"], answer
            continue
        if answer["entity_id"] in seen:  # asked by a merged-away name: its survivor's answer again
            continue
        seen.add(answer["entity_id"])
        for field in answer["fields"]:
            for span in field["intervals"]:
                first = span["observation_id"]
                expected.append((answer["entity_id"], field["field"], _moment(span["from"]), _moment(span["until"]),
                                 json.dumps(span["value"], separators=(",", ":")),
                                 first[0] if isinstance(first, list) else first))
    assert {r[0] for r in rows} == {"contract/c1", "contract/c2"}  # c4 is merged into c1
    assert rows == sorted(expected)
    assert any(r[3] is not None for r in rows) and any(r[3] is None for r in rows)


def test_updated_commit_by_commit_equals_a_full_build(generated: tuple[Repo, list[str]], tmp_path: Any) -> None:
    from obsrepo.api import Repository

    repo, commits = generated
    incremental = Repository(str(repo.path), index=str(tmp_path / "incremental.duckdb"))
    for rev in [*commits, commits[1], commits[-1]]:
        incremental.index(rev)
        full = tmp_path / f"full-{rev[:8]}.duckdb"
        Repository(str(repo.path), index=str(full)).index(rev, full=True)
        assert _table(tmp_path / "incremental.duckdb") == _table(full)
        assert _table(full)


def test_sql_reads_the_table(generated: tuple[Repo, list[str]]) -> None:
    repo, _ = generated
    proc = repo.obsrepo("sql", "SELECT count(*) AS n FROM field_intervals WHERE valid_until IS NULL")
    assert proc.returncode == 0, proc.stderr
    assert "n" in proc.stdout

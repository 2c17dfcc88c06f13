"""`obsrepo publish` (docs/design.md §16, §8b) under a tenant binding: a bound publish writes
the rows of the commits that add or remove an observation the binding sees and no other
commit's sha, author or time; and retention leaves no trace of an observation published
retracted that has expired since. Read back with pyiceberg."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import obs_id, observation
from test_publish import as_of, catalog_env, publish, query_ids, read_pyiceberg

pytest.importorskip("pyiceberg")

A, B = {"org": "a"}, {"org": "b"}


def test_a_bound_publish_writes_only_the_commits_that_change_what_it_sees(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo()
    catalog_env(repo, tmp_path / "catalog")
    repo.add(observation(obs_id(1), tenant=A, entity="company/acme", fields={"name": "Acme"}))
    first = repo.commit("a: acme")
    repo.add(observation(obs_id(2), tenant=B, entity="company/acme", fields={"name": "B's secret name"}))
    hidden = [repo.commit("b: the merger nobody may know of")]
    repo.add(observation(obs_id(3), tenant=A, retracts=[obs_id(1)]))
    # the policy changes in a commit of b's: a's snapshot of acme changes at the next commit a sees
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields:\n  name: {policy: last_write}\n")
    second = repo.commit("a: retract")
    repo.add(observation(obs_id(4), tenant=B))
    hidden.append(repo.commit("b: another"))
    answer = publish(repo, "--tenant", "org=a")
    assert (answer["commits"], answer["first_seq"], answer["last_seq"]) == (2, 1, 2)

    tables = read_pyiceberg(repo)
    assert [(r["seq"], r["sha"], r["parent"]) for r in sorted(tables["commits"], key=lambda r: r["seq"])] == [
        (1, first, None), (2, second, first)]  # the parent is the commit written before, not a hidden one
    dumped = json.dumps(tables, default=str)
    assert not [sha for sha in hidden if sha in dumped], "a commit of b's is named"
    for seq, sha in enumerate((first, second), start=1):
        assert as_of(tables, seq)[0] == query_ids_bound(repo, sha), seq
    assert publish(repo, "--tenant", "org=a")["status"] == "current"  # b's last commit: nothing a sees changed
    older = repo.obsrepo("publish", "--catalog", "local", "--tenant", "org=a", "--rev", hidden[0], "--format", "json")
    assert older.returncode == 0 and json.loads(older.stdout)["status"] == "older", older  # below the head, not rewritten

    repo.add(observation(obs_id(5), tenant=A))
    third = repo.commit("a: more")
    assert publish(repo, "--tenant", "org=a")["first_seq"] == 3
    commits = sorted(read_pyiceberg(repo)["commits"], key=lambda r: r["seq"])
    assert [(r["seq"], r["sha"], r["parent"]) for r in commits][-1] == (3, third, second)


def query_ids_bound(repo: Any, sha: str) -> set[str]:
    proc = repo.obsrepo("query", "--tenant", "org=a", "--at", sha, "--limit", "1000", "--format", "json")
    assert proc.returncode == 0, proc
    return {record["id"] for record in json.loads(proc.stdout)["observations"]}


RETENTION = "spec: retention/v1\npolicies:\n  - {type: chat.line, ttl: 30d}\n"


def test_an_observation_published_retracted_that_expires_since_leaves_no_trace(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo()
    catalog_env(repo, tmp_path / "catalog")
    repo.write("schemas/retention.yaml", RETENTION)
    chat = obs_id(1, "2026-02-01T00:00:00Z")
    repo.add(observation(chat, type="chat.line", entity="person/ada", fields={"email": "ada@example.com"}),
             observation(obs_id(2, "2026-02-01T00:00:00Z"), entity="company/acme", fields={"name": "Acme"}))
    repo.env["GIT_COMMITTER_DATE"] = "2026-02-02T00:00:00+00:00"
    repo.commit("one")
    publish(repo)
    repo.add(observation(obs_id(3, "2026-02-03T00:00:00Z"), retracts=[chat]))
    repo.env["GIT_COMMITTER_DATE"] = "2026-02-03T00:00:00+00:00"
    repo.commit("two: retract the chat line")
    publish(repo)
    removals = read_pyiceberg(repo)["observation_removals"]
    assert [(r["observation_id"], r["reason"]) for r in removals] == [(chat, "retracted")]
    repo.env["GIT_COMMITTER_DATE"] = "2026-03-10T00:00:00+00:00"  # 37 days on: the chat line has expired
    last = repo.commit("three", allow_empty=True)
    answer = publish(repo)
    assert answer["erased"] == [chat]
    tables = read_pyiceberg(repo)
    for name, column in (("observations", "id"), ("observation_removals", "observation_id"),
                         ("observation_fields", "observation_id")):
        assert chat not in {row[column] for row in tables[name]}, name
    assert "ada@example.com" not in json.dumps(tables, default=str)
    # the chat line was all that spoke of ada: neither her snapshot nor its deletion (at the retraction) stays
    assert "person/ada" not in {row["entity_id"] for row in tables["entity_snapshots"]}
    assert as_of(tables, 3)[0] == query_ids(repo, last)

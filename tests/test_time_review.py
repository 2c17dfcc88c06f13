"""Valid time (docs/design.md §19) in `diff` and in the recall block: each side reduces as
snapshot does, a period counting where it holds the committer time of the commit asked about,
so a period that has not begun (or has ended) does not decide that commit's truth."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, observation

NORTHWIND = {"org": "northwind"}
MARCH = "2026-03-10T00:00:00+00:00"

ALWAYS = observation("obs-20260101-000000-0001", entity="contract/c1", fields={"price": 100}, source="agent/crm",
                     tenant=NORTHWIND)
DISCOUNT = observation("obs-20260201-000000-0002", entity="contract/c1", fields={"price": 80}, source="agent/sales",
                       valid={"from": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"}, tenant=NORTHWIND)
SUMMER = observation("obs-20260202-000000-0003", entity="contract/c1", fields={"price": 70}, source="agent/sales",
                     valid={"from": "2026-06-01T00:00:00Z", "until": "2026-09-01T00:00:00Z"}, tenant=NORTHWIND)


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    made = make_module_repo()
    made.add(ALWAYS)
    made.commit("a price")  # committed 2026-02-13
    made.git("tag", "base")
    made.env = {**made.env, "GIT_COMMITTER_DATE": MARCH}
    made.add(DISCOUNT, SUMMER)
    made.commit("a March discount, a summer price")
    return made


def _json(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args, "--format", "json")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def test_diff_reduces_each_side_at_its_commits_time(repo: Repo) -> None:
    report = _json(repo, "diff", "base", "HEAD")
    [entity] = report["entities"]  # on March 10 the discount holds and summer has not begun
    assert (entity["entity_id"], entity["change"]) == ("contract/c1", "changed")
    assert [(f["field"], f["old"], f["new"], f["observation_id"]) for f in entity["fields"]] == [
        ("price", 100, 80, "obs-20260201-000000-0002")]
    assert [lost["observation_id"] for lost in report["losing"]] == []  # the summer price neither wins nor loses now
    assert _json(repo, "snapshot", "contract/c1")["snapshot"]["price"] == 80


@pytest.mark.parametrize("args", [(), ("--tenant", "org=northwind")])
def test_recall_reduces_at_the_commits_time(repo: Repo, args: tuple[str, ...]) -> None:
    block = _json(repo, "recall", "--entity", "contract/c1", *args)
    assert {line["field"]: line["value"] for line in block["entities"][0]["fields"]} == {"price": 80}
    assert "70" not in repo.obsrepo("recall", "--entity", "contract/c1", *args).stdout.split("## Observations")[0]

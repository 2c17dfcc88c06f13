"""`diff`'s contests (docs/design.md §19): a change that opens a dispute and one that settles it,
in JSON and in the review's words; a bound caller sees no contest another tenant made."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, observation

NORTHWIND = {"org": "northwind"}


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    made = make_module_repo()
    made.add(observation("obs-20260301-090000-0001", entity="contract/c1", fields={"price": 100}, source="agent/crm",
                         tenant=NORTHWIND))
    made.commit("crm price")
    made.git("tag", "base")
    made.add(observation("obs-20260301-150000-0002", entity="contract/c1", fields={"price": 120}, source="agent/sales",
                         tenant=NORTHWIND),
             observation("obs-20260301-160000-0003", entity="contract/c1", fields={"price": 999}, source="agent/globex",
                         tenant={"org": "globex"}))
    made.commit("sales price, and another tenant's")
    made.git("tag", "disputed")
    made.add(observation("obs-20260302-090000-0004", entity="contract/c1", fields={"price": 110}, source="human/alice",
                         priority=1000, corrects=["obs-20260301-150000-0002"], tenant=NORTHWIND))
    made.commit("settled")
    return made


def _diff(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo("diff", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)["contests"]


def test_a_change_that_opens_a_contest(repo: Repo) -> None:
    contests = _diff(repo, "base", "disputed")
    assert contests["closed"] == []
    [opened] = contests["opened"]
    assert (opened["entity_id"], opened["field"], opened["winner"]["observation_id"]) == (
        "contract/c1", "price", "obs-20260301-160000-0003")
    assert [c["source"] for c in opened["challengers"]] == ["agent/sales", "agent/crm"]
    markdown = repo.obsrepo("diff", "base", "disputed", "--format", "markdown").stdout
    assert "This pull request opens 1 contest" in markdown, markdown
    for said in ("price", "999", "agent/globex", "120", "agent/sales", "100", "agent/crm"):
        said = f"<code>{said}</code>"
        assert said in markdown, said
    text = repo.obsrepo("diff", "base", "disputed").stdout
    assert "contests opened" in text and "contract/c1 price: 999 from agent/globex" in text


def test_a_correction_closes_it(repo: Repo) -> None:
    contests = _diff(repo, "disputed", "HEAD")
    assert contests["opened"] == [] and [(c["entity_id"], c["field"]) for c in contests["closed"]] == [
        ("contract/c1", "price")]
    assert "closes 1 contest" in repo.obsrepo("diff", "disputed", "HEAD", "--format", "markdown").stdout
    assert _diff(repo, "base", "HEAD") == {"opened": [], "closed": []}


def test_a_bound_diff_sees_only_its_own_tenants_contests(repo: Repo) -> None:
    [opened] = _diff(repo, "base", "disputed", "--tenant", "org=northwind")["opened"]
    assert opened["winner"]["source"] == "agent/sales" and [c["source"] for c in opened["challengers"]] == ["agent/crm"]
    assert _diff(repo, "base", "disputed", "--tenant", "org=globex") == {"opened": [], "closed": []}
    markdown = repo.obsrepo("diff", "base", "disputed", "--format", "markdown", "--tenant", "org=northwind").stdout
    assert "globex" not in markdown and "999" not in markdown

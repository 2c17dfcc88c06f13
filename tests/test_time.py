"""Valid time (docs/design.md §19) through the real index: which observations count, with and
without --as-of; `obsrepo intervals` and MCP `retrieve_field_intervals`; tenant binding; the
same answer whatever the order of the files."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, hermetic, observation
from obsrepo.mcp.tools import all_tools
from obsrepo.ops import Session

NORTHWIND = {"org": "northwind"}
FEB = "2026-02-13T12:00:00Z"  # the default committer time of the tests' commits
MARCH = "2026-03-10T00:00:00+00:00"

DOCS = [
    observation("obs-20260101-000000-0001", entity="contract/c1", fields={"price": 100}, source="agent/crm",
                tenant=NORTHWIND),
    observation("obs-20260201-000000-0002", entity="contract/c1", fields={"price": 80}, source="agent/sales",
                valid={"from": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"}, tenant=NORTHWIND),
    observation("obs-20260202-000000-0003", entity="contract/c1", fields={"price": 999, "note": "x"},
                source="agent/globex", valid={"from": "2026-05-01T00:00:00Z", "until": "2026-06-01T00:00:00Z"},
                tenant={"org": "globex"}),
]



def committed_in_march(made: Repo, docs: list, message: str) -> Repo:
    """`docs` in one commit, then an empty commit whose committer time is MARCH (the time a
    bounded period is held to without --as-of)."""
    made.add(*docs)
    made.commit(message)
    made.env = {**made.env, "GIT_COMMITTER_DATE": MARCH}
    made.git("commit", "-q", "--allow-empty", "-m", "in March")
    return made


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    return committed_in_march(make_module_repo(), DOCS, "prices")


def _json(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_as_of_counts_the_observations_whose_period_holds_it(repo: Repo) -> None:
    def price(moment: str) -> Any:
        return _json(repo, "snapshot", "contract/c1", "--as-of", moment)["snapshot"].get("price")

    assert price("2026-01-15T00:00:00Z") == 100
    assert price("2026-03-15T00:00:00Z") == 80
    assert price("2026-04-01T00:00:00Z") == 100  # until is excluded
    assert price("2026-05-15T00:00:00Z") == 999
    assert _json(repo, "snapshot", "contract/c1", "--as-of", "2026-03-15T00:00:00Z")["valid_at"] == "2026-03-15T00:00:00Z"


def test_without_as_of_the_commit_time_decides_for_periods(repo: Repo) -> None:
    feb = _json(repo, "snapshot", "contract/c1", "--at", "HEAD~1")
    assert feb["snapshot"]["price"] == 100 and feb["valid_at"] == FEB
    march = _json(repo, "snapshot", "contract/c1")
    assert march["snapshot"]["price"] == 80 and march["valid_at"] == "2026-03-10T00:00:00Z"
    listed = _json(repo, "entities", "--type", "contract", "--format", "json")
    assert '"price": 80' in json.dumps(listed), listed


def test_intervals_list_each_period_with_its_value_and_commit(repo: Repo) -> None:
    answer = _json(repo, "intervals", "contract/c1", "--field", "price")
    assert answer["entity_id"] == "contract/c1" and answer["at_commit"] == repo.sha()
    spans = [(s["from"], s["until"], s["value"], s["observation_id"]) for s in answer["fields"][0]["intervals"]]
    assert spans == [
        ("2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", 100, "obs-20260101-000000-0001"),
        ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z", 80, "obs-20260201-000000-0002"),
        ("2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z", 100, "obs-20260101-000000-0001"),
        ("2026-05-01T00:00:00Z", "2026-06-01T00:00:00Z", 999, "obs-20260202-000000-0003"),
        ("2026-06-01T00:00:00Z", None, 100, "obs-20260101-000000-0001"),
    ]
    assert {s["commit"] for s in answer["fields"][0]["intervals"]} == {repo.sha("HEAD~1")}
    assert {s["rule"] for s in answer["fields"][0]["intervals"]} == {"highest_priority"}


def test_every_instant_of_the_intervals_is_what_snapshot_as_of_says(repo: Repo) -> None:
    answer = _json(repo, "intervals", "contract/c1")
    for field in answer["fields"]:
        for span in field["intervals"]:
            for moment in (span["from"], "2026-03-31T23:59:59Z", "2026-07-01T00:00:00Z"):
                inside = span["from"] <= moment and (span["until"] is None or moment < span["until"])
                if inside:
                    snap = _json(repo, "snapshot", "contract/c1", "--as-of", moment)
                    assert snap["snapshot"][field["field"]] == span["value"], (field["field"], moment)


def test_a_bound_caller_sees_no_period_another_tenant_made(repo: Repo) -> None:
    answer = _json(repo, "intervals", "contract/c1", "--tenant", "org=northwind")
    assert [f["field"] for f in answer["fields"]] == ["price"]
    assert 999 not in [s["value"] for s in answer["fields"][0]["intervals"]]
    assert answer["fields"][0]["intervals"][-1] == {
        "from": "2026-04-01T00:00:00Z", "until": None, "value": 100, "observation_id": "obs-20260101-000000-0001",
        "commit": repo.sha("HEAD~1"), "rule": "highest_priority"}


def test_mcp_retrieve_field_intervals_answers_what_the_cli_prints(repo: Repo) -> None:
    tool = all_tools()["retrieve_field_intervals"]
    assert tool.annotations["readOnlyHint"] is True
    given = tool.call(Session(str(repo.path)), {"entity_id": "contract/c1", "fields": ["price"]})
    answer = given if isinstance(given, dict) else json.loads(str(given))
    assert answer == _json(repo, "intervals", "contract/c1", "--field", "price")


def test_an_unknown_entity_is_not_found(repo: Repo) -> None:
    proc = repo.obsrepo("intervals", "contract/none")
    assert proc.returncode == 3 and "ENTITY_NOT_FOUND" in proc.stdout + proc.stderr


def test_permuted_files_give_byte_identical_intervals(make_repo: Callable[..., Repo]) -> None:
    outputs = []
    for name, order in (("forward", DOCS), ("backward", DOCS[::-1])):
        other = make_repo(name)
        for n, doc in enumerate(order):  # other folders, other order in the tree
            other.write(f"observations/{chr(ord('a') + n)}/{doc.id}.md", doc)
        other.commit("prices")
        text = other.obsrepo("intervals", "contract/c1").stdout
        outputs.append(text.replace(other.sha(), "C"))
    assert outputs[0] == outputs[1]


def test_the_entity_page_lists_each_fields_periods(repo: Repo, make_repo: Callable[..., Repo]) -> None:
    pytest.importorskip("starlette")
    from inspector_asgi import get, inspector
    from obsrepo.ops import Binding

    with hermetic(repo.env):
        status, _, body = get(inspector(Session(str(repo.path))), "/entity/contract/c1")
        assert status == 200
        said = " ".join(body.split())
        periods = said[said.index("<h2>Periods</h2>"):said.index("<h2>Challengers</h2>")]
        assert "2026-03-01T00:00:00Z" in periods and "2026-04-01T00:00:00Z" in periods and "open" in periods
        assert "obs-20260202-000000-0003" in periods and "999" in periods  # globex's May price
        bound = " ".join(get(inspector(Session(str(repo.path), binding=Binding.of(NORTHWIND))),
                             "/entity/contract/c1")[2].split())
        periods = bound[bound.index("<h2>Periods</h2>"):bound.index("<h2>Challengers</h2>")]
        assert "obs-20260201-000000-0002" in periods and "80" in periods
        assert "999" not in periods and "obs-20260202-000000-0003" not in periods and "2026-05-01" not in periods
    plain = make_repo("plain")
    plain.add(DOCS[0])
    plain.commit("no period")
    with hermetic(plain.env):
        status, _, body = get(inspector(Session(str(plain.path))), "/entity/contract/c1")
        assert status == 200 and "<h2>Snapshot</h2>" in body and "Periods" not in body

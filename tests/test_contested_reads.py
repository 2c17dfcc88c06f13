"""Contested values (docs/design.md §19) through the real index: `obsrepo contested` and MCP
`list_contested`, its filters and pages, tenant binding, and the same answer whatever the order
of the files."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, hermetic, observation
from obsrepo.mcp.tools import all_tools
from obsrepo.ops import Session

NORTHWIND = {"org": "northwind"}
GLOBEX = {"org": "globex"}

DOCS = [
    # contract/c1: two sources, hours apart, disagree on the price
    observation("obs-20260301-090000-0001", entity="contract/c1", fields={"price": 100, "currency": "EUR"},
                source="agent/crm", scope=["deal/d1"], tenant=NORTHWIND),
    observation("obs-20260301-150000-0002", entity="contract/c1", fields={"price": 120, "currency": "EUR"},
                source="agent/sales", scope=["deal/d1"], tenant=NORTHWIND),
    # contract/c2: disputed only by another tenant's observation
    observation("obs-20260302-090000-0003", entity="contract/c2", fields={"price": 50}, source="agent/crm",
                tenant=NORTHWIND),
    observation("obs-20260302-100000-0004", entity="contract/c2", fields={"price": 55}, source="agent/globex",
                tenant=GLOBEX),
    # contract/c3: disputed, then corrected
    observation("obs-20260303-090000-0005", entity="contract/c3", fields={"price": 7}, source="agent/crm",
                tenant=NORTHWIND),
    observation("obs-20260303-100000-0006", entity="contract/c3", fields={"price": 8}, source="agent/sales",
                tenant=NORTHWIND),
    observation("obs-20260304-090000-0007", entity="contract/c3", fields={"price": 8}, source="human/alice",
                priority=1000, corrects=["obs-20260303-090000-0005"], tenant=NORTHWIND),
    # invoice/i1: the more specific source wins a dispute of the same instant
    observation("obs-20260305-090000-0008", entity="invoice/i1", fields={"status": "paid"}, source="agent/bank",
                specificity=0.9, tenant=NORTHWIND),
    observation("obs-20260305-090000-0009", entity="invoice/i1", fields={"status": "open"}, source="agent/erp",
                tenant=NORTHWIND),
]


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    made = make_module_repo()
    made.add(*DOCS)
    made.commit("prices")
    return made


def _json(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _listed(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["entity_id"], c["field"]) for c in answer["contests"]]


def test_contested_lists_each_dispute_by_entity_then_field(repo: Repo) -> None:
    answer = _json(repo, "contested")
    assert answer["at_commit"] == repo.sha() and answer["window_seconds"] == 86400
    assert answer["valid_at"] == "2026-02-13T12:00:00Z" and (answer["total"], answer["limit"], answer["offset"]) == (3, 50, 0)
    assert _listed(answer) == [("contract/c1", "price"), ("contract/c2", "price"), ("invoice/i1", "status")]
    first = answer["contests"][0]
    assert first == {
        "entity_id": "contract/c1", "field": "price", "policy": "highest_priority", "decided_by": "timestamp",
        "winner": {"observation_id": "obs-20260301-150000-0002", "value": 120, "source": "agent/sales",
                   "from": "2026-03-01T15:00:00Z", "priority": 100, "specificity": 0.0},
        "challengers": [{"observation_id": "obs-20260301-090000-0001", "value": 100, "source": "agent/crm",
                         "from": "2026-03-01T09:00:00Z", "priority": 100, "specificity": 0.0}]}
    assert answer["contests"][2]["decided_by"] == "specificity"


def test_filters_window_and_pages(repo: Repo) -> None:
    assert _listed(_json(repo, "contested", "--type", "invoice")) == [("invoice/i1", "status")]
    assert _listed(_json(repo, "contested", "--entity", "contract/c2", "--entity", "invoice/i1")) == [
        ("contract/c2", "price"), ("invoice/i1", "status")]
    assert _listed(_json(repo, "contested", "--scope", "deal/d1")) == [("contract/c1", "price")]
    assert _listed(_json(repo, "contested", "--window", "0")) == [("invoice/i1", "status")]
    assert _listed(_json(repo, "contested", "--window", "2h")) == [("contract/c2", "price"), ("invoice/i1", "status")]
    paged = _json(repo, "contested", "--limit", "1", "--offset", "1")
    assert _listed(paged) == [("contract/c2", "price")] and paged["total"] == 3
    assert _json(repo, "contested", "--as-of", "2026-03-01T12:00:00Z")["contests"] == []  # the sales price came later


def test_a_bound_caller_sees_no_contest_another_tenant_made(repo: Repo) -> None:
    answer = _json(repo, "contested", "--tenant", "org=northwind")
    assert _listed(answer) == [("contract/c1", "price"), ("invoice/i1", "status")]
    assert _json(repo, "contested", "--tenant", "org=globex")["contests"] == []


def test_a_bad_window_is_a_usage_error_naming_the_option(repo: Repo) -> None:
    proc = repo.obsrepo("contested", "--window", "1w")
    assert proc.returncode == 2 and "--window" in proc.stdout + proc.stderr and "VALIDATION" in proc.stdout + proc.stderr


def test_text_format(repo: Repo) -> None:
    proc = repo.obsrepo("contested", "--format", "text", "--type", "contract")
    assert proc.returncode == 0, proc.stderr
    assert 'contract/c1  price: 120 from agent/sales' in proc.stdout and '100 from agent/crm' in proc.stdout


def test_mcp_list_contested_answers_what_the_cli_prints(repo: Repo) -> None:
    tool = all_tools()["list_contested"]
    assert tool.annotations["readOnlyHint"] is True
    given = tool.call(Session(str(repo.path)), {"entity_type": "contract", "window": "1d"})
    answer = given if isinstance(given, dict) else json.loads(str(given))
    assert answer == _json(repo, "contested", "--type", "contract")
    bound = tool.call(Session(str(repo.path), binding=_binding()), {})
    assert _listed(bound if isinstance(bound, dict) else json.loads(str(bound))) == [
        ("contract/c1", "price"), ("invoice/i1", "status")]


def _binding() -> Any:
    from obsrepo.ops import Binding

    return Binding.parse("org=northwind", "tenant")


def test_permuted_files_give_byte_identical_contests(make_repo: Callable[..., Repo]) -> None:
    outputs = []
    for name, order in (("forward", DOCS), ("backward", DOCS[::-1])):
        other = make_repo(name)
        for n, doc in enumerate(order):  # other folders, other order in the tree
            other.write(f"observations/{chr(ord('a') + n)}/{doc.id}.md", doc)
        other.commit("prices")
        text = "".join(other.obsrepo(*args).stdout for args in (
            ("contested",), ("contested", "--max-classification", "confidential"), ("snapshot", "contract/c1"),
            ("snapshot", "invoice/i1", "--explain"), ("recall", "--entity", "contract/c1")))
        outputs.append(text.replace(other.sha(), "C").replace(other.sha()[:12], "C"))
    assert outputs[0] == outputs[1] and '"total": 3' in outputs[0] and "(contested: 100 from agent/crm" in outputs[0]


# --- snapshots say their contests ---------------------------------------------------------------

@pytest.mark.parametrize("entity", ["contract/c1", "contract/c2", "contract/c3", "invoice/i1"])
def test_snapshot_says_its_contests_stored_and_computed_alike(repo: Repo, entity: str) -> None:
    stored = _json(repo, "snapshot", entity)  # the index's own tables
    computed = _json(repo, "snapshot", entity, "--explain")  # reduced from the rows
    computed.pop("explain")
    assert stored == computed
    expected = {c["field"]: [o["observation_id"] for o in c["challengers"]]
                for c in _json(repo, "contested", "--entity", entity)["contests"]}
    assert stored["contested"] == expected
    assert (stored["contested"] != {}) == (entity != "contract/c3")


def test_a_bound_snapshot_has_no_contest_another_tenant_made(repo: Repo) -> None:
    assert _json(repo, "snapshot", "contract/c2")["contested"] == {"price": ["obs-20260302-090000-0003"]}
    assert _json(repo, "snapshot", "contract/c2", "--tenant", "org=northwind")["contested"] == {}
    assert _json(repo, "snapshot", "contract/c1", "--tenant", "org=northwind")["contested"] == {
        "price": ["obs-20260301-090000-0001"]}


@pytest.mark.parametrize("filters", [(), ("--type", "contract"), ("--entity", "invoice/i1"), ("--scope", "deal/d1"),
                                     ("--limit", "1", "--offset", "2")])
def test_the_index_table_answers_what_the_rows_say(repo: Repo, filters: tuple[str, ...]) -> None:
    stored = _json(repo, "contested", *filters)  # contested_fields, read as the index built it
    computed = _json(repo, "contested", *filters, "--max-classification", "confidential")  # from the rows
    assert stored == computed and stored["total"] > 0


def test_a_null_against_a_value_is_a_dispute(make_repo: Callable[..., Repo]) -> None:
    other = make_repo()
    other.add(observation("obs-20260301-090000-0001", entity="contract/c9", fields={"note": "late"}, source="agent/a"),
              observation("obs-20260301-100000-0002", entity="contract/c9", fields={"note": None}, source="agent/b"))
    other.commit("a note, then none")
    for args in ((), ("--max-classification", "confidential")):
        [contest] = _json(other, "contested", *args)["contests"]
        assert contest["winner"]["value"] is None and contest["challengers"][0]["value"] == "late"
    snap = _json(other, "snapshot", "contract/c9")
    assert "note" not in snap["snapshot"] and snap["contested"] == {"note": ["obs-20260301-090000-0001"]}


# --- the recall block never prints a contested value as settled ---------------------------------

def test_recall_prints_a_contested_field_with_the_other_value(repo: Repo) -> None:
    for args in ((), ("--max-classification", "confidential")):  # the index's table, and from the rows
        block = repo.obsrepo("recall", "--entity", "contract/c1", *args)
        assert block.returncode == 0, block.stderr
        assert "- price: 120 (contested: 100 from agent/crm, obs-20260301-090000-0001@" in block.stdout, block.stdout
        assert "- currency: \"EUR\" —" in block.stdout  # agreed: printed as before
    bound = repo.obsrepo("recall", "--entity", "contract/c2", "--tenant", "org=northwind").stdout
    assert "- price: 50 —" in bound and "contested" not in bound
    data = _json(repo, "recall", "--entity", "contract/c2", "--format", "json")
    [price] = [f for f in data["entities"][0]["fields"] if f["field"] == "price"]
    assert [c["source"] for c in price["contested"]] == ["agent/crm"]


# --- the inspector's entity page says a dispute in words ----------------------------------------

def test_the_entity_page_says_a_contest_with_both_values_and_sources(repo: Repo) -> None:
    pytest.importorskip("starlette")
    from inspector_asgi import get, inspector
    from obsrepo.ops import Binding

    with hermetic(repo.env):
        app = inspector(Session(str(repo.path)))
        status, _, body = get(app, "/entity/contract/c1")
        assert status == 200
        said = " ".join(body.split())
        assert "<strong>Contested</strong>: agent/sales says" in said and "agent/crm says" in said, said
        assert "120" in said and "100" in said and "only a tie-break chose (later)" in said
        agreed = said[said.index("<th>currency</th>"):]
        assert "Contested" not in agreed[:agreed.index("</tr>")]
        bound = inspector(Session(str(repo.path), binding=Binding.of({"org": "northwind"})))
        assert "Contested" not in " ".join(get(bound, "/entity/contract/c2")[2].split())
        assert "Contested" in " ".join(get(app, "/entity/contract/c2")[2].split())


# --- the index's table follows every update -----------------------------------------------------

def _contested_table(index: Any) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(index), read_only=True)
    try:
        return con.execute("SELECT * FROM contested_fields ORDER BY entity_id, field, rowid").fetchall()
    finally:
        con.close()


def test_contested_fields_updated_commit_by_commit_equals_a_full_build(make_repo: Callable[..., Repo], tmp_path: Any) -> None:
    from obsrepo.api import Repository

    other = make_repo()
    steps = [
        [DOCS[0]],
        [DOCS[1], DOCS[2], DOCS[3]],  # two disputes
        [observation("obs-20260301-160000-0010", entity="contract/c1", fields={"price": 130}, source="agent/erp",
                     tenant=NORTHWIND)],  # a third opinion
        [DOCS[4], DOCS[5], DOCS[6]],  # disputed and corrected in one commit
        [observation("obs-20260302-110000-0011", source="human/alice", retracts=["obs-20260302-100000-0004"],
                     tenant=GLOBEX)],  # the dispute of c2 withdrawn
    ]
    commits = []
    for n, docs in enumerate(steps):
        other.add(*docs)
        commits.append(other.commit(f"step {n}"))
    incremental = Repository(str(other.path), index=str(tmp_path / "incremental.duckdb"))
    for rev in [*commits, commits[1], commits[-1]]:
        incremental.index(rev)
        full = Repository(str(other.path), index=str(tmp_path / f"full-{rev[:8]}.duckdb"))
        full.index(rev, full=True)
        assert _contested_table(tmp_path / "incremental.duckdb") == _contested_table(tmp_path / f"full-{rev[:8]}.duckdb")
    assert _contested_table(tmp_path / "incremental.duckdb") == [
        ("contract/c1", "price", "obs-20260301-160000-0010", "obs-20260301-150000-0002"),
        ("contract/c1", "price", "obs-20260301-160000-0010", "obs-20260301-090000-0001")]

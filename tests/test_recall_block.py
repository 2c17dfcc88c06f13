"""The session memory block (`obsrepo recall`, the MCP tool and prompt `recall`, docs/design.md §15):
byte-stable, within its budget, every fact cited, nothing of another tenant or above the ceiling.

Four repositories are built once for the module: `crowded` (northwind's and globex's rows),
`reversed` (the same files written in the opposite order: the same commit, another index row
order), `alone` (northwind's rows only) and `expiring` (northwind's rows under a retention
policy that expires the confidential one)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from helpers import Doc, Repo, comprehension, observation
from test_mcp import stdio_session

NW, GX = {"org": "northwind"}, {"org": "globex"}
NORTHWIND = [
    observation("obs-20260209-090000-0004", event="invoice INV-1 issued", entity="invoice/inv-1", tenant=NW,
                fields={"status": "issued", "total": 100}, scope=["billing"]),
    observation("obs-20260210-090000-0001", event="Acme is a prospect", entity="company/acme", tenant=NW,
                fields={"name": "Acme", "status": "prospect"}, scope=["crm"]),
    observation("obs-20260211-090000-0002", event="Acme signed the contract", entity="company/acme", tenant=NW,
                fields={"status": "customer"}, scope=["crm"]),
    observation("obs-20260212-090000-0003", event="invoice INV-1 paid by Acme", entity="invoice/inv-1", tenant=NW,
                fields={"status": "paid"}, classification="confidential", scope=["billing"]),
    comprehension("comp-acme", ["obs-20260210-090000-0001", "obs-20260211-090000-0002"],
                  statement="Acme became a\ncustomer in February"),
]
GLOBEX = [
    observation("obs-20260213-090000-0005", event="globex secret invoice paid", entity="company/gx-secret", tenant=GX,
                fields={"name": "Globex Secret"}, scope=["crm"]),
    observation("obs-20260214-090000-0006", event="globex note on acme invoice", entity="company/acme", tenant=GX,
                fields={"status": "globex-view"}, scope=["crm"]),
    comprehension("comp-mixed", ["obs-20260211-090000-0002", "obs-20260214-090000-0006"], statement="globex belief"),
]
EXPIRING = "spec: retention/v1\npolicies:\n  - {classification: confidential, ttl: 1d}\n"
CITATION = re.compile(r"(obs-[0-9a-z-]+)@([0-9a-f]{12})\b")


def built(make: Callable[..., Repo], name: str, docs: list[Doc], retention: str | None = None) -> Repo:
    repo = make(name)
    repo.add(*docs)
    if retention is not None:
        repo.write("schemas/retention.yaml", retention)
    repo.commit("observations")
    return repo


@pytest.fixture(scope="module")
def repos(make_module_repo: Callable[..., Repo]) -> dict[str, Repo]:
    return {"crowded": built(make_module_repo, "crowded", NORTHWIND + GLOBEX),
            "reversed": built(make_module_repo, "reversed", list(reversed(NORTHWIND + GLOBEX))),
            "alone": built(make_module_repo, "alone", NORTHWIND),
            "expiring": built(make_module_repo, "expiring", NORTHWIND, retention=EXPIRING)}


def recall(repo: Repo, *args: str, code: int = 0) -> str:
    proc = repo.obsrepo("recall", *args)
    assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return proc.stdout


def as_json(repo: Repo, *args: str) -> dict[str, Any]:
    return json.loads(recall(repo, *args, "--format", "json"))


def fact_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- ")]


def test_the_block_is_byte_identical_across_runs_and_file_orders(repos):
    crowded, reverse = repos["crowded"], repos["reversed"]
    assert crowded.sha() == reverse.sha()  # the same content; the index rows came in the other order
    args = ("--text", "invoice paid", "--budget", "400")
    first = recall(crowded, *args)
    assert first == recall(crowded, *args) == recall(reverse, *args)
    assert as_json(crowded, *args) == as_json(reverse, *args)
    assert fact_lines(first) and first.startswith(f"# Recall at {crowded.sha()[:12]}\n")


def test_the_block_stays_within_its_budget_and_says_what_it_left_out(repos):
    repo = repos["crowded"]
    everything = as_json(repo)
    assert everything["omitted"] == {"entities": 0, "beliefs": 0, "observations": 0}
    assert {e["entity_id"] for e in everything["entities"]} == {"company/acme", "company/gx-secret", "invoice/inv-1"}
    assert [b["id"] for b in everything["beliefs"]] == ["comp-acme", "comp-mixed"]
    for budget in (64, 200):
        block = recall(repo, "--budget", str(budget))
        assert len(block) <= budget * 4, (budget, block)
        assert block.splitlines()[-1].startswith(f"Left out for the budget of {budget} tokens: ")
        page = as_json(repo, "--budget", str(budget))
        shown = {key: len(page[key]) for key in ("entities", "beliefs", "observations")}
        assert all(shown[k] + page["omitted"][k] == len(everything[k]) for k in shown), (budget, page)
        assert len(fact_lines(block)) == sum(len(e["fields"]) for e in page["entities"]) + shown["beliefs"] + shown["observations"]
        if budget == 64:  # room for the header and the last line only
            assert page["omitted"] == {"entities": 3, "beliefs": 2, "observations": 6}
    for budget in ("0", "100001"):
        proc = repo.obsrepo("recall", "--budget", budget, "--format", "json")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        error = json.loads(proc.stdout)["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == "--budget", error


def test_every_fact_line_cites_an_observation_that_show_resolves(repos):
    repo = repos["crowded"]
    block = recall(repo, "--text", "acme")
    cited = {}
    for line in fact_lines(block):
        found = CITATION.findall(line)
        assert found, line
        cited.update(found)
    assert len(cited) >= 5
    for observation_id, commit in sorted(cited.items()):
        proc = repo.obsrepo("show", observation_id, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        shown = json.loads(proc.stdout)
        assert shown["id"] == observation_id and shown["commit"].startswith(commit)
    page = as_json(repo, "--text", "acme")
    for entity in page["entities"]:
        assert all(len(f["commit"]) == 40 and cited[f["observation_id"]] == f["commit"][:12] for f in entity["fields"])


def normalized(text: str) -> str:
    """The block without its commits (the two repositories' commits differ)."""
    return re.sub(r"[0-9a-f]{40}|(?<=@)[0-9a-f]{12}\b|(?<=Recall at )[0-9a-f]{12}", "C", text)


def test_a_bound_caller_sees_no_trace_of_another_tenant(repos):
    crowded, alone = repos["crowded"], repos["alone"]
    for args in (("--text", "invoice paid"), ("--scope", "crm", "--budget", "120"), ("--entity", "company/acme")):
        bound = recall(crowded, *args, "--tenant", "org=northwind")
        assert "globex" not in bound.lower() and "gx-secret" not in bound and "obs-20260214" not in bound
        # not even a count: the block equals the one of a repository that holds northwind's rows only
        assert normalized(bound) == normalized(recall(alone, *args, "--tenant", "org=northwind")), args
    proc = crowded.obsrepo("recall", "--entity", "company/gx-secret", "--tenant", "org=northwind", "--format", "json")
    assert proc.returncode == 3 and json.loads(proc.stdout)["error"]["code"] == "ENTITY_NOT_FOUND", proc.stdout


def test_nothing_above_the_ceiling_is_recalled(repos):
    repo = repos["crowded"]
    assert '- status: "paid" — obs-20260212-090000-0003@' in recall(repo, "--entity", "invoice/inv-1")
    internal = recall(repo, "--entity", "invoice/inv-1", "--text", "paid", "--max-classification", "internal")
    assert "obs-20260212-090000-0003" not in internal
    assert '- status: "issued" — obs-20260209-090000-0004@' in internal


def fields_of(page: dict[str, Any], entity: str) -> dict[str, tuple[Any, str]]:
    (found,) = [e for e in page["entities"] if e["entity_id"] == entity]
    return {f["field"]: (f["value"], f["observation_id"]) for f in found["fields"]}


def test_snapshots_come_from_the_index_only_when_the_caller_is_shown_every_row(repos):
    """The index's stored snapshots were reduced from every tenant's rows at the indexed commit:
    a caller from whom anything is withheld (a binding, a ceiling, an expired row) gets its
    entities reduced from the rows it sees."""
    crowded, expiring = repos["crowded"], repos["expiring"]
    # nothing withheld: the stored snapshot, every tenant's latest (globex's view of acme)
    assert fields_of(as_json(crowded, "--entity", "company/acme"), "company/acme")["status"] == \
        ("globex-view", "obs-20260214-090000-0006")
    bound = as_json(crowded, "--entity", "company/acme", "--tenant", "org=northwind")
    assert fields_of(bound, "company/acme")["status"] == ("customer", "obs-20260211-090000-0002")
    # invoice/inv-1's stored status is "paid", by the confidential obs-…-0003
    ceilinged = as_json(crowded, "--entity", "invoice/inv-1", "--max-classification", "internal")
    assert fields_of(ceilinged, "invoice/inv-1")["status"] == ("issued", "obs-20260209-090000-0004")
    expired = as_json(expiring, "--entity", "invoice/inv-1")
    assert fields_of(expired, "invoice/inv-1")["status"] == ("issued", "obs-20260209-090000-0004")


def test_the_mcp_tool_and_prompt_answer_as_the_command_line(repos):
    repo = repos["crowded"]
    args = ("--text", "invoice paid", "--budget", "300", "--tenant", "org=northwind")
    markdown, page = recall(repo, *args), as_json(repo, *args)
    with start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(stdio_session(repo, "--tenant", "org=northwind")) as session:
        arguments = {"text": "invoice paid", "budget": 300}
        as_tool = portal.call(session.call_tool, "recall", {**arguments, "format": "json"})
        assert not as_tool.is_error and as_tool.structured_content == page == json.loads(as_tool.content[0].text)
        text = portal.call(session.call_tool, "recall", arguments)
        assert text.content[0].text == markdown and text.structured_content is None
        (listed,) = portal.call(session.list_prompts).prompts
        assert listed.name == "recall" and {a.name for a in listed.arguments} >= {"entity_ids", "scope_ids", "text", "budget"}
        prompt = portal.call(session.get_prompt, "recall", {"text": "invoice paid", "budget": "300"})
        (message,) = prompt.messages
        assert message.role == "user" and message.content.text == markdown
        named = portal.call(session.get_prompt, "recall", {"entity_ids": "company/acme, invoice/inv-1"})
        assert named.messages[0].content.text == recall(repo, "--entity", "company/acme", "--entity", "invoice/inv-1",
                                                         "--tenant", "org=northwind")
        refused = portal.call(session.call_tool, "recall", {"budget": 0})
        assert refused.is_error and json.loads(refused.content[0].text)["error"]["details"]["parameter"] == "budget"
        with pytest.raises(Exception, match="budget"):
            portal.call(session.get_prompt, "recall", {"budget": "10"})


def test_at_a_pull_requests_head_untouched_entities_read_as_their_snapshots(repos):
    """A commit off the indexed chain that only adds a row: the entity it touches is reduced,
    the others may come from the index's own snapshots (`stored_fresh`); either way each one's
    fields are its snapshot at that commit."""
    repo = repos["crowded"]
    repo.obsrepo("index")
    repo.git("checkout", "-q", "-b", "recall-pr")
    repo.add(observation("obs-20260215-090000-0007", event="INV-1 due date set", entity="invoice/inv-1", tenant=NW,
                         fields={"due": "2026-03-01"}, scope=["billing"]))
    head = repo.commit("a pull request's observation")
    repo.git("checkout", "-q", "-")
    page = as_json(repo, "--entity", "company/acme", "--entity", "invoice/inv-1", "--at", head)
    for entity in ("company/acme", "invoice/inv-1"):
        proc = repo.obsrepo("snapshot", entity, "--at", head, "--format", "json")
        snap = json.loads(proc.stdout)
        assert fields_of(page, entity) == {name: (value, snap["provenance"][name]) for name, value in snap["snapshot"].items()}
    assert fields_of(page, "invoice/inv-1")["due"] == ("2026-03-01", "obs-20260215-090000-0007")
    assert fields_of(page, "company/acme")["status"] == ("globex-view", "obs-20260214-090000-0006")


def test_a_kept_open_reader_answers_every_block_as_a_fresh_command_does(repos):
    """A kept-open reader (the library's, the MCP server's) keeps what one block learned for the
    next (which entities are most recently observed, per view and scopes): blocks asked in any
    order, bound or not, scoped or not, at another commit or under a ceiling, equal the command
    line's."""
    from obsrepo.ops import Recall, Session, run
    from obsrepo.ops.values import Binding

    repo = repos["crowded"]
    first = repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    asked = [(("--scope", "crm"), Recall(scopes=("crm",))), ((), Recall()), (("--text", "invoice paid"), Recall(text="invoice paid")),
             (("--scope", "billing", "--text", "acme"), Recall(scopes=("billing",), text="acme")),
             (("--max-classification", "internal"), Recall(max_classification="internal")),
             (("--at", first), Recall(at=first)), ((), Recall()), (("--scope", "crm"), Recall(scopes=("crm",)))]
    for tenant in (None, "org=northwind"):
        binding = Binding.of(dict([tenant.split("=")]) if tenant else {})
        session = Session(str(repo.path), binding=binding)
        session.keep_open()
        try:
            for order in (asked, list(reversed(asked))):
                for args, request in order:
                    expected = as_json(repo, *args, *(("--tenant", tenant) if tenant else ()))
                    assert run(session, request).to_json() == expected, (tenant, args)
        finally:
            session.close()

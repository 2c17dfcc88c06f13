"""The stewardship tools of `obsrepo mcp` (record_feedback, update_comprehension), driven by the
MCP SDK's own client over stdio against a spawned server: each accepted call is one commit on
the proposal branch, nothing else moves, and every refusal is an error result that writes
nothing."""

from __future__ import annotations

from typing import Any

import anyio
from helpers import PROPOSALS, Repo, check_branch, comprehension, fingerprint, observation
from test_mcp import call, failure, stdio_session

NORTH = {"org": "northwind"}
FIRST = observation("obs-20260301-090000-0001", tenant=NORTH, type="printer.jam", event="printer jammed in the lab",
                    body="the printer jammed")
SECOND = observation("obs-20260302-090000-0002", tenant=NORTH, type="printer.jam", event="printer jammed again",
                     body="the printer jammed")
GLOBEX = observation("obs-20260303-090000-0003", tenant={"org": "globex"}, type="note", event="globex printer",
                     body="the printer of globex")
BELIEF = "comp-lab-printer"


def printers(make_repo: Any) -> Repo:
    repo = make_repo()
    repo.add(FIRST, SECOND, GLOBEX, comprehension(BELIEF, [FIRST.id], domain="office"),
             comprehension("comp-globex", [GLOBEX.id], domain="office"))
    repo.commit("printers")
    return repo


async def record_feedback(client: Any, **arguments: Any) -> Any:
    """`call` for record_feedback, whose `session` argument is also `call`'s first parameter."""
    result = await client.call_tool("record_feedback", arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def weight_of(session: Any, obs_id: str) -> float:
    page = await call(session, "observation_query", mode="json", text="printer jammed")
    return next(r["weight"] for r in page["observations"] if r["id"] == obs_id)


def test_the_tools_are_listed_as_tools_that_add(make_repo):
    repo = printers(make_repo)

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("record_feedback", "update_comprehension"):
                tool = tools[name]
                assert tool.annotations.read_only_hint is False and tool.annotations.destructive_hint is False
                assert tool.input_schema["additionalProperties"] is False and "tenant" not in tool.input_schema["properties"]
                assert len(tool.description) > 60
            assert tools["record_feedback"].input_schema["required"] == ["observation_id", "outcome"]

    anyio.run(scenario)


def test_feedback_and_a_belief_update_are_commits_on_the_proposal_branch(make_repo):
    repo = printers(make_repo)
    before = fingerprint(repo)

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            assert await weight_of(session, FIRST.id) == 1.0
            fed = await record_feedback(session, observation_id=FIRST.id, outcome="misleading", session="s-9")
            assert fed["branch"] == PROPOSALS and fed["commit"] == repo.sha(PROPOSALS)
            assert repo.git("rev-parse", f"{PROPOSALS}^") == repo.sha("main")
            doc = repo.git("show", f"{PROPOSALS}:{fed['path']}")
            assert f"target: {FIRST.id}" in doc and "outcome: misleading" in doc and "session: s-9" in doc
            assert "org: northwind" in doc and f"id: {fed['id']}" in doc
            assert "Obsrepo-Tool: feedback" in repo.git("log", "-1", "--format=%B", PROPOSALS)

            updated = await call(session, "update_comprehension", comprehension_id=BELIEF, observation_id=SECOND.id,
                                 effect="confirm")
            assert {k: updated[k] for k in ("version", "previous_confidence", "confidence", "changed")} == \
                {"version": 2, "previous_confidence": "medium", "confidence": "high", "changed": True}
            assert updated["commit"] == repo.sha(PROPOSALS) and repo.git("rev-parse", f"{PROPOSALS}^") == fed["commit"]
            text = repo.git("show", f"{PROPOSALS}:comprehension/{BELIEF}.md")
            assert "version: 2" in text and f"Observation {SECOND.id} (printer.jam) changed confidence from medium to high" in text
            again = await call(session, "update_comprehension", comprehension_id=BELIEF, observation_id=SECOND.id,
                               effect="confirm")
            assert again["changed"] is False and again["commit"] is None and repo.sha(PROPOSALS) == updated["commit"]
            contra = await call(session, "update_comprehension", comprehension_id=BELIEF, observation_id=GLOBEX.id,
                                effect="contradict", statement="The lab printer works", reasoning="fixed")
            assert (contra["version"], contra["confidence"]) == (3, "medium")
            assert fingerprint(repo) == before  # nothing but the proposal branch moved
            assert await weight_of(session, FIRST.id) == 1.0  # not merged yet

            repo.git("merge", "-q", "--ff-only", PROPOSALS)  # the server follows HEAD
            assert abs(await weight_of(session, FIRST.id) - 0.85) < 1e-9
            assert repo.read(f"comprehension/{BELIEF}.md") == repo.git("show", f"{contra['commit']}:comprehension/{BELIEF}.md") + "\n"

    anyio.run(scenario)
    check_branch(repo, base=repo.sha("main~3"))


def test_refused_calls_are_error_results_and_write_nothing(make_repo):
    repo = printers(make_repo)
    missing = "obs-20260309-090000-0404"

    async def scenario() -> None:
        async with stdio_session(repo, "--tenant", "org=northwind") as session:
            fed = await call(session, "record_feedback", observation_id=FIRST.id, outcome="accepted")
            tip = fed["commit"]
            refusals = [
                ("REF_NOT_FOUND", "record_feedback", {"observation_id": missing, "outcome": "accepted"}),
                ("REF_NOT_FOUND", "record_feedback", {"observation_id": GLOBEX.id, "outcome": "accepted"}),  # another tenant's
                ("VALIDATION_ERROR", "record_feedback", {"observation_id": FIRST.id, "outcome": "loved"}),
                ("VALIDATION_ERROR", "record_feedback", {"observation_id": FIRST.id, "outcome": "accepted",
                                                         "tenant": "org=globex"}),
                ("VALIDATION_ERROR", "record_feedback", {"observation_id": FIRST.id, "outcome": "accepted", "branch": "x"}),
                ("REF_NOT_FOUND", "update_comprehension", {"comprehension_id": BELIEF, "observation_id": GLOBEX.id,
                                                           "effect": "confirm"}),
                ("REF_NOT_FOUND", "update_comprehension", {"comprehension_id": "comp-globex", "observation_id": FIRST.id,
                                                           "effect": "confirm"}),  # cites what the binding cannot see
                ("REF_NOT_FOUND", "update_comprehension", {"comprehension_id": "comp-nope", "observation_id": FIRST.id,
                                                           "effect": "confirm"}),
                ("VALIDATION_ERROR", "update_comprehension", {"comprehension_id": BELIEF, "observation_id": SECOND.id,
                                                              "effect": "contradict"}),  # no statement
                ("VALIDATION_ERROR", "update_comprehension", {"comprehension_id": "../etc/passwd", "observation_id": SECOND.id,
                                                              "effect": "confirm"}),
                ("VALIDATION_ERROR", "update_comprehension", {"comprehension_id": BELIEF, "observation_id": SECOND.id,
                                                              "effect": "confirm", "tenant": "org=northwind"}),
            ]
            for code, tool, arguments in refusals:
                error = await failure(session, tool, **arguments)
                assert error["code"] == code, (tool, arguments, error)
                assert GLOBEX.path not in error["message"], error
            assert repo.sha(PROPOSALS) == tip
            assert "tenant binding" in (await failure(session, "record_feedback", observation_id=FIRST.id,
                                                      outcome="accepted", tenant="org=globex"))["message"]

    anyio.run(scenario)
    check_branch(repo)

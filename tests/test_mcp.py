"""`obsrepo mcp`, driven by the MCP SDK's own client: a spawned server over stdio and over
streamable HTTP, in a real repository (the project's demo data, copied and committed).

Every read tool's answer is compared with the same question asked through the CLI; failures
are results with isError and the error envelope; hostile arguments never crash the protocol;
a tenant-bound server sees nothing of another tenant; a commit made while the server runs is
visible at the next call; HTTP refuses a foreign Origin and an unguarded public address.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import Repo, observation, stop
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
READ_TOOLS = {"observation_query", "retrieve_entity_snapshot", "retrieve_field_provenance", "retrieve_entities",
              "retrieve_entity_by_identifier", "list_observations", "list_relationships", "retrieve_related_entities",
              "list_timeline_events", "retrieve_entity_history", "check_document", "recall", "list_identity_candidates",
              "retrieve_field_intervals", "list_contested"}
WRITE_TOOLS = {"record_observation", "correct_field", "retract_observation", "create_relationship", "merge_entities",
               "record_feedback", "update_comprehension", "declare_distinct"}


def demo(make_repo: Callable[..., Repo]) -> Repo:
    """A repository holding the project's demo data, committed (two tenants: globex, northwind)."""
    repo = make_repo()
    for folder in ("observations", "comprehension", "schemas/entities"):
        shutil.copytree(ROOT / folder, repo.path / folder)
    repo.commit("demo data")
    return repo


@pytest.fixture(scope="module")
def demo_repo(make_module_repo: Callable[..., Repo]) -> Repo:
    """The demo repository (and its index) shared by the tests that commit nothing to it."""
    return demo(make_module_repo)


def cli(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def cli_json(repo: Repo, *args: str) -> Any:
    return json.loads(cli(repo, *args, "--format", "json"))


@asynccontextmanager
async def stdio_session(repo: Repo, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", "mcp", *args], cwd=str(repo.path),
                                   env={**repo.env, **(env or {})})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A successful answer: the structured content, checked to be the same JSON as the text."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text
    assert not result.is_error, text
    if result.structured_content is not None:
        assert json.loads(text) == result.structured_content
        return result.structured_content
    return text


async def failure(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A failed answer: isError, and the text is the error envelope (never a traceback)."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text
    assert result.is_error, text
    assert "Traceback" not in text
    error = json.loads(text)["error"]
    assert set(error) == {"code", "message", "details"}
    return error


def test_tools_are_listed_with_closed_bounded_schemas(demo_repo):
    repo = demo_repo

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS | WRITE_TOOLS
            for tool in tools.values():
                schema = tool.input_schema
                assert schema["type"] == "object" and schema["additionalProperties"] is False, tool.name
                assert "tenant" not in schema["properties"] and "branch" not in schema["properties"]
                assert tool.description and len(tool.description) > 60, tool.name
                assert tool.annotations.read_only_hint is (tool.name in READ_TOOLS), tool.name
                assert tool.annotations.destructive_hint is False and tool.annotations.open_world_hint is False
                assert tool.annotations.idempotent_hint is (tool.name in READ_TOOLS), tool.name
                for name, spec in schema["properties"].items():
                    if spec.get("type") == "integer":
                        assert "minimum" in spec and "maximum" in spec, (tool.name, name)
                    if spec.get("type") == "string":
                        assert "maxLength" in spec or "enum" in spec, (tool.name, name)
                    if spec.get("type") == "object":
                        assert "maxProperties" in spec, (tool.name, name)
                    if name in ("limit",):
                        assert (spec["minimum"], spec["maximum"]) == (1, 1000)
            assert tools["retrieve_entity_snapshot"].input_schema["required"] == ["entity_id"]

    anyio.run(scenario)


def test_the_instructions_name_every_write_tool_the_server_lists(demo_repo):
    repo = demo_repo

    async def scenario() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", "mcp"], cwd=str(repo.path), env=repo.env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            started = await session.initialize()
            writers = {t.name for t in (await session.list_tools()).tools if not t.annotations.read_only_hint}
            assert writers == WRITE_TOOLS
            named = set(started.instructions.replace(",", " ").split())
            assert writers <= named, writers - named

    anyio.run(scenario)


def test_every_read_tool_answers_as_the_cli_does(make_repo):
    repo = demo(make_repo)
    first = repo.sha()
    repo.add(observation("obs-20260601-090000-0001", entity="company/acme-corp", fields={"office_count": 400}, priority=500,
                         source="agent:test", event="Acme grew"))
    repo.commit("acme grew")

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            # observation_query: the text of `query` in each mode
            short = await call(session, "observation_query", limit=5)
            assert short == cli(repo, "query", "--limit", "5").rstrip("\n")
            full = await call(session, "observation_query", scopeIds=["task/42"], mode="full")
            assert full == cli(repo, "query", "--scope", "task/42", "--format", "full").rstrip("\n")
            page = await call(session, "observation_query", mode="json", source="agent:", limit=7, offset=2)
            assert page == cli_json(repo, "query", "--source", "agent:", "--limit", "7", "--offset", "2")
            assert page["total"] > 0 and len(page["observations"]) == 7
            dated = await call(session, "observation_query", mode="json", afterDate="2026-03-01",
                               beforeDate=1775001600000)  # 2026-04-01T00:00:00Z in unix ms
            assert dated == cli_json(repo, "query", "--after", "2026-03-01", "--before", "2026-04-01T00:00:00Z")
            searched = await call(session, "observation_query", mode="json", text="invoice", limit=3)
            assert searched == cli_json(repo, "query", "--text", "invoice", "--limit", "3")
            empty = await call(session, "observation_query", type="no.such.type")
            assert empty == "No observations found."
            then = await call(session, "observation_query", mode="json", entity="company/acme-corp", at=first)
            assert then == cli_json(repo, "query", "--entity", "company/acme-corp", "--at", first)

            snap = await call(session, "retrieve_entity_snapshot", entity_id="company/acme-corp")
            assert snap == cli_json(repo, "snapshot", "company/acme-corp")
            assert snap["snapshot"]["office_count"] == 400
            old = await call(session, "retrieve_entity_snapshot", entity_id="company/acme-corp", at=first, explain=True,
                             as_of="2026-05-01")
            assert old == cli_json(repo, "snapshot", "company/acme-corp", "--at", first, "--explain", "--as-of", "2026-05-01")
            field = sorted(snap["snapshot"])[0]
            assert await call(session, "retrieve_field_provenance", entity_id="company/acme-corp", field=field) == \
                cli_json(repo, "provenance", "company/acme-corp", field)
            assert await call(session, "retrieve_entities", entity_type="company", limit=2, offset=1) == \
                cli_json(repo, "entities", "--type", "company", "--limit", "2", "--offset", "1")
            assert await call(session, "retrieve_entity_by_identifier", identifier="ACME corp") == \
                cli_json(repo, "find", "ACME corp")
            assert await call(session, "list_observations", entity_id="company/acme-corp", limit=3) == \
                cli_json(repo, "observations", "company/acme-corp", "--limit", "3")
            assert await call(session, "list_relationships", entity_id="company/initech", direction="inbound",
                              relationship_types=["PART_OF"]) == \
                cli_json(repo, "relations", "company/initech", "--direction", "in", "--relation", "PART_OF")
            related = await call(session, "retrieve_related_entities", entity_id="task/42", max_hops=2)
            assert related == cli_json(repo, "related", "task/42", "--hops", "2")
            assert related["total_entities"] > 0
            bare = await call(session, "retrieve_related_entities", entity_id="task/42", max_hops=2, include_entities=False)
            assert [e["entity_id"] for e in bare["entities"]] == [e["entity_id"] for e in related["entities"]]
            assert all("snapshot" not in e for e in bare["entities"])
            assert await call(session, "list_timeline_events", entity_id="company/acme-corp", after="2026-02-01", limit=5) == \
                cli_json(repo, "timeline", "--entity", "company/acme-corp", "--after", "2026-02-01", "--limit", "5")
            assert await call(session, "retrieve_entity_history", entity_id="company/acme-corp") == \
                cli_json(repo, "history", "company/acme-corp")

    anyio.run(scenario)


def test_check_document_reports_what_check_would_and_writes_nothing(demo_repo):
    repo = demo_repo
    existing = next(p for p in sorted((repo.path / "observations").rglob("*.md")))
    existing_id = existing.stem
    fresh = observation("obs-20260601-090000-0002", entity="company/acme-corp", fields={"phone": "+44 20 0000"})
    clash = observation(existing_id, timestamp="2026-06-01T09:00:00Z", event="same id, other content")
    dangling = observation("obs-20260601-090000-0003", corrects=["obs-20990101-000000-dead"], entity="company/acme-corp",
                           fields={"phone": "x"})
    broken = "---\nspec: observation/v1\nid: obs-20260601-090000-0004\nsurprise: 1\n---\n"
    status_before = repo.git("status", "--porcelain")

    async def scenario() -> dict[str, Any]:
        async with stdio_session(repo) as session:
            answers = {name: await call(session, "check_document", text=text)
                       for name, text in (("fresh", fresh), ("clash", clash), ("dangling", dangling), ("broken", broken))}
            answers["itself"] = await call(session, "check_document", text=existing.read_text("utf-8"))
            return answers

    answers = anyio.run(scenario)
    assert repo.git("status", "--porcelain") == status_before  # nothing written
    assert answers["fresh"] == {"ok": True, "checked": 1, "issues": []}
    assert answers["itself"] == {"ok": True, "checked": 1, "issues": []}
    for name, doc in (("clash", clash), ("dangling", dangling)):
        assert not answers[name]["ok"]
        repo.write(doc.path, doc)  # the same document, really added: `check` says the same about it
        expected = repo.check(doc.path).data
        (repo.path / doc.path).unlink()
        assert answers[name] == expected, name
    assert {i["code"] for i in answers["clash"]["issues"]} == {"DUPLICATE_ID"}
    assert {i["code"] for i in answers["dangling"]["issues"]} == {"REF_NOT_FOUND"}
    assert {i["rule"] for i in answers["broken"]["issues"]} >= {"unknown-key"}


def test_failures_are_error_results_and_hostile_arguments_never_break_the_session(demo_repo):
    repo = demo_repo

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            missing = await failure(session, "retrieve_entity_snapshot", entity_id="company/nobody")
            assert missing["code"] == "ENTITY_NOT_FOUND" and missing["details"] == {"entity": "company/nobody"}
            assert (await failure(session, "retrieve_field_provenance", entity_id="company/acme-corp",
                                  field="no_such_field"))["code"] == "FIELD_NOT_FOUND"
            assert (await failure(session, "retrieve_entity_history", entity_id="company/nobody"))["code"] == "ENTITY_NOT_FOUND"
            assert (await failure(session, "observation_query", at="no-such-branch"))["code"] == "REF_NOT_FOUND"
            hostile = [
                ("observation_query", {"limit": 10**12}, "limit"),
                ("observation_query", {"limit": 0}, "limit"),
                ("observation_query", {"offset": -1}, "offset"),
                ("observation_query", {"limit": "20"}, "limit"),
                ("observation_query", {"limit": True}, "limit"),
                ("observation_query", {"scopeIds": "task/42"}, "scopeIds"),
                ("observation_query", {"mode": "xml"}, "mode"),
                ("observation_query", {"afterDate": "yesterday"}, "afterDate"),
                ("observation_query", {"afterDate": 10**20}, "afterDate"),
                ("observation_query", {"tenant": {"org": "northwind"}}, "tenant"),
                ("observation_query", {"org": "northwind"}, "org"),
                ("retrieve_entity_snapshot", {"entity_id": "company/acme-corp", "explain": "yes"}, "explain"),
                ("retrieve_entity_snapshot", {"entity_id": "x" * 100_000}, "entity_id"),
                ("retrieve_entity_snapshot", {"entity_id": "company/a\u0000b"}, "entity_id"),
                ("retrieve_entity_snapshot", {}, "entity_id"),
                ("retrieve_related_entities", {"entity_id": "task/42", "max_hops": 10**9}, "max_hops"),
                ("list_relationships", {"entity_id": "task/42", "direction": "sideways"}, "direction"),
                ("list_timeline_events", {"after": "13/01/2026"}, "after"),
                ("retrieve_entities", {"limit": 1.5}, "limit"),
                ("no_such_tool", {}, "name"),
            ]
            for tool, arguments, parameter in hostile:
                error = await failure(session, tool, **arguments)
                assert error["code"] == "VALIDATION_ERROR", (tool, arguments, error)
                assert error["details"].get("parameter") == parameter, (tool, arguments, error)
            tenant = await failure(session, "observation_query", tenant="org=globex")
            assert "server's configuration" in tenant["message"]
            # the session still answers
            assert (await call(session, "observation_query", mode="json", limit=1))["total"] > 0

    anyio.run(scenario)


def _entity_ids(repo: Repo, *tenant: str) -> set[str]:
    return {e["entity_id"] for e in cli_json(repo, "entities", "--limit", "1000", *tenant)["entities"]}


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_tenant_bound_server_sees_nothing_of_another_tenant(demo_repo, how):
    repo = demo_repo
    everything = _entity_ids(repo)
    globex = _entity_ids(repo, "--tenant", "org=globex")
    hidden = sorted(everything - globex)
    assert globex and hidden
    northwind_obs = cli_json(repo, "query", "--tenant", "org=northwind", "--limit", "1")["observations"][0]
    args, env = (("--tenant", "org=globex"), None) if how == "option" else ((), {"OBSREPO_TENANT": "org=globex"})

    async def scenario() -> None:
        async with stdio_session(repo, *args, env=env) as session:
            page = await call(session, "observation_query", mode="json", limit=1000)
            assert page == cli_json(repo, "query", "--tenant", "org=globex", "--limit", "1000")
            assert page["total"] < cli_json(repo, "query", "--limit", "1")["total"]
            assert all(r["tenant"].get("org") == "globex" for r in page["observations"])
            searched = await call(session, "observation_query", mode="json", text=northwind_obs["event"])
            assert all(r["tenant"].get("org") == "globex" for r in searched["observations"])
            listed = await call(session, "retrieve_entities", limit=1000)
            assert {e["entity_id"] for e in listed["entities"]} == globex and listed["total"] == len(globex)
            for entity in hidden[:5]:
                error = await failure(session, "retrieve_entity_snapshot", entity_id=entity)
                assert error == {"code": "ENTITY_NOT_FOUND", "message": f"entity '{entity}' does not exist",
                                 "details": {"entity": entity}}
                assert (await failure(session, "list_observations", entity_id=entity))["code"] == "ENTITY_NOT_FOUND"
                assert (await call(session, "list_relationships", entity_id=entity))["total"] == 0
            # a correction of the other tenant's observation reads as a correction of nothing
            probe = observation("obs-20260601-090000-0005", corrects=[northwind_obs["id"]], tenant={"org": "globex"},
                                entity="company/probe", fields={"x": 1})
            checked = await call(session, "check_document", text=probe)
            assert [i["code"] for i in checked["issues"]] == ["REF_NOT_FOUND"]
            assert northwind_obs["path"] not in json.dumps(checked)
            refused = await failure(session, "observation_query", tenant="org=northwind")
            assert refused["code"] == "VALIDATION_ERROR"

    anyio.run(scenario)


def test_an_empty_tenant_binding_is_refused_at_start(demo_repo):
    repo = demo_repo
    proc = subprocess.run([sys.executable, "-m", "obsrepo", "mcp"], cwd=repo.path, env={**repo.env, "OBSREPO_TENANT": ""},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2 and "OBSREPO_TENANT" in proc.stderr


def test_a_commit_made_while_the_server_runs_is_seen_at_the_next_call(make_repo):
    repo = demo(make_repo)

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            before = await call(session, "observation_query", mode="json", limit=1)
            with_missing = await failure(session, "retrieve_entity_snapshot", entity_id="company/newco")
            assert with_missing["code"] == "ENTITY_NOT_FOUND"
            for n in range(2):  # twice: the second update starts from the first one's generation
                repo.add(observation(f"obs-20261201-10000{n}-0001", entity="company/newco", fields={"round": n},
                                     event=f"NewCo round {n}"))
                head = repo.commit(f"newco {n}")
                after = await call(session, "observation_query", mode="json", limit=1)
                assert after["total"] == before["total"] + n + 1
                assert after["at_commit"] == head
                assert after["observations"][0]["event"] == f"NewCo round {n}"
                snap = await call(session, "retrieve_entity_snapshot", entity_id="company/newco")
                assert snap["snapshot"]["round"] == n
            # HEAD moving backwards is followed too
            repo.git("reset", "-q", "--hard", "HEAD~2")
            assert (await call(session, "observation_query", mode="json", limit=1))["total"] == before["total"]

    anyio.run(scenario)


def test_concurrent_calls_are_answered_and_a_commit_among_them_is_followed(make_repo):
    repo = demo(make_repo)
    expected = cli_json(repo, "snapshot", "company/initech")

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            answers: list[Any] = []

            async def ask(tool: str, **arguments: Any) -> None:
                answers.append(await call(session, tool, **arguments))

            async with anyio.create_task_group() as group:
                for _ in range(12):
                    group.start_soon(lambda: ask("retrieve_entity_snapshot", entity_id="company/initech"))
                    group.start_soon(lambda: ask("observation_query", mode="json", limit=1))
            assert [a for a in answers if "snapshot" in a] == [expected] * 12
            repo.add(observation("obs-20261201-110000-0001", event="while many ask"))
            head = repo.commit("while many ask")
            answers.clear()
            async with anyio.create_task_group() as group:
                for _ in range(12):
                    group.start_soon(lambda: ask("observation_query", mode="json", limit=1))
            assert {a["at_commit"] for a in answers} == {head}
            assert {a["observations"][0]["event"] for a in answers} == {"while many ask"}

    anyio.run(scenario)


# -- streamable HTTP ------------------------------------------------------------------------------

class HttpServer:
    def __init__(self, repo: Repo, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "mcp", "--transport", "http", "--port", "0", *args],
                                     cwd=repo.path, env={**repo.env, **(env or {})}, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "serving http://" in line, line + self.proc.stderr.read()
        self.url = line.split("serving ", 1)[1].split()[0]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def close(self) -> None:
        stop(self.proc)


def raw_post(url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_http_serves_the_tools_and_refuses_a_foreign_origin(demo_repo):
    repo = demo_repo
    server = HttpServer(repo)
    try:
        async def scenario() -> None:
            async with streamable_http_client(server.url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS | WRITE_TOOLS
                assert await call(session, "retrieve_entity_snapshot", entity_id="company/initech") == \
                    cli_json(repo, "snapshot", "company/initech")
                assert await call(session, "observation_query", limit=3) == cli(repo, "query", "--limit", "3").rstrip("\n")
                assert (await failure(session, "retrieve_entities", limit=5000))["code"] == "VALIDATION_ERROR"

        anyio.run(scenario)
        status, body = raw_post(server.url, {"Origin": "http://evil.example"})
        assert status == 403 and json.loads(body)["error"]["code"] == "VALIDATION_ERROR"
        status, _ = raw_post(server.url, {"Origin": f"http://evil.example:{server.port}"})
        assert status == 403
        status, _ = raw_post(server.url, {"Host": f"evil.example:{server.port}"})
        assert status == 421
        status, _ = raw_post(server.url, {"Origin": f"http://localhost:{server.port}"})
        assert status == 200
    finally:
        server.close()


def test_a_public_address_needs_a_token_and_every_request_carries_it(demo_repo):
    repo = demo_repo
    env = {k: v for k, v in repo.env.items() if k != "OBSREPO_MCP_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "obsrepo", "mcp", "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
                          cwd=repo.path, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "OBSREPO_MCP_TOKEN" in proc.stderr
    empty = subprocess.run([sys.executable, "-m", "obsrepo", "mcp", "--transport", "http", "--host", "0.0.0.0"],
                           cwd=repo.path, env={**env, "OBSREPO_MCP_TOKEN": " "}, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
    assert empty.returncode == 2, empty.stderr

    token = "s3cret-" + os.urandom(8).hex()
    server = HttpServer(repo, "--host", "0.0.0.0", env={"OBSREPO_MCP_TOKEN": token})
    try:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert raw_post(url, {})[0] == 401
        assert raw_post(url, {"Authorization": "Bearer wrong"})[0] == 401
        assert raw_post(url, {"Authorization": f"Bearer {token}"})[0] == 200

        async def scenario() -> None:
            import httpx2

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client, \
                    streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                page = await call(session, "observation_query", mode="json", limit=2)
                assert page == cli_json(repo, "query", "--limit", "2")

        anyio.run(scenario)
    finally:
        server.close()

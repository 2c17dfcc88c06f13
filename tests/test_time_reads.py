"""Valid time (docs/design.md §19) on the list, graph and search reads: `entities`, `find`,
`relations`, `related` and `recall` take --as-of (MCP `as_of`, `Repository` parameter) with snapshot's
meaning; without it a period counts where it holds the committer time of the commit asked
about. A bound caller sees nothing of another tenant's period."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, hermetic, observation
from test_time import committed_in_march

NORTHWIND = {"org": "northwind"}
GLOBEX = {"org": "globex"}
IN_MARCH, IN_MAY, IN_FEB = "2026-03-15T00:00:00Z", "2026-05-15T00:00:00Z", "2026-02-01T00:00:00Z"

DOCS = [
    observation("obs-20260101-000000-0001", entity="company/acme", fields={"name": "Acme Corp"}, source="agent/crm",
                tenant=NORTHWIND),
    observation("obs-20260102-000000-0002", entity="person/bob", fields={"name": "Bob"}, source="agent/crm",
                relations=[{"type": "REFERS_TO", "target": "company/acme"}], tenant=NORTHWIND,
                valid={"from": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"}),
    observation("obs-20260103-000000-0003", entity="company/acme", fields={"name": "Acme Renamed Ltd"},
                source="agent/globex", tenant=GLOBEX, valid={"from": "2026-05-01T00:00:00Z", "until": "2026-06-01T00:00:00Z"}),
    observation("obs-20260104-000000-0004", entity="person/eve", fields={"name": "Eve"}, source="agent/globex",
                relations=[{"type": "REFERS_TO", "target": "company/acme"}], tenant=GLOBEX,
                valid={"from": "2026-05-01T00:00:00Z", "until": "2026-06-01T00:00:00Z"}),
]


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    return committed_in_march(make_module_repo(), DOCS, "acme, bob in March, globex's May")


def _json(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _ids(answer: dict[str, Any]) -> list[str]:
    return [e["entity_id"] for e in answer["entities"]]


def test_find_matches_the_names_that_hold_then_and_summarises_as_of_then(repo: Repo) -> None:
    assert _json(repo, "find", "Acme Renamed Ltd", "--as-of", IN_FEB)["total"] == 0
    may = _json(repo, "find", "Acme Renamed Ltd", "--as-of", IN_MAY)
    assert _ids(may) == ["company/acme"] and may["entities"][0]["snapshot"] == {"name": "Acme Renamed Ltd"}
    assert _json(repo, "find", "Acme Corp", "--as-of", IN_MARCH)["entities"][0]["snapshot"] == {"name": "Acme Corp"}
    assert _json(repo, "find", "Acme Renamed Ltd")["total"] == 0  # March 10: globex's May name does not hold
    assert _json(repo, "find", "Bob", "--at", "HEAD~1")["total"] == 0  # Feb 13: Bob's period had not begun
    assert _ids(_json(repo, "find", "Bob")) == ["person/bob"]
    assert _json(repo, "find", "Acme Renamed Ltd", "--as-of", IN_MAY, "--tenant", "org=northwind")["total"] == 0


def test_entities_lists_those_observed_then(repo: Repo) -> None:
    assert _ids(_json(repo, "entities", "--type", "person", "--as-of", IN_MARCH)) == ["person/bob"]
    may = _json(repo, "entities", "--type", "person", "--as-of", IN_MAY)
    assert _ids(may) == ["person/eve"] and may["entities"][0]["snapshot"] == {"name": "Eve"}
    assert _json(repo, "entities", "--as-of", IN_MAY, "--tenant", "org=northwind")["total"] == 1  # company/acme
    assert _ids(_json(repo, "entities", "--type", "person")) == ["person/bob", "person/eve"]


def test_relations_are_those_of_the_observations_that_hold(repo: Repo) -> None:
    def sources(*args: str) -> list[str]:
        return [r["source_entity_id"] for r in _json(repo, "relations", "company/acme", *args)["relationships"]]

    assert sources("--as-of", IN_MARCH) == ["person/bob"]
    assert sources("--as-of", IN_MAY) == ["person/eve"]
    assert sources("--as-of", IN_FEB) == []
    assert sources() == ["person/bob"]  # HEAD's time, March 10
    assert sources("--at", "HEAD~1") == []  # Feb 13
    assert sources("--as-of", IN_MAY, "--tenant", "org=northwind") == []


def test_related_walks_the_graph_of_then(repo: Repo) -> None:
    march = _json(repo, "related", "company/acme", "--as-of", IN_MARCH)
    assert _ids(march) == ["person/bob"] and march["entities"][0]["snapshot"] == {"name": "Bob"}
    may = _json(repo, "related", "company/acme", "--as-of", IN_MAY)
    assert _ids(may) == ["person/eve"] and may["total_relationships"] == 1
    assert _json(repo, "related", "company/acme", "--as-of", IN_MAY, "--tenant", "org=northwind")["total_entities"] == 0
    assert _ids(_json(repo, "related", "company/acme")) == ["person/bob"]


def test_recall_reduces_and_lists_as_of_then(repo: Repo) -> None:
    def block(*args: str) -> dict[str, Any]:
        return _json(repo, "recall", "--entity", "company/acme", *args)

    def name(answer: dict[str, Any]) -> Any:
        return {line["field"]: line["value"] for line in answer["entities"][0]["fields"]}["name"]

    assert name(block("--as-of", IN_MAY)) == "Acme Renamed Ltd"
    assert name(block("--as-of", IN_MAY, "--tenant", "org=northwind")) == "Acme Corp"
    assert name(block()) == "Acme Corp"
    shown = [o["id"] for o in block("--as-of", IN_FEB)["observations"]]
    assert shown == ["obs-20260101-000000-0001"]  # the periods that had not begun are not listed
    text = repo.obsrepo("recall", "--entity", "company/acme", "--as-of", IN_MAY).stdout
    assert "Acme Renamed Ltd" in text and "obs-20260103-000000-0003@" in text


def test_the_library_takes_as_of(repo: Repo) -> None:
    from obsrepo.api import Repository

    with hermetic(repo.env):
        library = Repository(str(repo.path))
        try:
            assert _ids(library.find("Eve", as_of=IN_MAY)) == ["person/eve"]
            assert library.find("Eve")["total"] == 0
            assert library.relationships("company/acme", as_of=IN_MAY)["total"] == 1
            assert _ids(library.related("company/acme", as_of=IN_MAY)) == ["person/eve"]
            assert "Acme Renamed Ltd" in json.dumps(library.recall(entities=("company/acme",), as_of=IN_MAY))
        finally:
            library.close()


def test_mcp_tools_take_as_of_and_a_bound_server_sees_no_other_tenants_period(repo: Repo) -> None:
    pytest.importorskip("mcp")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.types import TextContent

    async def ask(env: dict[str, str]) -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", "mcp"], cwd=str(repo.path),
                                       env={**repo.env, **env})
        answers: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t.input_schema["properties"] for t in (await session.list_tools()).tools}
            answers["schemas"] = {name: "as_of" in tools[name] for name in (
                "retrieve_entities", "retrieve_entity_by_identifier", "list_relationships", "retrieve_related_entities",
                "recall")}
            for tool, arguments in (("retrieve_entities", {"entity_type": "person"}),
                                    ("retrieve_entity_by_identifier", {"identifier": "Eve"}),
                                    ("list_relationships", {"entity_id": "company/acme"}),
                                    ("retrieve_related_entities", {"entity_id": "company/acme"}),
                                    ("recall", {"entity_ids": ["company/acme"], "format": "json"})):
                result = await session.call_tool(tool, {**arguments, "as_of": IN_MAY})
                content = result.content[0]
                assert isinstance(content, TextContent) and not result.is_error, content
                answers[tool] = json.loads(content.text)
        return answers

    free = asyncio.run(ask({}))
    assert set(free["schemas"].values()) == {True}
    assert _ids(free["retrieve_entities"]) == ["person/eve"]
    assert _ids(free["retrieve_entity_by_identifier"]) == ["person/eve"]
    assert [r["source_entity_id"] for r in free["list_relationships"]["relationships"]] == ["person/eve"]
    assert _ids(free["retrieve_related_entities"]) == ["person/eve"]
    assert "Acme Renamed Ltd" in json.dumps(free["recall"])
    bound = asyncio.run(ask({"OBSREPO_TENANT": "org=northwind"}))
    assert bound["retrieve_entities"]["total"] == 0
    assert bound["retrieve_entity_by_identifier"]["total"] == 0
    assert bound["list_relationships"]["relationships"] == []
    assert bound["retrieve_related_entities"]["total_entities"] == 0
    said = json.dumps(bound["recall"])
    assert "Acme Renamed Ltd" not in said and "obs-20260103" not in said and "Eve" not in said

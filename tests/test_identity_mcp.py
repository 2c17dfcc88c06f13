"""The identity tools through the MCP SDK's own client against a spawned `obsrepo mcp`
(docs/design.md §20): `list_identity_candidates` answers as `obsrepo identities` does;
`declare_distinct` writes one DISTINCT_FROM file in one commit on the proposal branch, after
which the pair leaves the queue; a merge of entities declared distinct and a declaration
between merged entities are error results (IDENTITY_CONFLICT) that move no ref."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from helpers import Repo, fingerprint
from test_identity import PEOPLE, PERSON_SCHEMA, person_docs
from test_mcp import call, cli_json, failure, stdio_session

pytest.importorskip("mcp")

BRANCH = "obsrepo/proposals"


@pytest.fixture
def people(make_repo: Callable[..., Repo]) -> Repo:
    repo = make_repo()
    repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
    repo.add(*person_docs(PEOPLE))
    repo.commit("people")
    return repo


def _pairs(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [tuple(c["entities"]) for c in answer["candidates"]]  # type: ignore[misc]


def test_identity_tools_through_the_sdk_client(people: Repo) -> None:
    repo = people

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            listed = await call(session, "list_identity_candidates", limit=1000)
            assert listed == cli_json(repo, "identities", "--limit", "1000")
            assert ("person/p01", "person/p01-dup") in _pairs(listed)
            page = await call(session, "list_identity_candidates", entity_type="person", min_score=0.9, limit=2, offset=1)
            assert page == cli_json(repo, "identities", "--type", "person", "--min-score", "0.9", "--limit", "2",
                                    "--offset", "1")
            assert page["limit"] == 2 and page["offset"] == 1

            written = await call(session, "declare_distinct", entity_id="person/p01-dup", other_entity_id="person/p01",
                                 reason="Twins")
            assert written["branch"] == BRANCH
            assert repo.git("diff-tree", "-r", "--no-commit-id", "--name-status", written["commit"]) == \
                f"A\t{written['path']}"
            text = repo.git("show", f"{BRANCH}:{written['path']}")
            assert "type: DISTINCT_FROM" in text and "target: person/p01" in text

            await call(session, "merge_entities", from_entity_id="person/p03-dup", to_entity_id="person/p03",
                       reason="Same")
            tip, before = repo.git("rev-parse", BRANCH), fingerprint(repo, BRANCH)
            for tool, arguments in (
                    ("merge_entities", {"from_entity_id": "person/p01-dup", "to_entity_id": "person/p01", "reason": "Same"}),
                    ("merge_entities", {"from_entity_id": "person/p01", "to_entity_id": "person/p01-dup", "reason": "Same"}),
                    ("declare_distinct", {"entity_id": "person/p03", "other_entity_id": "person/p03-dup", "reason": "No"})):
                error = await failure(session, tool, **arguments)
                assert error["code"] == "IDENTITY_CONFLICT", error
                assert [i["rule"] for i in error["details"]["issues"]] == ["identity-conflict"]
            same = await failure(session, "declare_distinct", entity_id="person/p01", other_entity_id="person/p01",
                                 reason="Self")
            assert same["code"] == "VALIDATION_ERROR" and same["details"]["parameter"] == "other_entity_id", same
            assert repo.git("rev-parse", BRANCH) == tip and fingerprint(repo, BRANCH) == before

            repo.git("merge", "-q", "--ff-only", BRANCH)  # the decisions reach HEAD: the pairs leave the queue
            after = _pairs(await call(session, "list_identity_candidates", limit=1000))
            assert ("person/p01", "person/p01-dup") not in after and not any("p03" in a + b for a, b in after)
            assert set(after) == set(_pairs(listed)) - {("person/p01", "person/p01-dup"), ("person/p03", "person/p03-dup")}

    anyio.run(scenario)

"""A bound writer is judged on what its tenant can see; CI judges the whole repository
(docs/design.md §8a).

Two tenants share the entities company/x, company/y, company/p and company/q. Tenant org=b has
merged x into y and made p PART_OF q. A writer bound to org=a that merges x into y or makes q
PART_OF p clashes only with org=b's statements: it is accepted (through the CLI and through a
tenant-bound MCP server), and nothing it is told names org=b's documents; the unbound `check
--base main` on the proposal branch refuses the same proposal, where the maintainers see it. A
clash within org=a's own documents is refused, in the same words whether org=b exists or not.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from helpers import PROPOSALS, Repo, check_branch, observation
from test_mcp import call, failure, stdio_session

ENTITIES = ("company/x", "company/y", "company/p", "company/q")
A = {"org": "a"}
B = {"org": "b"}


def _facts(tenant: dict[str, str], first: int) -> list[Any]:
    return [observation(f"obs-20260213-1025{first + n:02d}-{first + n:04d}", entity=entity,
                        fields={"name": f"{entity} of {tenant['org']}"}, tenant=tenant)
            for n, entity in enumerate(ENTITIES)]


B_MERGE = observation("obs-20260213-103000-0101", entity="company/x", tenant=B, event="b merges x into y",
                      relations=[{"type": "DUPLICATE_OF", "target": "company/y"}])
B_PART = observation("obs-20260213-103000-0102", entity="company/p", tenant=B, event="b puts p in q",
                     relations=[{"type": "PART_OF", "target": "company/q"}])
B_DOCS = [*_facts(B, 10), B_MERGE, B_PART]
B_NAMES = [d.id for d in B_DOCS] + [d.path for d in B_DOCS] + ["org: b", "{org: b}"]


def _repository(make_repo: Any, name: str = "repo", *, with_b: bool = True) -> Repo:
    repo = make_repo(name)
    repo.add(*_facts(A, 0), *(B_DOCS if with_b else ()))
    repo.commit("base")
    return repo


def _write(repo: Repo, *argv: str, commit: bool = True) -> tuple[int, str, dict[str, Any]]:
    proc = repo.obsrepo(*argv, "--tenant", "org=a", *(["--commit"] if commit else []), "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout + proc.stderr, json.loads(proc.stdout)


def _unbound_check(repo: Repo, branch: str = PROPOSALS) -> list[tuple[str, str, str]]:
    where = repo.path.parent / f"{repo.path.name}-ci"
    repo.git("worktree", "add", "-q", "--detach", str(where), branch)
    try:
        return repo.check("--base", "main", cwd=where).issues
    finally:
        repo.git("worktree", "remove", "--force", str(where))


def _mentions_b(text: str) -> list[str]:
    return [name for name in B_NAMES if name in text]


@pytest.mark.parametrize("commit", [True, False], ids=["proposal", "work-tree"])
def test_a_clash_with_another_tenant_only_is_accepted_and_ci_refuses_it(make_repo, commit: bool) -> None:
    repo = _repository(make_repo)
    for argv in (["merge", "company/x", "company/y", "--reason", "same"],
                 ["relate", "company/q", "PART_OF", "company/p"]):
        code, text, out = _write(repo, *argv, commit=commit)
        assert code == 0, text
        assert not _mentions_b(text), text
        written = repo.git("show", f"{PROPOSALS}:{out['path']}") if commit else repo.read(out["path"])
        assert "org: a" in written
    if commit:
        issues = _unbound_check(repo)
    else:
        issues = repo.check().issues  # the work tree, as a pre-commit hook judges it
    codes = sorted({code for code, _rule, _path in issues})
    assert codes == ["CYCLE_DETECTED", "ENTITY_ALREADY_MERGED"], issues


def test_a_clash_within_the_writers_own_tenant_is_refused_in_the_same_words_with_or_without_another(make_repo) -> None:
    refusals = []
    for name, with_b in (("with-b", True), ("without-b", False)):
        repo = _repository(make_repo, name, with_b=with_b)
        code, _text, merged = _write(repo, "merge", "company/x", "company/y", "--reason", "same")
        assert code == 0
        assert _write(repo, "relate", "company/p", "PART_OF", "company/q")[0] == 0
        tip = repo.sha(PROPOSALS)
        answers = [_write(repo, "merge", "company/x", "company/p", "--reason", "again"),
                   _write(repo, "relate", "company/q", "PART_OF", "company/p"),
                   _write(repo, "merge", "company/y", "company/x", "--reason", "back")]
        assert [(code, out["error"]["code"]) for code, _text, out in answers] == [
            (1, "ENTITY_ALREADY_MERGED"), (1, "CYCLE_DETECTED"), (1, "CYCLE_DETECTED")]
        assert repo.sha(PROPOSALS) == tip
        # the refusal names the first merge, whose id is the time it was written in each repository
        refusals.append(json.dumps([out for _code, _text, out in answers]).replace(merged["id"], "<first merge>"))
        if not with_b:
            check_branch(repo)
    assert refusals[0] == refusals[1]


def _new(repo: Repo, *tenant: str) -> tuple[int, dict[str, Any]]:
    proc = repo.obsrepo("new", "--source", "agent/a", "--event", "Seen", "--timestamp", "2026-03-01T09:00:00Z",
                        "--entity", "company/x", *tenant, "--commit", "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("folder", [None, "observations/elsewhere"], ids=["same-path", "same-id"])
def test_a_generated_id_another_tenant_holds_is_never_written_nor_named(make_repo, folder: str | None) -> None:
    """Ids are global: a generated id that another tenant's document holds (at the same path, or
    under another folder) moves to the next suffix, without a word about the other document."""
    probe = _repository(make_repo, "probe", with_b=False)
    code, first = _new(probe, "--tenant", "org=a")
    assert code == 0, first
    repo = _repository(make_repo)
    clash = observation(first["id"], entity="company/y", tenant=B, event="b holds this id", folder=folder)
    repo.add(clash)
    repo.commit("b's document")
    code, out = _new(repo, "--tenant", "org=a")
    assert code == 0, out
    assert out["id"] == f"{first['id']}-2" and out["content_hash"] == first["content_hash"]
    assert not _mentions_b(json.dumps(out)) and clash.path not in json.dumps(out)
    assert _unbound_check(repo) == []
    # the same content again is this tenant's own duplicate, refused as such
    code, again = _new(repo, "--tenant", "org=a")
    assert (code, again["error"]["code"]) == (1, "DUPLICATE_CONTENT")
    assert out["path"] in again["error"]["message"] and clash.path not in json.dumps(again)


def test_a_tenant_bound_mcp_server_judges_its_tenants_documents(make_repo) -> None:
    repo = _repository(make_repo)

    async def scenario() -> None:
        async with stdio_session(repo, "--tenant", "org=a") as session:
            merged = await call(session, "merge_entities", from_entity_id="company/x", to_entity_id="company/y",
                                reason="same")
            related = await call(session, "create_relationship", source_entity_id="company/q",
                                 relationship_type="PART_OF", target_entity_id="company/p")
            assert not _mentions_b(json.dumps([merged, related]))
            again = await failure(session, "merge_entities", from_entity_id="company/x", to_entity_id="company/p",
                                  reason="again")
            cycle = await failure(session, "create_relationship", source_entity_id="company/p",
                                  relationship_type="PART_OF", target_entity_id="company/q")
            assert (again["code"], cycle["code"]) == ("ENTITY_ALREADY_MERGED", "CYCLE_DETECTED")
            assert not _mentions_b(json.dumps([again, cycle]))

    anyio.run(scenario)
    assert repo.git("rev-list", "--count", f"main..{PROPOSALS}") == "2"
    codes = sorted({code for code, _rule, _path in _unbound_check(repo)})
    assert codes == ["CYCLE_DETECTED", "ENTITY_ALREADY_MERGED"]

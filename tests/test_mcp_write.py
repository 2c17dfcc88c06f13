"""The MCP write tools, driven by the MCP SDK's own client over stdio against a spawned
`obsrepo mcp` in a real repository (the project's demo data, committed).

Two servers serve the whole module, kept open across its tests through an anyio blocking
portal: one unbound on the default proposal branch, one bound to org=globex writing on
`--branch proposals/globex`. Every write is one new file in one new commit on the server's
branch, byte for byte what the CLI writes, and the branch passes `obsrepo check --base`; the
work tree, git's index, HEAD and every other ref stay as they were; reads keep answering from
HEAD until a proposal is merged; refused writes are error results that move no ref.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import anyio
import helpers
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from helpers import Repo
from mcp import ClientSession
from test_mcp import call, cli_json, demo, failure, stdio_session

BRANCH = "obsrepo/proposals"
GLOBEX_BRANCH = "proposals/globex"
PROPOSALS = (BRANCH, GLOBEX_BRANCH)
RESULT_KEYS = {"id", "path", "content_hash", "commit", "branch"}


class Server:
    """A spawned `obsrepo mcp` and the SDK client's session with it, open for the whole module."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, branch: str) -> None:
        self.portal = portal
        self.session = session
        self.branch = branch

    def call(self, tool: str, **arguments: Any) -> Any:
        return self.portal.call(lambda: call(self.session, tool, **arguments))

    def failure(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.portal.call(lambda: failure(self.session, tool, **arguments))


@contextmanager
def serving(repo: Repo, branch: str, *args: str) -> Iterator[Server]:
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(stdio_session(repo, *args)) as session:
        yield Server(portal, session, branch)


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    return demo(make_module_repo)


@pytest.fixture(scope="module")
def server(repo: Repo) -> Iterator[Server]:
    with serving(repo, BRANCH) as served:
        yield served


@pytest.fixture(scope="module")
def bound(repo: Repo) -> Iterator[Server]:
    with serving(repo, GLOBEX_BRANCH, "--tenant", "org=globex", "--branch", GLOBEX_BRANCH) as served:
        yield served


def fingerprint(repo: Repo) -> dict[str, object]:
    return helpers.fingerprint(repo, *PROPOSALS)


def tip(repo: Repo, branch: str = BRANCH) -> str | None:
    return repo.run("git", "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False).stdout.strip() or None


def written(repo: Repo, result: dict[str, Any], parent: str | None, branch: str = BRANCH, tool: str | None = None) -> str:
    """One new commit on `branch` on top of `parent` (the branch's old tip, else HEAD) adding
    exactly the answer's file; the file's text."""
    assert set(result) == RESULT_KEYS and result["branch"] == branch, result
    assert result["commit"] == tip(repo, branch)
    assert repo.git("rev-parse", f"{result['commit']}^") == (parent or repo.sha())
    assert repo.git("diff-tree", "-r", "--no-commit-id", "--name-status", result["commit"]) == f"A\t{result['path']}"
    assert result["path"].endswith(f"/{result['id']}.md")
    if tool:
        message = repo.git("log", "-1", "--format=%B", result["commit"])
        assert f"Obsrepo-Tool: {tool}" in message and f"Obsrepo-Observation: {result['id']}" in message
    text = repo.git("show", f"{result['commit']}:{result['path']}")
    assert f"id: {result['id']}" in text.splitlines()
    return text


def check_branch(repo: Repo, branch: str = BRANCH) -> None:
    """`obsrepo check --base <HEAD>` in a work tree of the branch is clean."""
    where = repo.path.parent / f"wt-{branch.replace('/', '-')}"
    repo.git("worktree", "add", "-q", "--detach", str(where), branch)
    try:
        result = repo.check("--base", repo.sha(), cwd=where)
        assert result.returncode == 0 and not result.issues, result
    finally:
        repo.git("worktree", "remove", "--force", str(where))


def record(server: Server, event: str, entity: str | None = None, **front: Any) -> dict[str, Any]:
    observation = {"source": "agent/mcp-test", "event": event, **({"entity": entity} if entity else {}), **front}
    return server.call("record_observation", observation=observation)


# --- accepted ------------------------------------------------------------------------------------

def test_record_observation_commits_what_new_commit_would_and_touches_nothing_else(repo, server, make_repo):
    before = fingerprint(repo)
    head = repo.sha()
    observation = {"source": "agent/fair", "event": "W Alpha registered", "timestamp": "2026-07-01T11:00:00+02:00",
                   "entity": "company/w-alpha", "fields": {"name": "W Alpha", "city": "Oslo", "staff": [1, 2.5, None]},
                   "scope": ["fair/2026"], "x-origin": {"booth": 12}}
    parent = tip(repo)
    out = server.call("record_observation", observation=observation, body="Seen at the fair.\n\nTwice.")
    text = written(repo, out, parent, tool="record_observation")
    assert out["path"] == f"observations/2026/07/01/{out['id']}.md" and out["id"].startswith("obs-20260701-090000-")
    # byte for byte what `obsrepo new --json` writes for the same input
    other = make_repo("other")
    made = other.obsrepo("new", "--json", "-", "--format", "json", input=json.dumps({**observation, "body": "Seen at the fair.\n\nTwice."}))
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {k: out[k] for k in ("id", "path", "content_hash")}
    assert (other.path / out["path"]).read_text("utf-8") == text + "\n"
    # the timestamp defaults to now (UTC)
    parent = out["commit"]
    now = server.call("record_observation", observation={"source": "agent/fair", "event": "W Alpha seen again"})
    written(repo, now, parent)
    stamp = datetime.strptime(now["id"][4:19], "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - stamp).total_seconds()) < 120
    assert fingerprint(repo) == before
    # reads serve HEAD: the proposal is not there until merged; at the branch it is
    page = server.call("observation_query", mode="json", entity="company/w-alpha")
    assert page["total"] == 0 and page["at_commit"] == head
    assert server.failure("retrieve_entity_snapshot", entity_id="company/w-alpha")["code"] == "ENTITY_NOT_FOUND"
    there = server.call("retrieve_entity_snapshot", entity_id="company/w-alpha", at=BRANCH)
    assert there["snapshot"]["city"] == "Oslo" and there["provenance"]["city"] == out["id"]
    check_branch(repo)


def test_each_statement_commits_on_the_branch_and_reads_back_there(repo, server):
    before = fingerprint(repo)
    snapshot_before = cli_json(repo, "snapshot", "company/acme-corp")
    winner = snapshot_before["provenance"]["city"]
    for n in ("beta", "gamma", "delta"):
        record(server, f"W {n} registered", f"company/w-{n}", fields={"name": f"W {n}"})

    parent = tip(repo)
    corrected = server.call("correct_field", entity_id="company/acme-corp", field="city",
                            value={"name": "Southsea", "district": ["PO4", 5]}, reason="Moved in May",
                            allow_type_change=True)  # a text becomes an object: said, not silent
    text = written(repo, corrected, parent, tool="correct")
    assert f"corrects: [{winner}]" in text and "priority: 1000" in text and "type: correction" in text
    assert "Correct city of company/acme-corp: Moved in May" in text and "org: northwind" in text
    assert "source: human/test-author" in text  # the server's git user, as on the command line
    # a second correction corrects the first one (earlier proposals count)
    again = server.call("correct_field", entity_id="company/acme-corp", field="city", value="Portsmouth", reason="Not yet",
                        allow_type_change=True)  # and back to text
    assert f"corrects: [{corrected['id']}]" in written(repo, again, corrected["commit"])

    relation = server.call("create_relationship", source_entity_id="company/w-beta", relationship_type="PART_OF",
                           target_entity_id="company/w-gamma")
    text = written(repo, relation, again["commit"], tool="relate")
    assert "entity: company/w-beta" in text and "type: PART_OF" in text and "target: company/w-gamma" in text
    merged = server.call("merge_entities", from_entity_id="company/w-delta", to_entity_id="company/w-gamma",
                         reason="Same company")
    assert "type: DUPLICATE_OF" in written(repo, merged, relation["commit"], tool="merge")
    withdrawn = cli_json(repo, "query", "--entity", "invoice/inv-2042", "--limit", "1")["observations"][0]["id"]
    retracted = server.call("retract_observation", observation_id=withdrawn, reason="Recorded twice")
    assert f"retracts: [{withdrawn}]" in written(repo, retracted, merged["commit"], tool="retract")

    assert fingerprint(repo) == before
    check_branch(repo)
    # at the branch the statements count; HEAD's answers are what they were
    at_branch = server.call("retrieve_entity_snapshot", entity_id="company/acme-corp", at=BRANCH)
    assert at_branch["snapshot"]["city"] == "Portsmouth" and at_branch["provenance"]["city"] == again["id"]
    assert server.call("retrieve_entity_snapshot", entity_id="company/acme-corp") == snapshot_before
    merged_away = server.call("retrieve_entity_snapshot", entity_id="company/w-delta", at=BRANCH)
    assert merged_away["entity_id"] == "company/w-gamma" and merged_away["merged_from"] == "company/w-delta"
    ids = {o["id"] for o in server.call("observation_query", mode="json", entity="invoice/inv-2042", at=BRANCH)["observations"]}
    assert withdrawn not in ids
    assert withdrawn in {o["id"] for o in server.call("observation_query", mode="json", entity="invoice/inv-2042")["observations"]}


def test_concurrent_writes_of_one_server_each_land_in_their_own_commit(repo, server):
    parent = tip(repo)

    async def many() -> list[Any]:
        answers: list[Any] = []

        async def one(n: int) -> None:
            answers.append(await call(server.session, "record_observation",
                                      observation={"source": "agent/crowd", "event": f"Crowd write {n}"}))

        async with anyio.create_task_group() as group:
            for n in range(8):
                group.start_soon(one, n)
        return answers

    answers = server.portal.call(many)
    chain = repo.git("rev-list", "--first-parent", f"{parent or repo.sha()}..{BRANCH}").splitlines()
    assert sorted(chain) == sorted(a["commit"] for a in answers) and len(chain) == 8
    for answer in answers:
        assert repo.git("diff-tree", "-r", "--no-commit-id", "--name-only", answer["commit"]) == answer["path"]
    check_branch(repo)


# --- refused -------------------------------------------------------------------------------------

def test_refused_writes_are_error_results_and_move_no_ref(repo, server):
    eps = record(server, "W eps registered", "company/w-eps", fields={"name": "Eps"})
    record(server, "W zeta registered", "company/w-zeta", fields={"name": "Zeta"})
    server.call("create_relationship", source_entity_id="company/w-eps", relationship_type="PART_OF",
                target_entity_id="company/w-zeta")
    record(server, "W eta registered", "company/w-eta", fields={"name": "Eta"})
    server.call("merge_entities", from_entity_id="company/w-eta", to_entity_id="company/w-zeta", reason="Same")
    before = fingerprint(repo)
    proposed = tip(repo)
    deep: Any = "bottom"
    for _ in range(40):
        deep = {"d": deep}
    refusals: list[tuple[str, dict[str, Any], str, str | None]] = [
        # (tool, arguments, code, the parameter named, if any)
        ("record_observation", {"observation": {"source": "agent/mcp-test", "event": "W eps registered",
                                                "entity": "company/w-eps", "fields": {"name": "Eps"},
                                                "timestamp": _timestamp_of(eps["id"])}}, "DUPLICATE_CONTENT", None),
        ("create_relationship", {"source_entity_id": "company/w-zeta", "relationship_type": "PART_OF",
                                 "target_entity_id": "company/w-eps"}, "CYCLE_DETECTED", None),
        ("merge_entities", {"from_entity_id": "company/w-eta", "to_entity_id": "company/w-eps", "reason": "Again"},
         "ENTITY_ALREADY_MERGED", None),
        ("merge_entities", {"from_entity_id": "company/w-zeta", "to_entity_id": "company/w-eta", "reason": "Loop"},
         "CYCLE_DETECTED", None),
        ("create_relationship", {"source_entity_id": "company/w-eps", "relationship_type": "REFERS_TO",
                                 "target_entity_id": "company/nobody"}, "ENTITY_NOT_FOUND", None),
        ("merge_entities", {"from_entity_id": "company/w-eps", "to_entity_id": "company/nobody", "reason": "?"},
         "ENTITY_NOT_FOUND", None),
        ("create_relationship", {"source_entity_id": "company/w-eps", "relationship_type": "part of",
                                 "target_entity_id": "company/w-zeta"}, "INVALID_RELATIONSHIP_TYPE", None),
        ("retract_observation", {"observation_id": "obs-20990101-000000-dead", "reason": "Gone"}, "REF_NOT_FOUND", None),
        ("correct_field", {"entity_id": "company/nobody", "field": "name", "value": "x", "reason": "r"}, "ENTITY_NOT_FOUND", None),
        ("correct_field", {"entity_id": "company/acme-corp", "field": "no_such", "value": 1, "reason": "r"}, "FIELD_NOT_FOUND", None),
        # invalid documents: the write path's rules, with their issues
        ("record_observation", {"observation": {"event": "no source"}}, "VALIDATION_ERROR", None),
        ("record_observation", {"observation": {"source": "agent/x", "event": "two\nlines"}}, "VALIDATION_ERROR", None),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e", "surprise": 1}}, "VALIDATION_ERROR", None),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e", "timestamp": "yesterday"}},
         "VALIDATION_ERROR", "timestamp"),
        ("retract_observation", {"observation_id": eps["id"], "reason": "line\nbreak"}, "VALIDATION_ERROR", None),
        # what the write path makes itself, and what only the server's configuration sets
        ("record_observation", {"observation": {"spec": "observation/v1", "source": "agent/x", "event": "e"}},
         "VALIDATION_ERROR", "observation.spec"),
        ("record_observation", {"observation": {"id": "obs-20260101-000000-0001", "source": "agent/x", "event": "e"}},
         "VALIDATION_ERROR", "observation.id"),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e"}, "tenant": {"org": "globex"}},
         "VALIDATION_ERROR", "tenant"),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e"}, "branch": "main"},
         "VALIDATION_ERROR", "branch"),
        ("retract_observation", {"observation_id": eps["id"], "reason": "r", "branch": "main"}, "VALIDATION_ERROR", "branch"),
        # wrong types
        ("record_observation", {"observation": "source: agent/x"}, "VALIDATION_ERROR", "observation"),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e"}, "body": 5}, "VALIDATION_ERROR", "body"),
        ("record_observation", {}, "VALIDATION_ERROR", "observation"),
        ("correct_field", {"entity_id": ["company/acme-corp"], "field": "city", "value": 1, "reason": "r"},
         "VALIDATION_ERROR", "entity_id"),
        ("correct_field", {"entity_id": "company/acme-corp", "field": "city", "reason": "r"}, "VALIDATION_ERROR", "value"),
        ("retract_observation", {"observation_id": eps["id"], "reason": 7}, "VALIDATION_ERROR", "reason"),
        ("create_relationship", {"source_entity_id": "company/w-eps", "relationship_type": None,
                                 "target_entity_id": "company/w-zeta"}, "VALIDATION_ERROR", "relationship_type"),
        ("merge_entities", {"from_entity_id": "company/w-eps", "to_entity_id": "company/w-zeta"}, "VALIDATION_ERROR", "reason"),
        # sizes
        ("record_observation", {"observation": {"source": "agent/x", "event": "e"}, "body": "x" * (1024 * 1024 + 1)},
         "VALIDATION_ERROR", "body"),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e" * 300_000}}, "VALIDATION_ERROR", "observation"),
        ("record_observation", {"observation": {f"x-{n}": n for n in range(100)}}, "VALIDATION_ERROR", "observation"),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e", "data": deep}}, "VALIDATION_ERROR", "observation"),
        ("record_observation", {"observation": {"source": "agent/x", "event": "e\u0000"}}, "VALIDATION_ERROR", "observation.event"),
        ("retract_observation", {"observation_id": "obs-" + "1" * 100_000, "reason": "r"}, "VALIDATION_ERROR", "observation_id"),
        ("merge_entities", {"from_entity_id": "company/w-eps", "to_entity_id": "company/w-zeta", "reason": "r" * 100_000},
         "VALIDATION_ERROR", "reason"),
        ("correct_field", {"entity_id": "company/acme-corp", "field": "city", "value": "v" * 100_000, "reason": "r"},
         "VALIDATION_ERROR", "value"),
        ("create_relationship", {"source_entity_id": "c/" + "s" * 100_000, "relationship_type": "PART_OF",
                                 "target_entity_id": "company/w-zeta"}, "VALIDATION_ERROR", "source_entity_id"),
    ]
    for tool, arguments, code, parameter in refusals:
        error = server.failure(tool, **arguments)
        assert error["code"] == code, (tool, arguments, error)
        if parameter is not None:
            assert error["details"].get("parameter") == parameter, (tool, error)
        assert tip(repo) == proposed, (tool, arguments)
    assert "server's configuration" in server.failure("record_observation", observation={"source": "a/b", "event": "e"},
                                                      branch="x")["message"]
    assert fingerprint(repo) == before and tip(repo) == proposed
    check_branch(repo)
    assert server.call("observation_query", mode="json", limit=1)["total"] > 0  # the session still answers


def _timestamp_of(obs_id: str) -> str:
    day, time = obs_id[4:12], obs_id[13:19]
    return f"{day[:4]}-{day[4:6]}-{day[6:]}T{time[:2]}:{time[2:4]}:{time[4:]}Z"


def test_non_finite_numbers_sent_as_raw_json_are_refused(repo):
    """JSON has no NaN, but a client may send it (Python's json does): refused by name, never
    written as the string "NaN"."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record_observation", "arguments": {
            "observation": {"source": "agent/x", "event": "NaN", "entity": "company/w-nan", "fields": {"v": math.nan}}}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "correct_field", "arguments": {
            "entity_id": "company/acme-corp", "field": "city", "value": [math.inf], "reason": "r"}}},
    ]
    proposed = tip(repo)
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "mcp"], cwd=repo.path, env=repo.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    watchdog = threading.Timer(60, proc.kill)  # a server that stops answering fails the test, never hangs it
    watchdog.start()
    answers: dict[int, Any] = {}
    try:
        for message in messages:  # one at a time: the server drops pending calls when its input ends
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                answers[message["id"]] = json.loads(proc.stdout.readline())
        proc.stdin.close()
        err = proc.stderr.read()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert "Traceback" not in err
    for number, parameter in ((2, "observation.fields.v"), (3, "value.0")):
        result = answers[number]["result"]
        assert result["isError"] is True
        error = json.loads(result["content"][0]["text"])["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == parameter, error
    assert tip(repo) == proposed


def test_the_library_never_writes_a_non_finite_number_as_text(repo):
    from helpers import hermetic
    from obsrepo.api import Repository
    from obsrepo.errors import InputError

    proposed = tip(repo)
    with hermetic(repo.env):
        with pytest.raises(InputError):
            Repository(str(repo.path)).propose({"source": "agent/x", "event": "nan", "entity": "a/b", "fields": {"v": math.nan}})
    assert tip(repo) == proposed


# --- tenants and the configured branch -----------------------------------------------------------

def test_a_bound_server_writes_its_tenant_on_its_branch_and_learns_nothing_of_another(repo, bound):
    before = fingerprint(repo)
    default_tip = tip(repo)
    northwind = cli_json(repo, "query", "--tenant", "org=northwind", "--limit", "1")["observations"][0]
    globex = cli_json(repo, "query", "--tenant", "org=globex", "--entity", "company/initech", "--limit", "1")["observations"][0]
    initech = cli_json(repo, "snapshot", "company/initech", "--tenant", "org=globex")

    parent = tip(repo, GLOBEX_BRANCH)
    out = bound.call("record_observation", observation={"source": "agent/gx", "event": "Initech hired", "entity": "company/initech",
                                                        "fields": {"employee_count": 140}})
    text = written(repo, out, parent, GLOBEX_BRANCH, tool="record_observation")
    assert "tenant: {org: globex}" in text or "tenant:\n  org: globex" in text
    with_project = bound.call("record_observation", observation={"source": "agent/gx", "event": "Initech project",
                                                                 "tenant": {"org": "globex", "project": "web"}})
    assert "project: web" in written(repo, with_project, out["commit"], GLOBEX_BRANCH)
    refused = bound.failure("record_observation", observation={"source": "agent/gx", "event": "Not ours", "tenant": {"org": "northwind"}})
    assert refused["code"] == "VALIDATION_ERROR" and refused["details"]["parameter"] == "tenant"

    corrected = bound.call("correct_field", entity_id="company/initech", field="city", value="Dallas", reason="HQ moved")
    text = written(repo, corrected, with_project["commit"], GLOBEX_BRANCH)
    assert f"corrects: [{initech['provenance']['city']}]" in text and "org: globex" in text
    retracted = bound.call("retract_observation", observation_id=globex["id"], reason="Wrong")
    assert "org: globex" in written(repo, retracted, corrected["commit"], GLOBEX_BRANCH)

    # another tenant's observation and entity read exactly like ones that do not exist
    for tool, arguments, missing in (
        ("retract_observation", {"observation_id": northwind["id"], "reason": "r"},
         {"observation_id": "obs-20990101-000000-dead", "reason": "r"}),
        ("correct_field", {"entity_id": "company/acme-corp", "field": "city", "value": 1, "reason": "r"},
         {"entity_id": "company/nobody", "field": "city", "value": 1, "reason": "r"}),
        ("create_relationship", {"source_entity_id": "company/initech", "relationship_type": "REFERS_TO",
                                 "target_entity_id": "company/acme-corp"},
         {"source_entity_id": "company/initech", "relationship_type": "REFERS_TO", "target_entity_id": "company/nobody"}),
    ):
        hidden, absent = bound.failure(tool, **arguments), bound.failure(tool, **missing)
        assert hidden["code"] == absent["code"] in ("REF_NOT_FOUND", "ENTITY_NOT_FOUND"), (hidden, absent)
        names = [(arguments[k], missing[k]) for k in arguments if arguments[k] != missing[k]]
        assert _anonymous(hidden, names) == _anonymous(absent, names), tool
        assert northwind["path"] not in json.dumps(hidden) and "northwind" not in json.dumps(hidden)

    assert tip(repo) == default_tip  # the unbound server's branch did not move
    assert fingerprint(repo) == before
    check_branch(repo, GLOBEX_BRANCH)


def _anonymous(error: dict[str, Any], names: list[tuple[Any, Any]]) -> str:
    text = json.dumps(error)
    for hidden, absent in names:
        text = text.replace(str(hidden), "<name>").replace(str(absent), "<name>")
    return text


def test_a_bad_branch_is_refused_at_start(repo):
    for bad in ("bad..name", "-x", "a b", "ends.lock"):
        proc = subprocess.run([sys.executable, "-m", "obsrepo", "mcp", "--branch", bad], cwd=repo.path, env=repo.env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert proc.returncode == 2 and "VALIDATION_ERROR" in proc.stderr and "Traceback" not in proc.stderr, (bad, proc.stderr)


# --- refs moving under a running server ----------------------------------------------------------

def test_refs_moving_under_the_server_break_nothing(repo, server):
    """Other writers on the branch, the branch deleted, and the served branch fast-forwarded to
    the proposals (a merged pull request): the server's rule state and kept-open index follow."""
    # another writer (the CLI) adds to the branch: the server's next check sees its document
    cli = repo.obsrepo("new", "--source", "agent/cli", "--event", "Written by the CLI", "--timestamp", "2026-08-01T10:00:00Z",
                       "--commit", "--format", "json")
    assert cli.returncode == 0, cli.stderr
    by_cli = json.loads(cli.stdout)
    same = server.failure("record_observation", observation={"source": "agent/cli", "event": "Written by the CLI",
                                                             "timestamp": "2026-08-01T10:00:00Z"})
    assert same["code"] == "DUPLICATE_CONTENT"
    ontop = record(server, "After the CLI", "company/w-after", fields={"name": "After"})
    written(repo, ontop, by_cli["commit"])

    # the branch deleted: the next write makes it again from HEAD
    repo.git("branch", "-D", BRANCH)
    fresh = record(server, "After the deletion", "company/w-fresh", fields={"name": "Fresh"}, timestamp="2026-08-02T10:00:00Z")
    written(repo, fresh, None)
    # moved back to an older commit (files gone from its tree): the rule state is rebuilt
    repo.git("update-ref", f"refs/heads/{BRANCH}", repo.sha())
    again = record(server, "After the deletion", "company/w-fresh", fields={"name": "Fresh"}, timestamp="2026-08-02T10:00:00Z")
    assert again["id"] == fresh["id"]
    written(repo, again, None)
    fresh = again

    # the proposals merged (main fast-forwarded to the branch): the next read serves them
    before = server.call("observation_query", mode="json", limit=1)
    repo.git("merge", "-q", "--ff-only", BRANCH)
    head = repo.sha()
    after = server.call("observation_query", mode="json", entity="company/w-fresh")
    assert after["at_commit"] == head and [o["id"] for o in after["observations"]] == [fresh["id"]]
    assert server.call("observation_query", mode="json", limit=1)["total"] == before["total"] + 1
    assert server.call("retrieve_entity_snapshot", entity_id="company/w-fresh")["snapshot"] == {"name": "Fresh"}
    # writing goes on from the new HEAD, and HEAD moving again is followed
    nxt = record(server, "After the merge", "company/w-fresh", fields={"name": "Fresher"})
    written(repo, nxt, head)
    repo.git("reset", "-q", "--hard", "HEAD~1")
    assert server.call("observation_query", mode="json", limit=1)["total"] == before["total"]
    check_branch(repo)

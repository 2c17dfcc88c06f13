"""Benchmark `obsrepo mcp` over stdio, measured by the MCP SDK's own client, beside the same
questions asked through the CLI in the same run.

    python bench/generate.py /tmp/obs-100k --count 100000
    obsrepo index                       # in /tmp/obs-100k
    python bench/bench_mcp.py /tmp/obs-100k [--runs 5] [--reps 30]

Medians of:
  start         spawning `obsrepo mcp` to its first answer (initialize + observation_query),
                index up to date; beside `obsrepo query --limit 1`
  warm          round trips on a warm server: observation_query (scope, limit 20),
                retrieve_entity_snapshot, retrieve_related_entities (2 hops); beside the CLI
  after commit  the first answer after a commit of 10 observations on the served branch (the
                server updates its index in process first); beside `obsrepo query` after such a
                commit (which updates the index too)
  write         record_observation round trips on a warm server (one new commit each on its
                proposal branch, checked); beside `obsrepo new --commit` (a whole process: its
                rule state of the branch is built each time). The server's first write, which
                builds that state once, is shown apart.

It adds commits to REPO (work on a copy); the proposal branches (`bench/mcp-<pid>`,
`bench/cli-<pid>`) are deleted at the end. The analysis cache is filled first (`obsrepo check`),
as pre-commit or CI leave it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

OBSREPO = [sys.executable, "-m", "obsrepo"]
GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="b@x")


def wall(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-1500:]}")
    return elapsed


def add_commit(repo: str, n: int, serial: int) -> None:
    """A commit of `n` new observations (written directly: valid observation/v1 documents)."""
    for i in range(n):
        stamp = f"2027-01-{1 + serial % 28:02d}T{i % 24:02d}:{serial % 60:02d}:{i % 60:02d}Z"
        digest = hashlib.sha256(f"{serial}-{i}".encode()).hexdigest()[:8]
        doc_id = f"obs-2027{stamp[5:7]}{stamp[8:10]}-{stamp[11:13]}{stamp[14:16]}{stamp[17:19]}-{digest}"
        folder = os.path.join(repo, "observations", "2027", stamp[5:7], stamp[8:10])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{doc_id}.md"), "w", encoding="utf-8") as handle:
            handle.write(f"---\nspec: observation/v1\nid: {doc_id}\ntimestamp: {stamp}\nsource: agent/bench\n"
                         f"event: bench increment {serial}-{i}\ntype: bench.added\nscope: [task/bench-mcp-{serial}]\n---\n\n"
                         f"Increment {serial}, observation {i}.\n")
    subprocess.run(["git", "add", "observations"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"bench mcp increment {serial}"], cwd=repo, check=True, env=GIT_ENV)


def pick(repo: str) -> tuple[str, str]:
    """The scope bench_index.py queries, and the entity bench_entities.py reduces."""
    from obsrepo.api import Repository

    api = Repository(repo)
    rows = api.sql("SELECT (SELECT scope[1] FROM observations WHERE len(scope) > 0 ORDER BY id LIMIT 1 OFFSET 500), "
                   "(SELECT entity FROM observations WHERE entity IS NOT NULL GROUP BY entity "
                   "ORDER BY count(*) DESC, entity LIMIT 1 OFFSET 100)")[1]
    return rows[0][0], rows[0][1]


async def timed_call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed = time.perf_counter() - start
    if result.is_error:
        raise SystemExit(f"{tool}: {result.content[0].text}")
    return elapsed, result


def server(repo: str, branch: str = "obsrepo/proposals") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", "mcp", "--branch", branch], cwd=repo,
                                 env=dict(os.environ))


def observation(label: str, n: int) -> dict[str, Any]:
    return {"source": "agent/bench", "event": f"bench {label} {n} {time.time_ns()}", "entity": f"task/bench-{n % 50}",
            "fields": {"n": n}}


async def start_to_first_answer(repo: str) -> float:
    start = time.perf_counter()
    async with stdio_client(server(repo)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await timed_call(session, "observation_query", {"limit": 1})
        return time.perf_counter() - start


async def warm(repo: str, questions: dict[str, tuple[str, dict[str, Any]]], reps: int, runs: int,
               branch: str) -> tuple[dict, list, dict, float, list]:
    """Medians of warm round trips, the first answers after commits, answer sizes, the first
    write and the later writes' round trips."""
    medians: dict[str, float] = {}
    sizes: dict[str, int] = {}
    after: list[float] = []
    async with stdio_client(server(repo, branch)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        for name, (tool, arguments) in questions.items():
            _, result = await timed_call(session, tool, arguments)  # warms caches of this commit
            sizes[name] = len(result.content[0].text)
            times = [(await timed_call(session, tool, arguments))[0] for _ in range(reps)]
            medians[name] = statistics.median(times)
        first, _ = await timed_call(session, "record_observation", {"observation": observation("mcp", 0)})
        writes = [(await timed_call(session, "record_observation", {"observation": observation("mcp", n)}))[0]
                  for n in range(1, reps + 1)]
        for serial in range(runs):
            add_commit(repo, 10, 1000 + serial)
            elapsed, result = await timed_call(session, "observation_query", {"scopeIds": [f"task/bench-mcp-{1000 + serial}"]})
            assert result.content[0].text.count("\n") == 9, result.content[0].text  # the 10 new observations
            after.append(elapsed)
    return medians, after, sizes, first, writes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    wall(OBSREPO + ["index", "--quiet"], repo)
    wall(OBSREPO + ["check"], repo)  # fills the analysis cache the write path's rule state is built from
    branches = {"mcp": f"bench/mcp-{os.getpid()}", "cli": f"bench/cli-{os.getpid()}"}
    try:
        measure(repo, args.runs, args.reps, branches)
    finally:
        for branch in branches.values():
            subprocess.run(["git", "branch", "-q", "-D", branch], cwd=repo, stderr=subprocess.DEVNULL)


def measure(repo: str, runs: int, reps: int, branches: dict[str, str]) -> None:
    scope, entity = pick(repo)
    questions = {
        "observation_query (scope, limit 20)": ("observation_query", {"scopeIds": [scope], "limit": 20}),
        "retrieve_entity_snapshot": ("retrieve_entity_snapshot", {"entity_id": entity}),
        "retrieve_related_entities (2 hops)": ("retrieve_related_entities", {"entity_id": entity, "max_hops": 2}),
    }
    cli = {
        "observation_query (scope, limit 20)": ["query", "--scope", scope, "--limit", "20"],
        "retrieve_entity_snapshot": ["snapshot", entity],
        "retrieve_related_entities (2 hops)": ["related", entity, "--hops", "2", "--format", "json"],
    }
    starts = [anyio.run(start_to_first_answer, repo) for _ in range(runs)]
    cli_start = statistics.median(wall(OBSREPO + ["query", "--limit", "1"], repo) for _ in range(runs))
    medians, after, sizes, first_write, writes = anyio.run(warm, repo, questions, reps, runs, branches["mcp"])
    cli_writes = [wall(OBSREPO + ["new", "--source", "agent/bench", "--event", f"bench cli {n} {time.time_ns()}",
                                  "--entity", f"task/bench-{n % 50}", "--field", f"n={n}", "--commit", "--branch", branches["cli"]],
                       repo) for n in range(runs)]
    cli_after = []
    for serial in range(runs):
        add_commit(repo, 10, 2000 + serial)
        cli_after.append(wall(OBSREPO + ["query", "--scope", f"task/bench-mcp-{2000 + serial}"], repo))

    print(f"scope {scope}; entity {entity}   (medians; MCP round trips measured by the SDK client over stdio)")
    print(f"{'':44s} {'MCP':>10s} {'CLI':>10s}  CLI/MCP")

    def row(name: str, mcp_seconds: float, cli_seconds: float, note: str = "") -> None:
        print(f"{name:44s} {mcp_seconds * 1000:7.1f} ms {cli_seconds * 1000:7.0f} ms  {cli_seconds / mcp_seconds:6.1f}x  "
              f"{note}".rstrip())

    for name, seconds in medians.items():
        row(name, seconds, statistics.median(wall(OBSREPO + cli[name], repo) for _ in range(runs)),
            f"(answer {sizes[name]:,} characters)")
    row("start to first answer (index up to date)", statistics.median(starts), cli_start)
    row("first answer after a commit of 10", statistics.median(after), statistics.median(cli_after))
    row("record_observation (warm) / new --commit", statistics.median(writes), statistics.median(cli_writes),
        f"(target <= 150 ms; {len(writes)} writes, {len(cli_writes)} CLI runs)")
    row("record_observation, the server's first", first_write, statistics.median(cli_writes),
        "(builds the branch's rule state once)")


if __name__ == "__main__":
    main()

"""What the door (ops/) costs: the same questions through this tree and through another one
(the tree before the door), interleaved run by run, each tree with an index of its own.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_door.py /tmp/obs-100k --before OTHER/tooling [--runs 7] [--calls 40]

  cli     `obsrepo query --scope S --limit 20 --format json` and `obsrepo snapshot E` as whole
          processes (imports, the revision resolver, the index opened, the answer printed)
  mcp     `observation_query` round trips over stdio through the MCP SDK's own client, a server
          of each tree kept open (median of --calls calls after one warm-up)
Ratios are now / before; the machine's noise falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLING = os.path.join(os.path.dirname(HERE), "tooling")


def _env(tooling: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=tooling)


def _timed(argv: list[str], repo: str, tooling: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "obsrepo", *argv], cwd=repo, env=_env(tooling),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} with {tooling}: {proc.stderr.decode()[-1000:]}")
    return time.perf_counter() - start


def _pick(repo: str, index: str) -> tuple[str, str]:
    """A scope and an entity of the repository, asked of the index as the CLI answers."""
    out = subprocess.run([sys.executable, "-m", "obsrepo", "sql", "--index", index, "--format", "json",
                          "SELECT (SELECT scope[1] FROM observations WHERE len(scope) > 0 ORDER BY id LIMIT 1 OFFSET 500) AS s, "
                          "(SELECT entity_id FROM entities ORDER BY entity_id LIMIT 1 OFFSET 100) AS e"],
                         cwd=repo, env=_env(TOOLING), capture_output=True, text=True, check=True).stdout
    row = json.loads(out)[0]
    return row["s"], row["e"]


def bench_cli(repo: str, trees: dict[str, str], runs: int) -> None:
    scope, entity = _pick(repo, trees["now"][1])
    for name, argv in (("query --scope", ["query", "--scope", scope, "--limit", "20", "--format", "json"]),
                       ("snapshot", ["snapshot", entity])):
        times: dict[str, list[float]] = {tree: [] for tree in trees}
        for _ in range(runs):
            for tree, (tooling, index) in trees.items():
                times[tree].append(_timed([*argv, "--index", index], repo, tooling))
        before, now = statistics.median(times["before"]), statistics.median(times["now"])
        print(f"cli {name}: before {before * 1e3:.0f} ms | now {now * 1e3:.0f} ms | {now / before:.2f}x "
              f"(median of {runs} interleaved runs)")


def bench_mcp(repo: str, trees: dict[str, str], calls: int) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    scope, _ = _pick(repo, trees["now"][1])

    async def round_trips(tooling: str, index: str) -> list[float]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", "mcp", "--index", index], cwd=repo,
                                       env=_env(tooling))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            arguments = {"scopeIds": [scope], "limit": 20, "mode": "json"}
            await session.call_tool("observation_query", arguments)
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                result = await session.call_tool("observation_query", arguments)
                times.append(time.perf_counter() - start)
                assert not result.is_error, result.content[0].text
            return times

    medians = {tree: statistics.median(anyio.run(round_trips, tooling, index)) for tree, (tooling, index) in trees.items()}
    print(f"mcp observation_query: before {medians['before'] * 1e3:.1f} ms | now {medians['now'] * 1e3:.1f} ms | "
          f"{medians['now'] / medians['before']:.2f}x (median of {calls} round trips each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo")
    parser.add_argument("--before", required=True, help="the tooling folder of the tree to compare with")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--only", choices=["cli", "mcp"])
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    trees = {"before": (os.path.abspath(args.before), os.path.join(repo, ".obsrepo", "before.duckdb")),
             "now": (TOOLING, os.path.join(repo, ".obsrepo", "now.duckdb"))}
    for tooling, index in trees.values():  # each tree reads the index it builds (formats may differ)
        _timed(["index", "--index", index], repo, tooling)
    if args.only in (None, "cli"):
        bench_cli(repo, trees, args.runs)
    if args.only in (None, "mcp"):
        bench_mcp(repo, trees, args.calls)


if __name__ == "__main__":
    main()

"""Benchmark the index at scale: `obsrepo index --full` against the git floor, and the reads.

    python bench/generate.py /tmp/obs-1m --count 1000000 --commits 100
    git clone -q --no-checkout /tmp/obs-1m /tmp/obs-1m-run   # the build writes its cache into .git
    python bench/bench_scale.py /tmp/obs-1m-run --index /tmp/obs-1m.duckdb [--runs 5]

Reports, with the baseline measured in the same run:
  floor         `git ls-tree -r HEAD | git cat-file --batch` over the same blobs (wall)
  index --full  wall, CPU and peak resident memory of the whole process (its workers included),
                and the wall's ratio to the floor
  reads         medians of whole commands (`query --scope`, `snapshot`, `query --text`) and of
                the same reads in one process (a kept-open `Repository`, as the MCP server reads)
The repository is only read (objects, and the analysis cache under .git at up to 200,000
documents); the index goes where --index says.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def floor(repo: str) -> float:
    start = time.perf_counter()
    subprocess.run("git ls-tree -r HEAD | awk '{print $3}' | git cat-file --batch > /dev/null", shell=True,
                   cwd=repo, check=True)
    return time.perf_counter() - start


def index_full(repo: str, index: str) -> dict[str, float]:
    """Wall, CPU and peak RSS of `obsrepo index --full` measured from a process of its own."""
    probe = ("import resource, subprocess, sys, time\n"
             "start = time.perf_counter()\n"
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
             "wall = time.perf_counter() - start\n"
             "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "print(wall, use.ru_utime + use.ru_stime, use.ru_maxrss * 1024)\n")
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "obsrepo", "index", "--full", "-q",
                          "--index", index], cwd=repo, check=True, capture_output=True, text=True).stdout
    wall, cpu, peak = (float(x) for x in out.split())
    return {"wall": wall, "cpu": cpu, "peak_mb": peak / 2 ** 20}


def samples(repo: str, index: str) -> dict[str, str]:
    """A scope, an entity and a text the repository holds."""
    import duckdb

    con = duckdb.connect(index, read_only=True)
    try:
        scope = con.execute("SELECT scope[1] FROM obs_records WHERE len(scope) > 0 LIMIT 1 OFFSET 500").fetchone()[0]
        entity = con.execute("SELECT entity_id FROM entity_snapshots ORDER BY observation_count DESC, entity_id "
                             "LIMIT 1 OFFSET 20").fetchone()[0]
    finally:
        con.close()
    return {"scope": scope, "entity": entity, "text": "invoice parsed"}


def commands(repo: str, index: str, picked: dict[str, str], runs: int) -> dict[str, float]:
    base = [sys.executable, "-m", "obsrepo"]
    cases = {
        "query --scope": base + ["query", "--scope", picked["scope"], "--limit", "20", "--index", index],
        "snapshot": base + ["snapshot", picked["entity"], "--index", index],
        "query --text": base + ["query", "--text", picked["text"], "--limit", "20", "--index", index],
    }
    found = {}
    for name, cmd in cases.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=repo, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        found[name] = statistics.median(times)
    return found


def in_process(repo: str, index: str, picked: dict[str, str], runs: int) -> dict[str, float]:
    from obsrepo import Repository
    from obsrepo.read.query import QueryRequest

    lib = Repository(repo, index=index)
    lib.keep_open()
    cases = {
        "query --scope": lambda: lib.query(QueryRequest(scopes=(picked["scope"],), limit=20)),
        "snapshot": lambda: lib.snapshot(picked["entity"]),
        "query --text": lambda: lib.query(QueryRequest(text=picked["text"], limit=20)),
    }
    found = {}
    try:
        for name, read in cases.items():
            read()  # warm
            times = []
            for _ in range(runs * 4):
                start = time.perf_counter()
                read()
                times.append(time.perf_counter() - start)
            found[name] = statistics.median(times)
    finally:
        lib.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo")
    parser.add_argument("--index", required=True, help="where the index is written (outside the repository)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-build", action="store_true", help="measure the reads of the index already there")
    args = parser.parse_args(argv)
    repo, index = os.path.abspath(args.repo), os.path.abspath(args.index)
    report: dict[str, object] = {}
    floors = [floor(repo) for _ in range(2)]
    report["floor_s"] = statistics.median(floors)
    if not args.skip_build:
        build = index_full(repo, index)
        report["index_full"] = build | {"ratio_to_floor": build["wall"] / report["floor_s"]}  # type: ignore[operator]
    picked = samples(repo, index)
    report["commands_s"] = commands(repo, index, picked, args.runs)
    report["in_process_ms"] = {k: v * 1000 for k, v in in_process(repo, index, picked, args.runs).items()}
    report["bench_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

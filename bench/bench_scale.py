"""Benchmark the index at scale: `obsrepo index --full` against the git floor, and the reads.

    python bench/generate.py /tmp/obs-1m --count 1000000 --commits 100
    git clone -q --no-checkout /tmp/obs-1m /tmp/obs-1m-run   # the build writes its cache into .git
    python bench/bench_scale.py /tmp/obs-1m-run --index /tmp/obs-1m.duckdb [--runs 5] [--against DIR]

Reports, with the baseline measured in the same run:
  floor         `git ls-tree -r HEAD | git cat-file --batch` over the same blobs (wall and CPU,
                the median of runs before and after the build)
  index --full  wall, CPU and peak resident memory of the whole process (its workers included),
                the file's size, and the wall's and the CPU's ratios to the floor's; with
                --against DIR (the `tooling` folder of another version, e.g. a worktree of
                main), the same build by that version too, into a file of its own, and the
                ratios of this version's figures to it
  reads         wall (median, p95) and CPU (median) of whole commands (`query --scope`, `--type`,
                `--entity`, `snapshot`, `query --text`) beside a Python that imports DuckDB and
                opens the index, and of the same reads in one process (a kept-open
                `Repository`, as the MCP server reads)
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


def floor(repo: str) -> tuple[float, float]:
    """Wall and CPU (git's, every process of the pipe) of reading every blob of HEAD."""
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run("git ls-tree -r HEAD | awk '{print $3}' | git cat-file --batch > /dev/null", shell=True,
                   cwd=repo, check=True)
    return time.perf_counter() - start, _children_cpu() - cpu


def index_full(repo: str, index: str, tooling: str | None = None) -> dict[str, float]:
    """Wall, CPU and peak RSS of `obsrepo index --full` measured from a process of its own, and
    the size of the file it wrote; `tooling`: the code to build with (default: this one's)."""
    probe = ("import resource, subprocess, sys, time\n"
             "start = time.perf_counter()\n"
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
             "wall = time.perf_counter() - start\n"
             "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "print(wall, use.ru_utime + use.ru_stime, use.ru_maxrss * 1024)\n")
    env = dict(os.environ, PYTHONPATH=tooling) if tooling else None
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "obsrepo", "index", "--full", "-q",
                          "--index", index], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout
    wall, cpu, peak = (float(x) for x in out.split())
    return {"wall": wall, "cpu": cpu, "peak_mb": peak / 2 ** 20, "size_mb": os.path.getsize(index) / 2 ** 20}


def samples(repo: str, index: str) -> dict[str, str]:
    """A scope, an entity and a text the repository holds."""
    import duckdb

    con = duckdb.connect(index, read_only=True)
    try:
        scope = con.execute("SELECT scope[1] FROM obs_records WHERE len(scope) > 0 LIMIT 1 OFFSET 500").fetchone()[0]
        entity = con.execute("SELECT entity_id FROM entity_snapshots ORDER BY observation_count DESC, entity_id "
                             "LIMIT 1 OFFSET 20").fetchone()[0]
        kind = con.execute("SELECT type FROM obs_records WHERE type IS NOT NULL LIMIT 1 OFFSET 500").fetchone()[0]
    finally:
        con.close()
    return {"scope": scope, "entity": entity, "type": kind, "text": "invoice parsed"}


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    """Median and p95 of wall, median of CPU (user + sys of the measured process)."""
    ordered = sorted(walls)
    return {"wall": statistics.median(walls), "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
            "cpu": statistics.median(cpus)}


def _medians(builds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(build[key] for build in builds) for key in builds[0]}


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def commands(repo: str, index: str, picked: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    """Whole commands, each beside the baseline of the same run: a Python that imports DuckDB
    and opens the index (what no command can go below)."""
    base = [sys.executable, "-m", "obsrepo"]
    floor_probe = f"import duckdb; duckdb.connect({index!r}, read_only=True).execute('SELECT 1').fetchall()"
    cases = {
        "python + duckdb open (baseline)": [sys.executable, "-c", floor_probe],
        "query --scope": base + ["query", "--scope", picked["scope"], "--limit", "20", "--index", index],
        "query --type": base + ["query", "--type", picked["type"], "--limit", "20", "--index", index],
        "query --entity": base + ["query", "--entity", picked["entity"], "--limit", "20", "--index", index],
        "snapshot": base + ["snapshot", picked["entity"], "--index", index],
        "query --text": base + ["query", "--text", picked["text"], "--limit", "20", "--index", index],
    }
    found = {}
    for name, cmd in cases.items():
        walls, cpus = [], []
        for _ in range(runs):
            cpu = _children_cpu()
            start = time.perf_counter()
            subprocess.run(cmd, cwd=repo, check=True, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - start)
            cpus.append(_children_cpu() - cpu)
        found[name] = _summary(walls, cpus)
    return found


def in_process(repo: str, index: str, picked: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    """The same reads from one process with the index kept open (as the MCP server reads), in ms."""
    from obsrepo import Repository
    from obsrepo.read.query import QueryRequest

    lib = Repository(repo, index=index)
    lib.keep_open()
    cases = {
        "query --scope": lambda: lib.query(QueryRequest(scopes=(picked["scope"],), limit=20)),
        "query --type": lambda: lib.query(QueryRequest(type=picked["type"], limit=20)),
        "query --entity": lambda: lib.query(QueryRequest(entity=picked["entity"], limit=20)),
        "snapshot": lambda: lib.snapshot(picked["entity"]),
        "query --text": lambda: lib.query(QueryRequest(text=picked["text"], limit=20)),
    }
    found = {}
    try:
        for name, read in cases.items():
            read()  # warm
            walls, cpus = [], []
            for _ in range(runs * 4):
                cpu = time.process_time()
                start = time.perf_counter()
                read()
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu)
            found[name] = {k: v * 1000 for k, v in _summary(walls, cpus).items()}
    finally:
        lib.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo")
    parser.add_argument("--index", required=True, help="where the index is written (outside the repository)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-build", action="store_true", help="measure the reads of the index already there")
    parser.add_argument("--against", metavar="DIR", help="the tooling folder of another version: its index --full too")
    args = parser.parse_args(argv)
    repo, index = os.path.abspath(args.repo), os.path.abspath(args.index)
    report: dict[str, object] = {}
    if not args.skip_build:
        floors = [floor(repo) for _ in range(2)]
        build = index_full(repo, index)
        floors.append(floor(repo))  # after the build too: the load of the machine moves both
        wall, cpu = statistics.median(w for w, _ in floors), statistics.median(c for _, c in floors)
        report["floor"] = {"wall": wall, "cpu": cpu}
        report["index_full"] = build | {"ratio_to_floor": build["wall"] / wall, "cpu_ratio_to_floor_cpu": build["cpu"] / cpu}
        if args.against:  # each version twice, in turns: the first build of all may fill the analysis cache
            mine, theirs = [build], []
            for _ in range(2):
                theirs.append(index_full(repo, index + ".against", os.path.abspath(args.against)))
                mine.append(index_full(repo, index))
            ours, other = _medians(mine[1:]), _medians(theirs)
            report["index_full_against"] = {"this": ours, "against": other,
                                            "ratio": {key: ours[key] / other[key] for key in ours}}
        print(json.dumps(report), file=sys.stderr, flush=True)
    picked = samples(repo, index)
    report["commands_s"] = commands(repo, index, picked, args.runs)
    print(json.dumps({"picked": picked, "commands_s": report["commands_s"]}), file=sys.stderr, flush=True)
    report["in_process_ms"] = in_process(repo, index, picked, args.runs)
    report["bench_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark `obsrepo diff` on a pull request: 100 new observations over 30 entities.

    python bench/bench_diff.py REPO [--runs 5]

REPO is a repository from generate.py. The pull request is a branch `bench/diff-pr` made from
git objects (the work tree and the checked-out branch are untouched), one commit on HEAD with
100 observations spread over 30 of the repository's entities (busy ones first, so snapshots
have history to reduce). The index is brought to BASE (= HEAD) first; each run is the whole
command `obsrepo diff --format json BASE bench/diff-pr` (the pull request's head is read as an
overlay). The baseline is `git diff --stat BASE bench/diff-pr`, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BRANCH = "refs/heads/bench/diff-pr"


def git(repo: str, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", repo, *args], input=input, capture_output=True, check=True,
                          env={**os.environ, **(env or {})}).stdout.decode().strip()


def obsrepo(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=repo, capture_output=True, text=True)


def make_pull_request(repo: str, base: str) -> str:
    proc = obsrepo(repo, "sql", "--format", "json",
                   "SELECT entity, count(*) AS n FROM observations WHERE entity IS NOT NULL "
                   "GROUP BY entity ORDER BY n DESC, entity LIMIT 30")
    entities = [row["entity"] for row in json.loads(proc.stdout)]
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(repo, "read-tree", base, env=env)
        for n in range(100):
            entity = entities[n % len(entities)]
            doc_id = f"obs-20270101-{n // 60:02d}{n % 60:02d}00-{n:08x}"
            text = (f"---\nspec: observation/v1\nid: {doc_id}\ntimestamp: 2027-01-01T{n // 60:02d}:{n % 60:02d}:00Z\n"
                    f"source: agent/bench-review\nevent: \"Review benchmark update {n}\"\ntype: bench.updated\n"
                    f"entity: {entity}\nfields:\n  status: \"reviewed-{n % 7}\"\n  review_round: {n}\n"
                    f"priority: {100 + n % 3}\ntenant:\n  org: northwind\n---\n\nBenchmark observation {n}.\n")
            blob = git(repo, "hash-object", "-w", "--stdin", input=text.encode())
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},observations/2027/01/01/{doc_id}.md", env=env)
        tree = git(repo, "write-tree", env=env)
    commit = git(repo, "commit-tree", tree, "-p", base, "-m", "bench: 100 observations over 30 entities")
    git(repo, "update-ref", BRANCH, commit)
    return commit


def timed(argv: list[str], cwd: str) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds and CPU seconds (user + system of the child) of one whole command: on a
    shared machine the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    # an installed package has its bytecode compiled; a source checkout gets it on this first run
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    base = git(repo, "rev-parse", "HEAD")
    obsrepo(repo, "index")  # the index at BASE
    head = make_pull_request(repo, base)
    diff_times, git_times, diff_cpu, git_cpu = [], [], [], []
    report = None
    for _ in range(args.runs):
        seconds, cpu, proc = timed(["git", "diff", "--stat", base, head], repo)
        git_times.append(seconds)
        git_cpu.append(cpu)
        seconds, cpu, proc = timed([sys.executable, "-m", "obsrepo", "diff", "--format", "json", base, head], repo)
        diff_times.append(seconds)
        diff_cpu.append(cpu)
        if proc.returncode not in (0, 1):
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        report = json.loads(proc.stdout)
    assert report is not None
    diff_median, git_median = statistics.median(diff_times), statistics.median(git_times)
    print(f"pull request: {len(report['added'])} observations, {len(report['entities'])} entities changed, "
          f"valid={report['valid']}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.runs} runs (wall, CPU)")
    print(f"git diff --stat BASE HEAD               {git_median:.3f} s  ({statistics.median(git_cpu):.3f} s CPU)")
    print(f"obsrepo diff --format json BASE HEAD    {diff_median:.3f} s  ({statistics.median(diff_cpu):.3f} s CPU); "
          f"{diff_median / git_median:.0f}x git diff --stat; target <= 1.5 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

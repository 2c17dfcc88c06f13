"""Benchmark `obsrepo index` and `obsrepo query` on a repository from bench/generate.py.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_index.py /tmp/obs-100k [--runs 3]

Reports medians (wall) with the baseline measured in the same run:
  floor         `git ls-tree -r HEAD | git cat-file --batch` over the same blobs
  full index    `obsrepo index --full` (whole process)
  incremental   `obsrepo index` after a commit adding 10 observations (whole process)
  queries       in the process (a warm read-only connection), limit 20, and whole CLI commands;
                `--at` an old commit (tag v0.1) against the same query at HEAD; `--text`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def wall(cmd, cwd, shell=False) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-1500:]}")
    return elapsed


def add_commit(repo: str, n: int, serial: int) -> None:
    for i in range(n):
        payload = json.dumps({
            "source": "agent/bench", "event": f"bench increment {serial}-{i}", "type": "bench.added",
            "timestamp": f"2026-12-{1 + serial % 28:02d}T{i % 24:02d}:{serial % 60:02d}:{i % 60:02d}Z",
            "scope": [f"task/bench-{serial}"], "body": f"Increment {serial}, observation {i}.",
        })
        subprocess.run([sys.executable, "-m", "obsrepo", "new", "--json", "-"], cwd=repo, input=payload.encode(),
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["git", "add", "observations"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"bench increment {serial}"], cwd=repo, check=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench",
                            GIT_COMMITTER_EMAIL="b@x"))


def in_process(repo: str, reps: int) -> dict[str, float]:
    from obsrepo.gitstore import Git
    from obsrepo.index import IndexFiles, open_reader
    from obsrepo.index.paths import index_path
    from obsrepo.read.query import QueryRequest, parse_time, run_query
    from obsrepo.read.scope import ReadScope

    git = Git(repo)
    con = open_reader(IndexFiles(index_path(repo, None)).path)
    old = git.resolve("v0.1")
    scope = con.execute("SELECT scope[1] FROM observations WHERE len(scope) > 0 ORDER BY id LIMIT 1 OFFSET 500").fetchone()[0]
    type_ = con.execute("SELECT type FROM observations WHERE type IS NOT NULL ORDER BY id LIMIT 1").fetchone()[0]
    org = con.execute("SELECT tenant_org FROM observations WHERE tenant_org IS NOT NULL ORDER BY id LIMIT 1").fetchone()[0]
    cases = {
        "scope": QueryRequest(scopes=(scope,), limit=20),
        "type": QueryRequest(type=type_, limit=20),
        "source prefix": QueryRequest(source="agent:", limit=20),
        "date range": QueryRequest(after=parse_time("2026-03-01", "a"), before=parse_time("2026-04-01", "b"), limit=20),
        "text": QueryRequest(text="invoice parsed", limit=20),
    }

    def timed(read: ReadScope, request: QueryRequest) -> float:
        run_query(read, request)
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            run_query(read, request)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    head = ReadScope(con, git)
    results = {name: timed(head, request) for name, request in cases.items()}
    bound = ReadScope(con, git, tenant={"org": org})
    results["scope, tenant-bound"] = timed(bound, cases["scope"])
    results["text, tenant-bound"] = timed(bound, cases["text"])
    results["scope --at v0.1"] = timed(ReadScope(con, git, old), cases["scope"])
    times = []
    for _ in range(reps):  # what each request pays to build its scope
        start = time.perf_counter()
        ReadScope(con, git, tenant={"org": org}).close()
        times.append(time.perf_counter() - start)
    results["building a bound scope"] = statistics.median(times)
    con.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--queries-only", action="store_true", help="only the in-process queries (REPO indexed)")
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    if args.queries_only:
        for name, seconds in in_process(repo, args.reps).items():
            print(f"query  {name:<30s} : {seconds * 1000:7.1f} ms in-process")
        return
    obsrepo = [sys.executable, "-m", "obsrepo"]
    count = int(subprocess.run("git ls-files observations | wc -l", shell=True, cwd=repo, capture_output=True, text=True).stdout)

    floor = statistics.median(wall("git ls-tree -r --format='%(objectname)' HEAD observations | git cat-file --batch > /dev/null",
                                   repo, shell=True) for _ in range(args.runs))
    full = statistics.median(wall(obsrepo + ["index", "--full", "--quiet"], repo) for _ in range(args.runs))
    incremental = []
    for serial in range(args.runs):
        add_commit(repo, 10, serial)
        incremental.append(wall(obsrepo + ["index", "--quiet"], repo))
    queries = in_process(repo, args.reps)
    cli_scope = statistics.median(wall(obsrepo + ["query", "--source", "agent:", "--limit", "20"], repo) for _ in range(args.runs))
    cli_text = statistics.median(wall(obsrepo + ["query", "--text", "invoice", "--limit", "20"], repo) for _ in range(args.runs))

    print(f"observations: {count}   (medians; whole processes unless marked in-process)")
    print(f"floor  ls-tree | cat-file --batch     : {floor:7.3f} s  ({count / floor:,.0f} blobs/s)")
    print(f"index  --full                         : {full:7.3f} s  ({count / full:,.0f} obs/s, {full / floor:.1f}x floor)")
    print(f"index  after +10 observations         : {statistics.median(incremental):7.3f} s")
    for name, seconds in queries.items():
        print(f"query  {name:<30s} : {seconds * 1000:7.1f} ms in-process")
    print(f"query  --at v0.1 / at HEAD            : {queries['scope --at v0.1'] / queries['scope']:.2f}x")
    print(f"CLI    query --source agent: --limit 20 : {cli_scope:6.3f} s")
    print(f"CLI    query --text invoice --limit 20  : {cli_text:6.3f} s")


if __name__ == "__main__":
    main()

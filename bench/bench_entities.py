"""Benchmark entity snapshots on a repository from bench/generate.py (index it first).

    python bench/generate.py /tmp/obs-100k --count 100000
    obsrepo index   # in /tmp/obs-100k
    python bench/bench_entities.py /tmp/obs-100k

Medians: one snapshot in the process (Python reducer over SQL candidates) at HEAD and at tag
v0.1, the same as whole CLI commands, all snapshots at HEAD (SQL reducer), and `history` of
`task/bench-hot` (50 observations over 50 commits). Baseline in the same run: the SQL that
only fetches the entity's candidate rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def median_ms(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)

    from obsrepo.api import Repository
    from obsrepo.read.entities import history
    from obsrepo.read.scope import ReadScope
    from obsrepo.read.snapshots import all_snapshots, snapshot

    api = Repository(repo)
    con = api._reader()
    head = ReadScope(con, api.git)
    old = ReadScope(con, api.git, api.git.resolve("v0.1"))
    hot_scope = ReadScope(con, api.git)
    entity = con.execute("SELECT entity FROM observations WHERE entity IS NOT NULL GROUP BY entity "
                         "ORDER BY count(*) DESC, entity LIMIT 1 OFFSET 100").fetchone()[0]
    entities = con.execute("SELECT count(DISTINCT entity) FROM observations").fetchone()[0]
    rows = con.execute("SELECT count(*) FROM observations WHERE entity = ?", [entity]).fetchone()[0]

    floor = median_ms(lambda: head.rows("SELECT * FROM visible AS o WHERE o.entity = ?", [entity]), args.reps)
    at_head = median_ms(lambda: snapshot(head, entity), args.reps)
    at_old = median_ms(lambda: snapshot(old, entity), args.reps)
    every = median_ms(lambda: all_snapshots(head), max(3, args.reps // 5))
    hot = median_ms(lambda: history(hot_scope, "task/bench-hot"), 3)
    con.close()
    obsrepo = [sys.executable, "-m", "obsrepo"]

    def cli(*extra: str) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run(obsrepo + ["snapshot", entity, *extra], cwd=repo, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    print(f"entities: {entities}; snapshot of {entity} ({rows} observations); medians")
    print(f"baseline: fetch its rows              : {floor:7.1f} ms")
    print(f"snapshot at HEAD (in process)         : {at_head:7.1f} ms  ({at_head / floor:.1f}x baseline)")
    print(f"snapshot at v0.1 (in process)         : {at_old:7.1f} ms")
    print(f"snapshot CLI at HEAD / at v0.1        : {cli():6.3f} s / {cli('--at', 'v0.1'):6.3f} s")
    print(f"all snapshots at HEAD (SQL reducer)   : {every:7.1f} ms")
    print(f"history task/bench-hot (50 commits)   : {hot:7.1f} ms")


if __name__ == "__main__":
    main()

"""Benchmark `obsrepo contested` (docs/design.md §19) on a repository from bench/generate.py.

    python bench/generate.py /tmp/obs-100k --count 100000 --entities 10000
    obsrepo index   # in /tmp/obs-100k
    python bench/bench_contested.py /tmp/obs-100k

Medians: the whole command (a child process, as a person runs it; the index's own
`contested_fields` answers it), the operation in the process over every entity and over one
type, the path computed from the rows (a bound caller's, --as-of, another --window: DuckDB
narrows, the definition decides), and the step the index build adds (every contest over every
row, written to `contested_fields`). Prints the number of contests and the rows of the index,
so a figure can be scaled to 1M observations.
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
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)

    from obsrepo.ops import Contested, Session, run

    session = Session(repo)
    answer = run(session, Contested()).to_json()
    rows = session.read(lambda scope: scope.one("SELECT count(*), count(DISTINCT entity) FROM visible"), None)
    print(f"contests: {answer['total']}  (observations, entities: {rows})")
    in_process = median_ms(lambda: run(session, Contested()), args.reps)
    typed = median_ms(lambda: run(session, Contested(entity_type="contract")), args.reps)
    from obsrepo.index.entity_table import CURRENT
    from obsrepo.index.reducer_rows import all_policies, commit_instant, special_rows
    from obsrepo.index.sqlcontest import CANDIDATES, contests_all
    from obsrepo.read.contested import contests

    computed = median_ms(lambda: session.read(lambda scope: contests(scope, 86400), None), args.reps)

    def build_step(con) -> None:
        git, target = session.git, session.read(lambda scope: scope.at_commit, None)
        contests_all(con, CANDIDATES.format(relation=CURRENT, where="TRUE"), [], special_rows(con, CURRENT),
                     all_policies(git, target), 86400, valid_at=commit_instant(git, target))

    build = median_ms(lambda: session.read(build_step, None, scoped=False), args.reps)
    env = dict(os.environ)

    def command() -> None:
        subprocess.run([sys.executable, "-m", "obsrepo", "contested", "--limit", "50"], cwd=repo, env=env,
                       capture_output=True, check=True)

    whole = median_ms(command, args.reps)
    print(f"contested in process      {in_process:8.1f} ms")
    print(f"contested --type contract {typed:8.1f} ms")
    print(f"computed from the rows    {computed:8.1f} ms")
    print(f"index build step          {build:8.1f} ms")
    print(f"obsrepo contested (whole) {whole:8.1f} ms")


if __name__ == "__main__":
    main()

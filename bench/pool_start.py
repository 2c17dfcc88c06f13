"""Whether starting the index's worker pools from a fork server costs the build anything:
`obsrepo index --full` under each start method, interleaved in the same run, medians.

    python bench/generate.py /tmp/obs-20k --count 20000
    python bench/pool_start.py /tmp/obs-20k [--runs 3]

The start method is chosen by OBSREPO_POOL_START (fork, forkserver, spawn), which exists for
this comparison only; obsrepo uses forkserver where there is one (docs/design.md §8b). The
analysis cache is off (OBSREPO_NO_CACHE=1) so every document goes through the workers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def full_build(repo: str, index: str, method: str) -> float:
    env = dict(os.environ, OBSREPO_POOL_START=method, OBSREPO_NO_CACHE="1")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "obsrepo", "index", "--full", "-q", "--index", index],
                          cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"index --full ({method}): exit {proc.returncode}: {proc.stderr.decode()[-1500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--methods", default="fork,forkserver")
    args = parser.parse_args()
    methods = args.methods.split(",")
    times: dict[str, list[float]] = {method: [] for method in methods}
    with tempfile.TemporaryDirectory(prefix="obsrepo-pool-start-") as folder:
        index = os.path.join(folder, "index.duckdb")
        full_build(args.repo, index, methods[0])  # warm the page cache and git's packs
        for _ in range(args.runs):
            for method in methods:
                times[method].append(full_build(args.repo, index, method))
    base = statistics.median(times[methods[0]])
    print(f"index --full, medians of {args.runs} (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores):")
    for method in methods:
        median = statistics.median(times[method])
        runs = " ".join(f"{t:.2f}" for t in times[method])
        print(f"  {method:<11} {median:7.2f} s  (runs {runs})  ratio to {methods[0]} {median / base:.3f}")


if __name__ == "__main__":
    main()

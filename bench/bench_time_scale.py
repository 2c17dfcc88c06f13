"""Valid time and disputes at scale (docs/design.md §19): what they cost the index build, and
`obsrepo contested` from the index.

    python bench/bench_time_scale.py /tmp/time-100k --count 100000 [--reps 3]
    python bench/bench_time_scale.py /tmp/time-1m --count 1000000 --contested-only [--reps 5]

Generates (bench/generate.py, once: an existing folder is reused) the same repository twice:
`with/` holds periods and disputes (`--periods 0.1 --disputes 0.05`: a tenth of the entity
documents write `valid`, a twentieth get a second opinion from another source the same day),
`without/` the same documents without their `valid` keys. Medians, the runs interleaved (one
of each per round, so a busy machine weighs on both alike):

- `obsrepo index --full` of each (a child process, as a person runs it), wall and CPU time
  (the child's and its workers': what a busy machine disturbs least), and their ratios
  (target ≤ 1.10: the build of `field_intervals` and `contested_fields` costs at most a tenth);
- `obsrepo contested --limit 50`, the whole command, on `with/` (target ≤ 1 s at 1M
  observations); the baseline of the same run is `obsrepo status`, the floor of any command
  that opens the index.

`--contested-only` generates and indexes `with/` alone and measures only the commands.
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

HERE = os.path.dirname(os.path.abspath(__file__))


def obsrepo(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=repo, capture_output=True, text=True,
                          check=True)


def made(folder: str, count: int, *extra: str) -> str:
    if not os.path.isdir(os.path.join(folder, ".git")):
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), folder, "--count", str(count),
                        "--periods", "0.1", "--disputes", "0.05", *extra], check=True)
    return folder


def interleaved(runs: dict[str, object], reps: int) -> dict[str, tuple[float, float]]:
    """Each run's median wall time and median CPU time (user + system of the child processes:
    what a busy machine disturbs least), the runs interleaved."""
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
    for _ in range(reps):
        for label, fn in runs.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            fn()
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[label].append((wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime))
    return {label: (statistics.median(w for w, _ in spent), statistics.median(c for _, c in spent))
            for label, spent in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--contested-only", action="store_true")
    args = parser.parse_args()
    timed = made(os.path.join(args.out, "with"), args.count)
    if args.contested_only:
        obsrepo(timed, "index", "--quiet")
    else:
        plain = made(os.path.join(args.out, "without"), args.count, "--no-valid")
        builds = interleaved({"index --full, periods and disputes": lambda: obsrepo(timed, "index", "--full", "--quiet"),
                              "index --full, the same without `valid`": lambda: obsrepo(plain, "index", "--full",
                                                                                         "--quiet")}, args.reps)
        (with_s, with_cpu), (without_s, without_cpu) = builds.values()
        for label, (seconds, cpu) in builds.items():
            print(f"{label:45s} {seconds:8.2f} s wall {cpu:8.2f} s CPU")
        print(f"{'ratio':45s} {with_s / without_s:8.3f}× wall {with_cpu / without_cpu:7.3f}× CPU")
    counted = json.loads(obsrepo(timed, "sql", "SELECT count(*) AS n, count(DISTINCT entity) AS e, "
                                 "count(valid_from) + count(valid_until) AS v FROM observations", "--format",
                                 "json").stdout)
    contests = json.loads(obsrepo(timed, "contested", "--limit", "1").stdout)["total"]
    print(f"with/: {counted}, {contests} contests")
    commands = interleaved({"obsrepo contested --limit 50 (whole)": lambda: obsrepo(timed, "contested", "--limit", "50"),
                            "obsrepo status (baseline)": lambda: obsrepo(timed, "status")}, max(args.reps, 5))
    (contested_s, contested_cpu), (status_s, status_cpu) = commands.values()
    for label, (seconds, cpu) in commands.items():
        print(f"{label:45s} {seconds * 1000:8.0f} ms wall {cpu * 1000:8.0f} ms CPU")
    print(f"{'ratio':45s} {contested_s / status_s:8.2f}× wall {contested_cpu / status_cpu:7.2f}× CPU")


if __name__ == "__main__":
    main()

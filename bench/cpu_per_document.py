"""CPU per document of `obsrepo check` (everything) and `obsrepo index --full`, every cache off.

    python bench/cpu_per_document.py REPO [REPO ...] [--workers 1,2] [--only check,index] [--runs 1]

What a machine shared with others can judge is CPU, not wall time: every figure is the CPU
(user + system) of a whole process and all its children (getrusage of the children: the
interpreter, imports, the worker pool, git), divided by the documents of the repository, with
the peak RSS of the largest single process, and the git floor measured in the same run:

  floor   `git ls-tree -r HEAD observations comprehension | git cat-file --batch` (every blob read)
  check   `obsrepo check --format json`, OBSREPO_NO_CACHE (no analysis cache, no facts store)
  index   `obsrepo index --full`, OBSREPO_NO_CACHE (every document parsed)

The main process's own CPU and its main thread's (sampled from /proc until it ends) are given:
the main thread's Python does not spread over processors, the pool's workers, DuckDB's threads
and git do; "4 cores" estimates the wall time on a quiet 4-core machine as the main thread's CPU
plus the rest divided by four, against the floor's CPU (git, a pipe of two processes).

`--workers N` runs each command with its CPU affinity limited to N processors (`taskset`): a
pool sized to the processors the process may use (`os.process_cpu_count()`) then starts N
workers. The CPU per document should not move with N; the wall time shows the pool's scaling.

REPO is never written: it is cloned (`git clone`, hard links, checked out) into a temporary
folder, or, with `--clone-into DIR`, into DIR/<name of REPO> where a clone already there is reused.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

# a fresh process per measurement, so each peak is its own (ru_maxrss of the children only grows),
# and the reaper of every process the command leaves (a pool's fork server outlives it a moment);
# the command's own process and its main thread are sampled in /proc until it ends
_USAGE = ("import ctypes, os, resource, subprocess, sys, time\n"
          "ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
          "proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
          "tick, cpu = os.sysconf('SC_CLK_TCK'), [0.0, 0.0]\n"
          "def used(path):\n"
          "    fields = open(path).read().rsplit(')', 1)[1].split()\n"
          "    return (int(fields[11]) + int(fields[12])) / tick\n"
          "while proc.poll() is None:\n"
          "    try:\n"
          "        cpu = [used(f'/proc/{proc.pid}/stat'), used(f'/proc/{proc.pid}/task/{proc.pid}/stat')]\n"
          "    except (OSError, IndexError, ValueError):\n"
          "        pass\n"
          "    time.sleep(0.05)\n"
          "try:\n"
          "    while True:\n"
          "        os.wait()\n"
          "except ChildProcessError:\n"
          "    pass\n"
          "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
          "print(usage.ru_utime, usage.ru_stime, usage.ru_maxrss, *cpu, file=sys.stderr)\n"
          "sys.exit(proc.returncode)\n")
FLOOR = "git ls-tree -r --format='%(objectname)' HEAD observations comprehension | git cat-file --batch > /dev/null"


def measured(cmd: list[str], cwd: str, env: dict[str, str], workers: int | None,
             ok: tuple[int, ...] = (0,)) -> dict[str, float]:
    """wall, user, sys (seconds) and peak (MB) of one whole process and its children."""
    if workers is not None:
        cmd = ["taskset", "-c", ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:workers]), *cmd]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _USAGE, *cmd], cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    user, system, peak, own, main = proc.stderr.decode(errors="replace").strip().splitlines()[-1].split()
    return {"wall": wall, "user": float(user), "sys": float(system), "peak": int(peak) / 1024, "own": float(own),
            "main": float(main)}


def documents(repo: str) -> int:
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD", "observations", "comprehension"],
                            cwd=repo, capture_output=True, check=True).stdout
    return listed.count(b"\n")


def clone(repo: str, into: str) -> str:
    target = os.path.join(into, os.path.basename(os.path.normpath(repo)))
    if not os.path.isdir(os.path.join(target, ".git")):
        subprocess.run(["git", "clone", "-q", os.path.abspath(repo), target], check=True)
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=target)
    return target


def bench(repo: str, args: argparse.Namespace) -> None:
    """Measure and print, row by row (a long run may be stopped), the table for one repository."""
    env = {**os.environ, "OBSREPO_NO_CACHE": "1"}
    obsrepo = [sys.executable, "-m", "obsrepo"]
    count = documents(repo)
    print(f"\n{repo}: {count} documents\n")
    print("| | workers | CPU µs/doc | of which sys | main process | its main thread | × floor CPU | wall s | "
          "4 cores, s | 4 cores × floor | peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for _ in range(args.runs):
        floor = measured(["sh", "-c", FLOOR], repo, env, None)
        row("floor", None, floor, floor, count)
        for workers in args.workers:
            if "check" in args.only:
                row("check", workers, measured(obsrepo + ["check", "--format", "json"], repo, env, workers,
                                               ok=(0, 1)), floor, count)
            if "index" in args.only:
                shutil.rmtree(os.path.join(repo, ".obsrepo"), ignore_errors=True)
                row("index --full", workers, measured(obsrepo + ["index", "--full"], repo, env, workers, ok=(0, 1)),
                    floor, count)


def row(what: str, workers: int | None, r: dict[str, float], floor: dict[str, float], count: int) -> None:
    """One line of the table. "4 cores" is the wall time estimated for a quiet 4-core machine: the
    main thread's CPU, serial, plus the rest (the pool, DuckDB's threads, git) spread over four
    processors; the floor's is its CPU (git)."""
    cpu, floor_cpu = r["user"] + r["sys"], max(floor["user"] + floor["sys"], 1e-9)
    own, main = (min(r["own"], cpu), min(r["main"], cpu)) if what != "floor" else (cpu, cpu)
    four = main + (cpu - main) / 4
    print(f"| {what} | {workers or ''} | {cpu / count * 1e6:.0f} | {r['sys'] / count * 1e6:.0f} | "
          f"{own / count * 1e6:.0f} | {main / count * 1e6:.0f} | {cpu / floor_cpu:.1f} | {r['wall']:.1f} | {four:.1f} | "
          f"{four / floor_cpu:.1f} | {r['peak']:.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repos", nargs="+")
    parser.add_argument("--workers", default=None,
                        help="comma-separated processor counts to limit each command to (default: as it is)")
    parser.add_argument("--only", default="check,index")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--clone-into", default=None, help="keep the clones in this folder (reused next time)")
    args = parser.parse_args()
    args.only = set(args.only.split(","))
    args.workers = [int(n) for n in args.workers.split(",")] if args.workers else [None]
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        for given in args.repos:
            repo = clone(given, args.clone_into or tmp)
            bench(repo, args)


if __name__ == "__main__":
    main()

"""CPU per document of `obsrepo check` (everything) and `obsrepo index --full`, every cache off.

    python bench/cpu_per_document.py REPO [REPO ...] [--workers 1,2] [--only check,index] [--runs 1]

What a machine shared with others can judge is CPU, not wall time: every figure is the CPU
(user + system) of a whole process and all its children (getrusage of the children: the
interpreter, imports, the worker pool, git), divided by the documents of the repository, with
the peak RSS of the largest single process, and the git floor measured in the same run:

  floor   `git ls-tree -r HEAD observations comprehension | git cat-file --batch` (every blob read)
  check   `obsrepo check --format json`, OBSREPO_NO_CACHE (no analysis cache, no facts store)
  index   `obsrepo index --full`, OBSREPO_NO_CACHE (every document parsed)

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

# a fresh process per measurement, so each peak is its own (ru_maxrss of the children only grows)
_USAGE = ("import resource, subprocess, sys\n"
          "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
          "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
          "print(usage.ru_utime, usage.ru_stime, usage.ru_maxrss, file=sys.stderr)\n"
          "sys.exit(code)\n")
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
    user, system, peak = proc.stderr.decode(errors="replace").strip().splitlines()[-1].split()
    return {"wall": wall, "user": float(user), "sys": float(system), "peak": int(peak) / 1024}


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
    print("| | workers | CPU µs/doc | of which sys | × floor CPU | wall s | peak MB |")
    print("|---|---|---|---|---|---|---|", flush=True)
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
    cpu = r["user"] + r["sys"]
    print(f"| {what} | {workers or ''} | {cpu / count * 1e6:.0f} | {r['sys'] / count * 1e6:.0f} | "
          f"{cpu / max(floor['user'] + floor['sys'], 1e-9):.1f} | {r['wall']:.1f} | {r['peak']:.0f} |", flush=True)


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

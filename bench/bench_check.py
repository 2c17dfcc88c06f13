"""Benchmark `obsrepo check` against the raw floor of reading the same blobs from git.

    python bench/generate.py /tmp/obs-10k --count 10000
    python bench/bench_check.py /tmp/obs-10k [--runs 5]

Every figure is the median wall time of whole processes (imports included), measured in
the same run as its baseline:
  floor        `git ls-tree -r HEAD observations | git cat-file --batch` (blob contents)
  check cold   `obsrepo check` with the analysis cache disabled (CI on a fresh clone)
  check warm   `obsrepo check` with the cache filled by a previous run
  staged       `obsrepo check --staged` with one new observation staged (pre-commit),
               cold (no cache) and warm
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd: list[str] | str, cwd: str, env: dict | None = None, shell: bool = False, ok=(0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed


def median(runs: int, fn) -> float:
    return statistics.median(fn() for _ in range(runs))


def clear_cache(repo: str) -> None:
    git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, capture_output=True, text=True).stdout.strip()
    shutil.rmtree(os.path.join(git_dir, "obsrepo"), ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    obsrepo = [sys.executable, "-m", "obsrepo"]
    count = int(subprocess.run("git ls-files observations | wc -l", shell=True, cwd=repo, capture_output=True, text=True).stdout)
    # a copied or freshly checked-out tree has stale stat data in git's index: refresh it once,
    # as `git status` would, so that unchanged files are known unchanged without reading them
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo)

    floor = median(args.runs, lambda: timed(
        "git ls-tree -r --format='%(objectname)' HEAD observations comprehension | git cat-file --batch > /dev/null",
        repo, shell=True))

    def cold() -> float:
        clear_cache(repo)
        return timed(obsrepo + ["check"], repo)

    check_cold = median(args.runs, cold)
    timed(obsrepo + ["check"], repo)
    check_warm = median(args.runs, lambda: timed(obsrepo + ["check"], repo))

    # one staged file, as pre-commit would run it
    with tempfile.TemporaryDirectory() as tmp:
        body = os.path.join(tmp, "new.json")
        with open(body, "w") as handle:
            handle.write('{"source": "agent/bench", "event": "bench staged observation", "timestamp": "2026-11-01T00:00:00Z"}')
        path = subprocess.run(obsrepo + ["new", "--json", body], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["git", "add", path], cwd=repo, check=True)
        try:
            def staged_cold() -> float:
                clear_cache(repo)
                return timed(obsrepo + ["check", "--staged"], repo)

            staged_cold_t = median(args.runs, staged_cold)
            timed(obsrepo + ["check", "--staged"], repo)
            staged_warm = median(args.runs, lambda: timed(obsrepo + ["check", "--staged"], repo))
            startup = median(args.runs, lambda: timed(obsrepo + ["--version"], repo))
        finally:
            subprocess.run(["git", "rm", "-q", "-f", path], cwd=repo, check=True)

    print(f"documents: {count}   runs: {args.runs} (medians, wall, whole processes)")
    print(f"floor  git ls-tree | cat-file --batch : {floor:7.3f} s  ({count / floor:,.0f} blobs/s)")
    print(f"check  cold (no cache)                : {check_cold:7.3f} s  "
          f"({count / check_cold:,.0f} docs/s, {check_cold / floor:.1f}x floor)")
    print(f"check  warm (cache)                   : {check_warm:7.3f} s  ({check_warm / floor:.1f}x floor)")
    print(f"check --staged, one new file, cold     : {staged_cold_t:7.3f} s")
    print(f"check --staged, one new file, warm     : {staged_warm:7.3f} s")
    print(f"obsrepo --version (interpreter+imports): {startup:7.3f} s")


if __name__ == "__main__":
    main()

"""Benchmark `obsrepo check` at scale: everything, and a pull request's check (`--base`).

    python bench/generate.py /tmp/bench1m --count 1000000 --commits 100
    python bench/bench_check_scale.py /tmp/bench1m [--runs 3] [--pr 100] [--skip-full]

The repository is never written: the script clones it (`git clone`, hard links) into a
temporary folder and works there. Every figure is the median wall time of whole processes
(imports included) and the peak RSS of the process (getrusage of the child), measured in the
same run as the baseline, the git floor:

  floor          `git ls-tree -r HEAD observations comprehension | git cat-file --batch`
  check          `obsrepo check`, the facts store filled by an earlier check (what a push to
                 main runs); its analysis cache cold (OBSREPO_NO_CACHE: nothing kept)
  base warm      `obsrepo check --base HEAD~1`, the facts of HEAD~1's tree known
  base cold      the same with no facts store (CI's first pull request on a base)
  pr             a pull request of `--pr` new documents on a branch, `check --base main`, warm

Targets (issue "Scale", 1M documents, 100 commits): check ≤ 3× floor and ≤ 1.5 GB; base warm
≤ 10 s and ≤ 1 GB; pr (100 documents) ≤ 3 s; base cold ≤ 4× floor and ≤ 2 GB.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# a fresh process per measurement, so each peak is its own (ru_maxrss of the children only grows)
_PEAK = ("import resource, subprocess, sys\n"
         "code = subprocess.run(sys.argv[1:]).returncode\n"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
         "sys.exit(code)\n")


def measured(cmd: list[str] | str, cwd: str, env: dict | None = None, shell: bool = False,
             ok: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stderr) of one whole process (getrusage of the child)."""
    argv = ["sh", "-c", cmd] if shell else list(cmd)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PEAK, *argv], cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    *said, peak = proc.stderr.decode(errors="replace").strip().splitlines()
    return elapsed, int(peak) / 1024, "\n".join(said)


def median_of(runs: int, fn) -> tuple[float, float, str]:
    results = [fn() for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results), results[-1][2]


def store_of(repo: str) -> str:
    common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(common, "obsrepo")


def read_count(said: str) -> str:
    """What `check` read, as it says on stderr with OBSREPO_DEBUG set (the report never says)."""
    found = re.search(r"^obsrepo check: read (\d+) of", said, re.M)
    return found.group(1) if found else "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pr", type=int, default=100, help="documents in the pull request")
    parser.add_argument("--skip-full", action="store_true", help="leave out `check` of everything")
    args = parser.parse_args()
    obsrepo = [sys.executable, "-m", "obsrepo"]
    os.environ["OBSREPO_DEBUG"] = "1"  # check says on stderr how many documents it read
    no_cache = {**os.environ, "OBSREPO_NO_CACHE": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        repo = os.path.join(tmp, "repo")
        subprocess.run(["git", "clone", "-q", os.path.abspath(args.repo), repo], check=True)
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo)
        count = int(subprocess.run("git ls-files observations comprehension | wc -l", shell=True, cwd=repo,
                                   capture_output=True, text=True).stdout)
        touched = int(subprocess.run("git diff --name-only HEAD~1 | wc -l", shell=True, cwd=repo,
                                     capture_output=True, text=True).stdout)
        print(f"{count} documents, HEAD~1..HEAD touches {touched}")

        floor = median_of(args.runs, lambda: measured(
            "git ls-tree -r --format='%(objectname)' HEAD observations comprehension | git cat-file --batch > /dev/null",
            repo, shell=True))
        rows = [("floor", floor, "")]
        print(f"floor {floor[0]:.2f} s", flush=True)  # each figure as it comes: a long run may be stopped

        def base_cold() -> tuple[float, float, str]:
            shutil.rmtree(store_of(repo), ignore_errors=True)
            return measured(obsrepo + ["check", "--base", "HEAD~1", "--format", "json"], repo)

        rows.append(("base cold", median_of(1, base_cold), ""))
        print(f"base cold {rows[-1][1][0]:.2f} s {rows[-1][1][1]:.0f} MB", flush=True)
        rows.append(("base warm", median_of(args.runs, lambda: measured(
            obsrepo + ["check", "--base", "HEAD~1", "--format", "json"], repo)), ""))
        print(f"base warm {rows[-1][1][0]:.2f} s {rows[-1][1][1]:.0f} MB", flush=True)
        if not args.skip_full:
            rows.append(("check", median_of(1, lambda: measured(obsrepo + ["check", "--format", "json"], repo, env=no_cache,
                                                              ok=(0, 1))), ""))

        subprocess.run(["git", "checkout", "-q", "-b", "bench-pr"], cwd=repo, check=True)
        folder = os.path.join(repo, "observations", "2026", "11", "01")
        os.makedirs(folder, exist_ok=True)
        for n in range(args.pr):  # written directly: `obsrepo new` would judge each against the whole tree
            doc_id = f"obs-20261101-000000-{n:08x}"
            with open(os.path.join(folder, f"{doc_id}.md"), "w", encoding="utf-8") as handle:
                handle.write(f"---\nspec: observation/v1\nid: {doc_id}\ntimestamp: 2026-11-01T00:00:00Z\n"
                             f"source: agent/bench\nevent: \"bench pull request observation {n}\"\n"
                             f"entity: task/bench-pr-{n}\n---\n\nA pull request of the benchmark.\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(["git", "commit", "-q", "--no-verify", "-m", "bench pull request"], cwd=repo, check=True)
        rows.append(("pr", median_of(args.runs, lambda: measured(
            obsrepo + ["check", "--base", "main", "--format", "json"], repo)), ""))

        print(f"{'':10} {'median s':>9} {'× floor':>8} {'peak MB':>8} {'read':>8}")
        for name, (wall, peak, out), _ in rows:
            print(f"{name:10} {wall:9.2f} {wall / floor[0]:8.2f} {peak:8.0f} {read_count(out):>8}")


if __name__ == "__main__":
    main()

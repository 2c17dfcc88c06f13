"""Benchmark `obsrepo check` at scale: everything, and a pull request's check (`--base`).

    python bench/generate.py /tmp/bench1m --count 1000000 --commits 100
    python bench/bench_check_scale.py /tmp/bench1m [--runs 3] [--pr 100] [--skip-full] [--in-place]

The repository is never written: the script clones it (`git clone`, hard links) into a
temporary folder and works there (with `--in-place`, in REPO itself: a throwaway clone). Every
figure is the median wall time and CPU time (user + sys) of whole processes (imports included)
and the peak RSS of the process (getrusage of the child), measured in the same run as the
baseline, the git floor:

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
         "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, file=sys.stderr)\n"
         "sys.exit(code)\n")


def measured(cmd: list[str] | str, cwd: str, env: dict | None = None, shell: bool = False,
             ok: tuple[int, ...] = (0,)) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds (user + sys), peak RSS in MB, stderr) of one whole process
    (getrusage of the child and its own children)."""
    argv = ["sh", "-c", cmd] if shell else list(cmd)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PEAK, *argv], cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    *said, usage = proc.stderr.decode(errors="replace").strip().splitlines()
    cpu, peak = usage.split()
    return elapsed, float(cpu), int(peak) / 1024, "\n".join(said)


def median_of(runs: int, fn) -> tuple[float, float, float, str]:
    results = [fn() for _ in range(runs)]
    return (statistics.median(r[0] for r in results), statistics.median(r[1] for r in results),
            max(r[2] for r in results), results[-1][3])


def said(name: str, figure: tuple[float, float, float, str]) -> None:
    """One figure as soon as it is measured: a long run may be stopped."""
    print(f"{name} {figure[0]:.2f} s wall, {figure[1]:.2f} s CPU, {figure[2]:.0f} MB, read {read_count(figure[3])}",
          flush=True)


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
    parser.add_argument("--only", default="base cold,base warm,check,pr",
                        help="the figures to measure besides the floor, comma-separated (default: all)")
    parser.add_argument("--in-place", action="store_true",
                        help="work in REPO itself (a throwaway clone: a branch and a commit are added to it) "
                             "rather than in a fresh clone (at a million documents, minutes of checkout)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        repo = os.path.abspath(args.repo)
        if not args.in_place:
            repo = os.path.join(tmp, "repo")
            subprocess.run(["git", "clone", "-q", os.path.abspath(args.repo), repo], check=True)
        bench(repo, args)


def bench(repo: str, args: argparse.Namespace) -> None:
    obsrepo = [sys.executable, "-m", "obsrepo"]
    os.environ["OBSREPO_DEBUG"] = "1"  # check says on stderr how many documents it read
    no_cache = {**os.environ, "OBSREPO_NO_CACHE": "1"}
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo)
    count = int(subprocess.run("git ls-files observations comprehension | wc -l", shell=True, cwd=repo,
                               capture_output=True, text=True).stdout)
    touched = int(subprocess.run("git diff --name-only HEAD~1 | wc -l", shell=True, cwd=repo,
                                 capture_output=True, text=True).stdout)
    print(f"{count} documents, HEAD~1..HEAD touches {touched}")

    floor = median_of(args.runs, lambda: measured(
        "git ls-tree -r --format='%(objectname)' HEAD observations comprehension | git cat-file --batch > /dev/null",
        repo, shell=True))
    rows = [("floor", floor)]
    said("floor", floor)

    def base_cold() -> tuple[float, float, float, str]:
        shutil.rmtree(store_of(repo), ignore_errors=True)
        return measured(obsrepo + ["check", "--base", "HEAD~1", "--format", "json"], repo)

    only = set(args.only.split(","))
    if "base cold" in only or not os.path.exists(store_of(repo)):
        rows.append(("base cold", median_of(1, base_cold)))
        said(*rows[-1])
    if "base warm" in only:
        rows.append(("base warm", median_of(args.runs, lambda: measured(
            obsrepo + ["check", "--base", "HEAD~1", "--format", "json"], repo))))
        said(*rows[-1])
    if not args.skip_full and "check" in only:
        rows.append(("check", median_of(1, lambda: measured(obsrepo + ["check", "--format", "json"], repo,
                                                          env=no_cache, ok=(0, 1)))))
        said(*rows[-1])

    if "pr" in only:
        rows.append(("pr", pull_request(repo, obsrepo, args)))
        said(*rows[-1])

    print(f"{'':10} {'wall s':>8} {'× floor':>8} {'CPU s':>8} {'× floor':>8} {'peak MB':>8} {'read':>8}")
    for name, (wall, cpu, peak, out) in rows:
        print(f"{name:10} {wall:8.2f} {wall / floor[0]:8.2f} {cpu:8.2f} {cpu / max(floor[1], 1e-9):8.2f} "
              f"{peak:8.0f} {read_count(out):>8}")


def pull_request(repo: str, obsrepo: list[str], args: argparse.Namespace) -> tuple[float, float, float, str]:
    """`check --base main` of a branch adding `--pr` documents, the facts of main known."""
    subprocess.run(["git", "checkout", "-q", "-B", "bench-pr"], cwd=repo, check=True)
    folder = os.path.join(repo, "observations", "2026", "11", "01")
    os.makedirs(folder, exist_ok=True)
    for n in range(args.pr):  # written directly: `obsrepo new` would judge each against the whole tree
        doc_id = f"obs-20261101-000000-{n:08x}"
        with open(os.path.join(folder, f"{doc_id}.md"), "w", encoding="utf-8") as handle:
            handle.write(f"---\nspec: observation/v1\nid: {doc_id}\ntimestamp: 2026-11-01T00:00:00Z\n"
                         f"source: agent/bench\nevent: \"bench pull request observation {n}\"\n"
                         f"entity: task/bench-pr-{n}\n---\n\nA pull request of the benchmark.\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "--no-verify", "--allow-empty", "-m", "bench pull request"], cwd=repo,
                   check=True)
    figure = median_of(args.runs, lambda: measured(obsrepo + ["check", "--base", "main", "--format", "json"], repo))
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    return figure


if __name__ == "__main__":
    main()

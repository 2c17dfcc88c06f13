"""Benchmark the write path: `Repository.propose` in process, beside `obsrepo new --commit`.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_write.py /tmp/obs-100k [--runs 30]

Writes go to a throwaway branch (`bench/proposals-<pid>`, deleted at the end); the work tree
and the checked-out branch are not touched. Figures, each measured in the same run:
  floor          the git plumbing of one write without any check: hash-object, the trees along
                 the path (cat-file + mktree), commit-tree, update-ref
  propose cold   the first write of a new `Repository` (builds the rule state of the 100k
                 documents from the analysis cache; then also without the cache)
  propose warm   each later write of the same `Repository`: validate, check, commit, ref update
  cli            `obsrepo new --commit` (a whole process: imports, rule state, write)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from obsrepo.api import Repository
from obsrepo.gitstore import Git


def clear_cache(repo: str) -> None:
    git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, capture_output=True, text=True).stdout.strip()
    shutil.rmtree(os.path.join(git_dir, "obsrepo"), ignore_errors=True)


def front(label: str, n: int) -> dict:
    return {"source": "agent/bench", "event": f"bench {label} {n} {time.time_ns()}", "entity": f"task/bench-{n % 50}",
            "fields": {"n": n}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    branch = f"bench/proposals-{os.getpid()}"
    git = Git(repo)
    head = git.resolve("HEAD")
    try:
        # `new` into the work tree: judged on the work tree as a change on a kept lookup store
        def new_in_worktree(label: str) -> float:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "obsrepo", "new", "--source", "agent/bench", "--event",
                            f"bench {label} {time.time_ns()}"], cwd=repo, check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - start

        subprocess.run([sys.executable, "-m", "obsrepo", "check", "--base", "HEAD"], cwd=repo, check=True,
                       stdout=subprocess.DEVNULL)  # the facts of every blob known (not timed)
        for store in (Path(git.dirs()[1]) / "obsrepo").glob("lookup-*.sqlite"):
            store.unlink()
        worktree_first = new_in_worktree("first")  # builds HEAD's lookup store from the facts store
        worktree_runs = [new_in_worktree(f"worktree {n}") for n in range(max(3, args.runs // 10))]
        # floor: the same plumbing, no check
        floor_runs = []
        tip = head
        for n in range(args.runs):
            start = time.perf_counter()
            blob = git.write_blob(f"floor {n} {time.time_ns()}\n".encode())
            tree = git.tree_with_file(tip, f"observations/2026/01/01/floor-{n}.md", blob)
            assert tree is not None
            new = git.commit_tree(tree, tip, f"floor {n}\n")
            assert git.update_ref(f"refs/heads/{branch}-floor", new, None if tip == head else tip, "bench") is None
            tip = new
            floor_runs.append(time.perf_counter() - start)

        start = time.perf_counter()
        Repository(repo).propose(front("cold", 0), branch=branch)
        cold_cached = time.perf_counter() - start

        clear_cache(repo)
        start = time.perf_counter()
        Repository(repo).propose(front("cold-nocache", 0), branch=branch)
        cold_nocache = time.perf_counter() - start

        writer = Repository(repo)
        writer.propose(front("warm-up", 0), branch=branch)
        warm_runs = []
        for n in range(args.runs):
            start = time.perf_counter()
            writer.propose(front("warm", n), branch=branch)
            warm_runs.append(time.perf_counter() - start)

        cli_runs = []
        for n in range(max(3, args.runs // 10)):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "obsrepo", "new", "--source", "agent/bench", "--event",
                            f"bench cli {n} {time.time_ns()}", "--commit", "--branch", branch],
                           cwd=repo, check=True, stdout=subprocess.DEVNULL)
            cli_runs.append(time.perf_counter() - start)
        count = int(git.run("rev-list", "--count", f"{head}..{branch}"))

    finally:
        for path in git.run("ls-files", "-z", "-o", "--exclude-standard", "observations").decode().split("\0"):
            if path and "bench" in (Path(repo) / path).read_text(errors="replace"):
                (Path(repo) / path).unlink()
        for name in (branch, f"{branch}-floor"):
            git.run("update-ref", "-d", f"refs/heads/{name}", check=False)

    floor = statistics.median(floor_runs)
    warm = statistics.median(warm_runs)
    cli = statistics.median(cli_runs)
    print(f"repository: {repo} ({len(git.ls_tree(head, 'observations'))} observations), {count} commits written")
    print(f"floor (plumbing, no check)       {floor * 1000:8.1f} ms  median of {len(floor_runs)}")
    print(f"propose warm (same Repository)   {warm * 1000:8.1f} ms  median of {len(warm_runs)}  "
          f"{warm / floor:.1f}x floor  (target <= 150 ms)")
    print(f"propose cold, analysis cache     {cold_cached * 1000:8.1f} ms  (first write of a Repository)")
    print(f"propose cold, no cache           {cold_nocache * 1000:8.1f} ms")
    print(f"obsrepo new --commit (process)   {cli * 1000:8.1f} ms  median of {len(cli_runs)}  {cli / warm:.0f}x warm")
    into = statistics.median(worktree_runs)
    print(f"obsrepo new, work tree (process) {into * 1000:8.1f} ms  median of {len(worktree_runs)}  "
          f"{into / cli:.2f}x new --commit; the first after a commit (lookup store built) {worktree_first * 1000:.0f} ms")


if __name__ == "__main__":
    main()

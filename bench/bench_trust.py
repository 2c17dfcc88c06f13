"""What the trust fixes cost (docs/design.md §8a), each beside a baseline measured in the same run.

    python bench/generate.py /tmp/obs-10k --count 10000
    python bench/bench_trust.py /tmp/obs-10k --before OTHER/tooling [--runs 5] [--only resolve|ryw|check]

  resolve  `Git.resolve` per call, in process (it runs before every read), against the one
           `git rev-parse --verify REV^{commit}` process the resolver always cost; and the pure
           syntax check alone.
  ryw      read your own commit: with `obsrepo watch` running on a copy of REPO, 20 commits of
           10 observations each, each followed at once by a library query (limit 1). Reports
           p50/p95 of that first query (it waits for the watcher's update) against the same
           query asked again right after (the index already at HEAD).
  check    `obsrepo check` whole processes on REPO, warm and cold cache, this tree against the
           tree at --before (PYTHONPATH), interleaved run by run; the ratio is after / before.
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

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLING = os.path.join(os.path.dirname(HERE), "tooling")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def bench_resolve(repo: str, calls: int) -> None:
    sys.path.insert(0, TOOLING)
    from obsrepo.gitstore import GIT_ENV, Git, revision_syntax_problem

    git = Git(repo)
    env = {**os.environ, **GIT_ENV}

    def per_call(fn) -> float:
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    floor = per_call(lambda: subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "-q", "--end-of-options", "HEAD~3^{commit}"],
                                            capture_output=True, env=env))
    resolved = per_call(lambda: git.resolve("HEAD~3", "at"))
    syntax = per_call(lambda: revision_syntax_problem("main@{2026-01-01}~3"))
    refused = per_call(lambda: _refused(git))
    print(f"resolve: git rev-parse process {floor * 1e3:.2f} ms | Git.resolve {resolved * 1e3:.2f} ms "
          f"({resolved / floor:.2f}x) | syntax check alone {syntax * 1e6:.1f} us | a refused range {refused * 1e6:.1f} us "
          f"(no git process) | median of {calls} calls")


def _refused(git) -> None:
    try:
        git.resolve("HEAD~1..HEAD", "at")
    except Exception:  # noqa: BLE001 - the refusal is what is timed
        pass


def _add_commit(repo: str, serial: int, count: int) -> str:
    day = f"observations/2027/01/{1 + serial % 28:02d}"
    os.makedirs(os.path.join(repo, day), exist_ok=True)
    for i in range(count):
        doc_id = f"obs-202701{1 + serial % 28:02d}-{i % 24:02d}{serial % 60:02d}{i % 60:02d}-b{serial:03d}{i:04d}"
        text = (f"---\nspec: observation/v1\nid: {doc_id}\nsource: agent/bench\nevent: read your writes {serial}-{i}\n"
                f"timestamp: 2027-01-{1 + serial % 28:02d}T{i % 24:02d}:{serial % 60:02d}:{i % 60:02d}Z\n"
                f"scope: [task/ryw-{serial}]\n---\nRound {serial}, observation {i}.\n")
        with open(os.path.join(repo, day, f"{doc_id}.md"), "w", encoding="utf-8") as handle:
            handle.write(text)
    subprocess.run(["git", "add", "observations"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"round {serial}"], cwd=repo, check=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench",
                            GIT_COMMITTER_EMAIL="b@x"))
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def bench_ryw(repo: str, rounds: int) -> None:
    sys.path.insert(0, TOOLING)
    from obsrepo import Repository
    from obsrepo.read.query import QueryRequest

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "repo")
        subprocess.run(["git", "clone", "-q", repo, copy], check=True)
        env = dict(os.environ, PYTHONPATH=TOOLING)
        subprocess.run([sys.executable, "-m", "obsrepo", "index"], cwd=copy, env=env, check=True, stdout=subprocess.DEVNULL)
        watcher = subprocess.Popen([sys.executable, "-m", "obsrepo", "watch"], cwd=copy, env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            library = Repository(copy)
            deadline = time.monotonic() + 60
            while library.status()["watcher"] is None and time.monotonic() < deadline:
                time.sleep(0.05)
            first, again = [], []
            for serial in range(rounds):
                head = _add_commit(copy, serial, 10)
                start = time.perf_counter()
                page = library.query(QueryRequest(limit=1))
                first.append(time.perf_counter() - start)
                if page["at_commit"] != head:
                    raise SystemExit(f"round {serial}: answered at {page['at_commit']}, HEAD is {head}")
                start = time.perf_counter()
                library.query(QueryRequest(limit=1))
                again.append(time.perf_counter() - start)
        finally:
            watcher.terminate()
            watcher.wait(timeout=30)
    wait = [a - b for a, b in zip(first, again)]
    print(f"read your own commit ({rounds} commits of 10, watcher running): first query p50 {percentile(first, .5) * 1e3:.0f} ms "
          f"p95 {percentile(first, .95) * 1e3:.0f} ms | the same query at HEAD p50 {percentile(again, .5) * 1e3:.0f} ms | "
          f"the wait p50 {percentile(wait, .5) * 1e3:.0f} ms p95 {percentile(wait, .95) * 1e3:.0f} ms | 0 stale answers")


def bench_check(repo: str, before: str, runs: int) -> None:
    git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo)

    def check(tooling: str, cold: bool) -> float:
        if cold:
            shutil.rmtree(os.path.join(git_dir, "obsrepo"), ignore_errors=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "obsrepo", "check"], cwd=repo, env=dict(os.environ, PYTHONPATH=tooling),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise SystemExit(f"check failed with {tooling}: {proc.stderr.decode()[-1500:]}")
        return time.perf_counter() - start

    for cold in (True, False):
        pairs = []
        for _ in range(runs):  # interleaved: the machine's noise falls on both alike
            pairs.append((check(before, cold), check(TOOLING, cold)))
        old = statistics.median(p[0] for p in pairs)
        new = statistics.median(p[1] for p in pairs)
        print(f"check {'cold' if cold else 'warm'}: before {old:.3f} s | now {new:.3f} s | {new / old:.2f}x "
              f"(median of {runs} interleaved pairs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo")
    parser.add_argument("--before", help="the tooling folder of the tree to compare `check` with")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=["resolve", "ryw", "check"])
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    if args.only in (None, "resolve"):
        bench_resolve(repo, 200)
    if args.only in (None, "ryw"):
        bench_ryw(repo, 20)
    if args.only in (None, "check"):
        if not args.before:
            raise SystemExit("--before OTHER/tooling is needed for the check figures")
        bench_check(repo, os.path.abspath(args.before), args.runs)


if __name__ == "__main__":
    main()

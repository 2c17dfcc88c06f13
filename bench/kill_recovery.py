"""How soon the next command can write after `kill -9` of `obsrepo index --full` mid-build
(docs/design.md §8b): N times, start a full build, wait until its worker pool is busy, pause
the workers (SIGSTOP), `kill -9` the indexer alone, then measure

  gone      until no process of the killed run is left (the workers die with their parent)
  lock      until the index's writer lock can be taken
  next      how long the next `obsrepo index` takes (an update from the published index)

and print p50/p95 of each. Linux only (reads /proc).

    python bench/generate.py /tmp/obs-3k --count 3000
    python bench/kill_recovery.py /tmp/obs-3k [--runs 20]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from proc_tree import descendants, running, wait_for_workers  # noqa: E402


def once(repo: str, index: str, env: dict[str, str]) -> tuple[float, float, float]:
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "index", "--full", "-q", "--index", index],
                            cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    for pid in wait_for_workers(proc):
        os.kill(pid, signal.SIGSTOP)
    run = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    proc.wait()
    lock = None
    with open(index + ".lock", "a+") as handle:
        while lock is None or any(running(pid) for pid in run):
            if lock is None:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    lock = time.monotonic() - killed
                    fcntl.flock(handle, fcntl.LOCK_UN)
                except BlockingIOError:
                    pass
            if time.monotonic() - killed > 120:
                raise SystemExit(f"still there after 120 s: {[pid for pid in run if running(pid)]}")
            time.sleep(0.002)
    gone = time.monotonic() - killed
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "obsrepo", "index", "-q", "--index", index], cwd=repo, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return gone, lock, time.monotonic() - started


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    env = dict(os.environ, OBSREPO_NO_CACHE="1")  # the workers parse every document
    results = []
    with tempfile.TemporaryDirectory(prefix="obsrepo-kill-") as folder:
        index = os.path.join(folder, "index.duckdb")
        subprocess.run([sys.executable, "-m", "obsrepo", "index", "-q", "--index", index], cwd=args.repo, env=env,
                       check=True)
        for _ in range(args.runs):
            results.append(once(args.repo, index, env))
    print(f"{args.runs} kills of index --full mid-build (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    for name, column in zip(("gone", "lock", "next"), zip(*results)):
        print(f"  {name:<5} p50 {statistics.median(column):7.3f} s   p95 {percentile(list(column), 0.95):7.3f} s"
              f"   max {max(column):7.3f} s")


if __name__ == "__main__":
    main()

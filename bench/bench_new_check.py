"""`obsrepo new` then `obsrepo check`, as a writer and its pre-commit hook run them: whether
check analyses the document new just wrote again.

    python bench/generate.py /tmp/obs-10k --count 10000
    python bench/bench_new_check.py /tmp/obs-10k [--runs 15]

Each round writes one observation with `obsrepo new` (a whole process) and then runs
`obsrepo check` (a whole process) on the work tree; the cache is warmed by one check first.
Prints the medians of new, of check after new, and of check with nothing new (the floor), and
how many documents the check after new read (OBSREPO_DEBUG). The documents written are
removed at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def timed(repo: str, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "OBSREPO_DEBUG": "1"})
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    timed(repo, "check")  # the cache warm
    new, after, floor, read, written = [], [], [], [], []
    try:
        for n in range(args.runs):
            seconds, done = timed(repo, "new", "--source", "agent/bench", "--event", f"bench {n} {time.time_ns()}",
                                  "--entity", f"task/bench-{n}", "--field", f"n={n}")
            assert done.returncode == 0, done.stderr
            written.append(done.stdout.strip())
            new.append(seconds)
            seconds, done = timed(repo, "check")
            assert done.returncode == 0, done.stdout + done.stderr
            after.append(seconds)
            found = re.search(r"read (\d+) of", done.stderr)
            read.append(int(found.group(1)) if found else -1)
            floor.append(timed(repo, "check")[0])
    finally:
        for path in written:
            if path:
                os.remove(os.path.join(repo, path))
    med = statistics.median
    print(f"new                {med(new) * 1000:8.1f} ms")
    print(f"check after new    {med(after) * 1000:8.1f} ms  (documents read: {sorted(set(read))})")
    print(f"check, nothing new {med(floor) * 1000:8.1f} ms")
    print(f"after / floor      {med(after) / med(floor):8.2f}")


if __name__ == "__main__":
    main()

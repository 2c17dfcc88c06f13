"""Benchmark the live side: `obsrepo watch`, and a document parsed once between check and index.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_watch.py /tmp/obs-100k [--seconds 60] [--readers 8]

Works on a copy (`REPO-watchbench`, made once with `cp -a`, or anew with --fresh-copy; it gets new
commits). Reports:
  apply        a watcher (in this process) applying a commit of 10 observations: `Watcher.update`
               from the ref change to the published index and overlay (median of 10)
  fresh        a watcher process (`obsrepo watch`) under a steady stream of one change every
               2 s, alternating a commit of 10 observations and a draft saved in the work tree:
               time from the change to the document being visible in `query` (p50, p95), for
               --fresh-seconds (default 60)
  stream       load: READERS processes running `query --scope … --limit 20` in a loop (in process,
               `Repository.query`): p99 latency idle for 15 s, then for --seconds (default 300)
               while the stream above runs; failed reads; freshness under that load too
  parsed once  `git ls-tree -r HEAD | git cat-file --batch` (the floor), `index --full` on a
               fresh cache (cold), and `check` then `index --full` (whole processes; median of 3)
  increment    `obsrepo index` after a commit of 10 observations (whole process, median of 5)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time

ENV = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench",
           GIT_COMMITTER_EMAIL="b@x")


def run(cmd, cwd, shell=False) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-1500:]}")
    return elapsed


def doc(serial: int, i: int, tag: str) -> tuple[str, str]:
    obs_id = f"obs-20301201-000000-{tag}{serial:05d}x{i:02d}"
    text = (f"---\nspec: observation/v1\nid: {obs_id}\ntimestamp: 2030-12-01T00:{i % 60:02d}:{serial % 60:02d}Z\n"
            f"source: agent/bench\nevent: bench {tag} {serial}-{i}\ntype: bench.added\nscope: [task/bench-{tag}{serial}]\n"
            f"---\n\nIncrement {serial}, observation {i}.\n")
    return f"observations/2030/12/01/{obs_id}.md", text


def write_docs(repo: str, serial: int, count: int, tag: str) -> list[str]:
    paths = []
    for i in range(count):
        path, text = doc(serial, i, tag)
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
    return paths


def commit(repo: str, paths: list[str], message: str) -> None:
    subprocess.run(["git", "add", "--", *paths], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "commit", "-q", "--no-verify", "-m", message], cwd=repo, check=True, env=ENV)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * len(values)) - 1))] if values else float("nan")


# -- apply, in process ------------------------------------------------------------------------

def apply_in_process(repo: str, reps: int) -> list[float]:
    from obsrepo.index.writer import IndexFiles
    from obsrepo.ops import Session
    from obsrepo.watch.loop import Watcher
    from obsrepo.watch.plan import WatchPlan

    watcher = Watcher(Session(repo), verbose=False)
    times = []
    with IndexFiles(watcher.index_file).watch_lock():
        watcher.update(WatchPlan(reconcile=True))
        for serial in range(reps):
            commit(repo, write_docs(repo, 90000 + serial, 10, f"a{os.getpid() % 1000}"), f"apply {serial}")
            start = time.perf_counter()
            watcher.update(WatchPlan(git=True))
            times.append(time.perf_counter() - start)
    return times


# -- readers ----------------------------------------------------------------------------------

def reader(repo: str, scope: str, stop_at: float, phase_at: float, out) -> None:
    from obsrepo import Repository
    from obsrepo.read.query import QueryRequest

    api = Repository(repo)
    idle, loaded, failed = [], [], 0
    while (now := time.monotonic()) < stop_at:
        start = time.perf_counter()
        try:
            api.query(QueryRequest(scopes=(scope,), limit=20))
        except Exception as exc:  # noqa: BLE001 - counted, and the first few shown
            failed += 1
            if failed <= 3:
                print(f"read failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        (idle if now < phase_at else loaded).append(time.perf_counter() - start)
    out.put((idle, loaded, failed))


def visible(api, scope: str) -> bool:
    from obsrepo.read.query import QueryRequest

    return api.query(QueryRequest(scopes=(scope,), limit=1))["total"] > 0


def stream(repo: str, seconds: float, readers: int, label: str) -> dict:
    from obsrepo import Repository

    watch = subprocess.Popen([sys.executable, "-m", "obsrepo", "watch", "-q"], cwd=repo, env=ENV,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    api = Repository(repo)
    deadline = time.monotonic() + 120
    while api.status()["watcher"] is None or "updated_at" not in (api.status()["watcher"] or {}):
        if time.monotonic() > deadline or watch.poll() is not None:
            raise SystemExit(f"the watcher did not start: {watch.stderr.read() if watch.stderr else ''}")
        time.sleep(0.1)
    scope = "task/bench-hot"
    idle_seconds = 15.0 if readers else 0.0
    start = time.monotonic()
    phase_at, stop_at = start + idle_seconds, start + idle_seconds + seconds
    queue: multiprocessing.Queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=reader, args=(repo, scope, stop_at, phase_at, queue), daemon=True)
             for _ in range(readers)]
    for proc in procs:
        proc.start()
    time.sleep(max(0.0, phase_at - time.monotonic()))
    fresh_commit, fresh_save = [], []
    serial = 0
    while time.monotonic() < stop_at - 2:
        tick = time.monotonic()
        serial += 1
        tag = label + ("c" if serial % 2 else "s")
        paths = write_docs(repo, serial, 10 if tag.endswith("c") else 1, tag)
        if tag.endswith("c"):
            commit(repo, paths, f"stream {serial}")
        changed = time.perf_counter()
        while not visible(api, f"task/bench-{tag}{serial}"):
            if time.perf_counter() - changed > 10:
                break
            time.sleep(0.005)
        (fresh_commit if tag.endswith("c") else fresh_save).append(time.perf_counter() - changed)
        time.sleep(max(0.0, tick + 2.0 - time.monotonic()))
    idle, loaded, failed = [], [], 0
    for _ in procs:
        i, lo, f = queue.get()
        idle += i
        loaded += lo
        failed += f
    for proc in procs:
        proc.join()
    watch.terminate()
    code = watch.wait(timeout=20)
    return {"fresh_commit": fresh_commit, "fresh_save": fresh_save, "idle": idle, "loaded": loaded, "failed": failed,
            "watch_exit": code}


# -- parsed once ------------------------------------------------------------------------------

def parsed_once(repo: str, runs: int) -> dict[str, float]:
    git_dir = os.path.join(repo, ".git", "obsrepo")
    floor, cold, after_check, check = [], [], [], []
    for _ in range(runs):
        floor.append(run("git ls-tree -r --format='%(objectname)' HEAD observations comprehension | git cat-file --batch > /dev/null",
                         repo, shell=True))
        shutil.rmtree(git_dir, ignore_errors=True)
        cold.append(run([sys.executable, "-m", "obsrepo", "index", "--full", "-q"], repo))
        shutil.rmtree(git_dir, ignore_errors=True)
        check.append(run([sys.executable, "-m", "obsrepo", "check"], repo))
        after_check.append(run([sys.executable, "-m", "obsrepo", "index", "--full", "-q"], repo))
    return {"floor": statistics.median(floor), "cold": statistics.median(cold),
            "check": statistics.median(check), "after_check": statistics.median(after_check)}


def increment(repo: str, runs: int) -> list[float]:
    times = []
    for serial in range(runs):
        commit(repo, write_docs(repo, 95000 + serial, 10, f"i{os.getpid() % 1000}"), f"increment {serial}")
        times.append(run([sys.executable, "-m", "obsrepo", "index", "-q"], repo))
    return times


def freshness(got: dict, seconds: float, readers: int) -> None:
    both = got["fresh_commit"] + got["fresh_save"]
    print(f"freshness ({len(both)} changes over {seconds:.0f} s, one every 2 s, {readers} readers): "
          f"p50 {pct(both, 50) * 1000:.0f} ms, p95 {pct(both, 95) * 1000:.0f} ms (target <= 1000 ms); "
          f"commits p95 {pct(got['fresh_commit'], 95) * 1000:.0f} ms, saves p95 {pct(got['fresh_save'], 95) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--seconds", type=float, default=300.0, help="the load phase (readers and the stream)")
    parser.add_argument("--fresh-seconds", type=float, default=60.0, help="the freshness phase (the stream alone)")
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=["apply", "increment", "fresh", "stream", "parsed"], action="append")
    parser.add_argument("--fresh-copy", action="store_true",
                        help="make the copy anew: the commits of earlier runs (loose objects, a longer chain, a "
                             "growing last row group) slow updates down, so compare figures taken on fresh copies")
    args = parser.parse_args()
    work = args.repo.rstrip("/") + "-watchbench"
    if args.fresh_copy:
        shutil.rmtree(work, ignore_errors=True)
    if not os.path.isdir(work):
        subprocess.run(["cp", "-a", args.repo, work], check=True)
    run([sys.executable, "-m", "obsrepo", "index", "-q"], work)
    only = set(args.only or ["apply", "increment", "fresh", "stream", "parsed"])
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode compiled
    if "apply" in only:
        times = apply_in_process(work, 10)
        print(f"apply a commit of 10 observations (watcher, in process): median {statistics.median(times) * 1000:.0f} ms, "
              f"max {max(times) * 1000:.0f} ms (target <= 150 ms)")
    if "increment" in only:
        times = increment(work, 5)
        print(f"`obsrepo index` after a commit of 10 observations: median {statistics.median(times):.3f} s (target <= 0.35 s)")
    if "fresh" in only:
        freshness(stream(work, args.fresh_seconds, 0, f"f{os.getpid() % 1000}"), args.fresh_seconds, 0)
    if "stream" in only:
        got = stream(work, args.seconds, args.readers, f"l{os.getpid() % 1000}")
        freshness(got, args.seconds, args.readers)
        idle99, loaded99 = pct(got["idle"], 99), pct(got["loaded"], 99)
        print(f"load: {len(got['idle']) + len(got['loaded'])} reads, {got['failed']} failed; p99 idle {idle99 * 1000:.1f} ms "
              f"({len(got['idle'])} reads), p99 during commits {loaded99 * 1000:.1f} ms ({len(got['loaded'])} reads): "
              f"{loaded99 / idle99:.2f}x (target <= 3x); p50 idle {pct(got['idle'], 50) * 1000:.1f} ms, "
              f"loaded {pct(got['loaded'], 50) * 1000:.1f} ms; watcher exit {got['watch_exit']}")
    if "parsed" in only:
        got = parsed_once(work, args.runs)
        print(f"floor `git ls-tree | git cat-file --batch`: {got['floor']:.3f} s")
        print(f"cold `index --full` (no cache): {got['cold']:.2f} s ({got['cold'] / got['floor']:.1f}x floor; target <= 5x)")
        print(f"`check` on a fresh cache: {got['check']:.2f} s; then `index --full`: {got['after_check']:.2f} s "
              f"({got['after_check'] / got['floor']:.1f}x floor; target <= 2.5x)")


if __name__ == "__main__":
    main()

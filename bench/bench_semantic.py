"""Benchmark recall's ranking by meaning (docs/design.md §15) on a repository from bench/generate.py.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_semantic.py /tmp/obs-100k [--runs 3] [--reps 30]

It builds a random model2vec model of potion-base-8M's shape (a WordPiece vocabulary of 30,000
tokens × 256 float32, in the library's own layout) in a folder of its own, and points
OBSREPO_EMBEDDER at it. Medians of wall and CPU time (user + sys of the measured process: steadier
on a shared machine), each beside its baseline measured in the same run:
  index --full        without an embedder; with it and a cold vector cache; with it, warm
  +10 observations    `obsrepo index` after a commit of 10, with and without the embedder: the
                      median, and the mean over --steps updates (a few new texts wait for a
                      larger update: docs/recall.md)
  index file          bytes with and without vectors (they live in the vector cache)
  queries in process  lexical, hybrid, semantic `--text` through a kept-open Session (what the
                      library and the MCP server pay), p50 and p95, unbound and tenant-bound
  CLI                 `query --text` lexical and hybrid, whole processes
Run it on a copy: it adds commits to REPO and fills REPO's vector cache.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from embedders import write_wordpiece_model  # noqa: E402 - the tests' random model of potion's shape

TOKENS, DIMENSION = 30_000, 256  # minishlab/potion-base-8M: 29,528 tokens × 256
TEXT = "invoice parsed"


def write_random_model(folder: Path, seed: int = 7) -> Path:
    """A model2vec model of potion-base-8M's shape: a WordPiece vocabulary (every letter and
    digit, pairs and triples, with and without `##`) and random float32 rows (the tests' own)."""
    return write_wordpiece_model(folder, tokens=TOKENS, dimension=DIMENSION, seed=seed)


def in_process(repo: str, embedder: str, reps: int, org: str) -> dict[str, tuple[float, float, float]]:
    """p50 and p95 (wall) and the p50 of CPU time (this process's threads, DuckDB's included:
    steadier than wall on a shared machine) of `query --text` through a kept-open Session (the
    library's and the MCP server's path), limit 20; unbound and bound to the tenant org=`org`."""
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query
    from obsrepo.ops.values import Binding

    results: dict[str, tuple[float, float, float]] = {}
    for bound in (False, True):
        session = Session(repo, embedder=embedder, binding=Binding.of({"org": org}) if bound else Binding.of({}))
        session.keep_open()
        try:
            for match in ("lexical", "hybrid", "semantic"):
                request = Query(text=TEXT, match=match, limit=20)
                run(session, request)  # warm: the model, the index generation, the mapped vectors
                times, cpu = [], []
                for _ in range(reps):
                    start, started = time.perf_counter(), time.process_time()
                    run(session, request)
                    times.append(time.perf_counter() - start)
                    cpu.append(time.process_time() - started)
                times.sort()
                label = f"{match}{', bound' if bound else ''}"
                results[label] = (statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))],
                                  statistics.median(cpu))
        finally:
            session.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--model", help="an existing model folder (default: a random one, written to a temporary folder)")
    parser.add_argument("--queries-only", action="store_true", help="only the queries (REPO indexed with the embedder)")
    parser.add_argument("--updates-only", action="store_true", help="only the updates and the queries (REPO indexed)")
    parser.add_argument("--steps", type=int, default=12, help="commits of 10 observations, indexed with and without the embedder")
    parser.add_argument("--org", default="northwind", help="the tenant of the bound queries (generate.py's largest)")
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    work = Path(tempfile.mkdtemp(prefix="bench-semantic-"))
    try:
        model = Path(args.model) if args.model else write_random_model(work / "model")
        embedder = f"model2vec:{model}"
        plain = {k: v for k, v in os.environ.items() if k != "OBSREPO_EMBEDDER"}
        with_model = dict(plain, OBSREPO_EMBEDDER=embedder)
        os.environ.pop("OBSREPO_EMBEDDER", None)
        obsrepo = [sys.executable, "-m", "obsrepo"]
        cache = Path(subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=repo,
                                    capture_output=True, text=True, check=True).stdout.strip()) / "obsrepo" / "embeddings"
        index_file = Path(repo) / ".obsrepo" / "index.duckdb"

        def timed(cmd: list[str], env: dict[str, str], before=None) -> Figure:
            runs = []
            for _ in range(args.runs):
                if before is not None:
                    before()
                runs.append(measured(cmd, repo, env))
            return median(runs)

        if not args.queries_only and not args.updates_only:
            lexical_full = timed(obsrepo + ["index", "--full", "--quiet"], plain)
            lexical_bytes = index_file.stat().st_size
            cold = timed(obsrepo + ["index", "--full", "--quiet"], with_model, before=lambda: shutil.rmtree(cache, True))
            warm = timed(obsrepo + ["index", "--full", "--quiet"], with_model)
            vector_bytes = index_file.stat().st_size
            cache_bytes = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
            print(f"index --full, no embedder          : {lexical_full}")
            print(f"index --full, cold vector cache    : {cold}  ({cold.ratio(lexical_full)}; target <= 2x)")
            print(f"index --full, warm vector cache    : {warm}  ({warm.ratio(lexical_full)}; target <= 1.1x)")
            print(f"index file, no vectors / vectors   : {lexical_bytes / 2**20:7.1f} MiB / {vector_bytes / 2**20:.1f} MiB "
                  f"(+{(vector_bytes / lexical_bytes - 1) * 100:.1f} %; target <= 5 %); vector cache {cache_bytes / 2**20:.1f} MiB")
        if not args.queries_only:
            updates(repo, args.steps, plain, with_model)
            paired(repo, args.steps, plain, with_model)
        for label, (p50, p95, cpu) in in_process(repo, embedder, args.reps, args.org).items():
            print(f"in process {label:<18s}      : p50 {p50 * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms  (CPU p50 {cpu * 1000:6.1f} ms)")
        query = obsrepo + ["query", "--text", TEXT, "--limit", "20"]
        cli_lexical = timed(query + ["--match", "lexical"], with_model)
        cli_hybrid = timed(query + ["--match", "hybrid"], with_model)
        print(f"CLI query --text, lexical          : {cli_lexical}")
        print(f"CLI query --text, hybrid           : {cli_hybrid}  ({cli_hybrid.ratio(cli_lexical)}; target <= 1.3x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fresh_serial(repo: str) -> int:
    """A serial for `add_files` that no earlier run used, nor the next one: twice the number of
    commits (each serial from here on is a commit of its own), far above generate.py's."""
    commits = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
    return 1_000_000 + 2 * int(commits.stdout)


def add_files(repo: str, n: int, serial: int) -> None:
    """A commit of `n` new observations, written as files (what `obsrepo new` writes; `new`
    itself judges each against the whole work tree, seconds a file at 100,000)."""
    folder = Path(repo) / "observations" / "2027" / "01" / "02"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        obs_id = f"obs-20270102-{i % 24:02d}{serial % 60:02d}{i % 60:02d}-{serial:08x}"
        (folder / f"{obs_id}.md").write_text(
            f"---\nspec: observation/v1\nid: {obs_id}\ntimestamp: 2027-01-02T{i % 24:02d}:{serial % 60:02d}:{i % 60:02d}Z\n"
            f"source: agent/bench\nevent: bench update {serial}-{i}\ntype: bench.added\nscope: [task/bench-{serial}]\n---\n\n"
            f"Update {serial}, observation {i}.\n", encoding="utf-8")
    subprocess.run(["git", "add", "observations"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"bench update {serial}"], cwd=repo, check=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench",
                            GIT_COMMITTER_EMAIL="b@x"))


def updates(repo: str, steps: int, plain: dict[str, str], with_model: dict[str, str]) -> None:
    """`obsrepo index` after a commit of 10 observations, alternately without and with the
    embedder (each run the update of its own commit: the embedder's runs find their texts, and
    those the runs without it keyed, to embed). An update leaves up to DEFERRED_TEXTS new texts
    pending rather than load the model for them, so most runs with it embed nothing and one in
    a few embeds what waited: the median is the common update, the mean what an update costs
    over many."""
    from obsrepo.embed import DEFERRED_TEXTS

    step_plain, step_model = [], []
    base = fresh_serial(repo)
    for serial in range(base, base + 2 * steps, 2):
        add_files(repo, 10, serial)
        step_plain.append(measured([sys.executable, "-m", "obsrepo", "index", "--quiet"], repo, plain))
        add_files(repo, 10, serial + 1)
        step_model.append(measured([sys.executable, "-m", "obsrepo", "index", "--quiet"], repo, with_model))
    print("index +10, each run (CPU s)         : no embedder " + " ".join(f"{f.cpu:.2f}" for f in step_plain))
    print("                                      embedder    " + " ".join(f"{f.cpu:.2f}" for f in step_model))
    plain_step, model_step = median(step_plain), median(step_model)
    plain_mean, model_mean = mean(step_plain), mean(step_model)
    print(f"index +10 observations, no embedder: median {plain_step}, mean {plain_mean}  ({steps} updates)")
    print(f"index +10 observations, embedder   : median {model_step}  (+{(model_step.wall - plain_step.wall) * 1000:.0f} ms wall, "
          f"+{(model_step.cpu - plain_step.cpu) * 1000:.0f} ms CPU; target <= 50 ms)")
    print(f"                                     mean   {model_mean}  (+{(model_mean.wall - plain_mean.wall) * 1000:.0f} ms wall, "
          f"+{(model_mean.cpu - plain_mean.cpu) * 1000:.0f} ms CPU: up to {DEFERRED_TEXTS} texts wait, then one update embeds them)")


def paired(repo: str, reps: int, plain: dict[str, str], with_model: dict[str, str]) -> None:
    """The same update (a commit of 10 observations) from the same index, with and without the
    embedder, `reps` times each, alternating which goes first: the index folder is put back
    before every run, so each pair differs by the embedder alone. With the index's pending texts
    and these 10 within DEFERRED_TEXTS, the update with the embedder leaves them pending."""
    index = Path(repo) / ".obsrepo"
    kept = index / "bench-kept"  # the index file kept by a second link (an update publishes a new file), the rest copied
    try:
        measured([sys.executable, "-m", "obsrepo", "index", "--quiet"], repo, with_model)  # at HEAD, with vectors
        kept.mkdir()
        for item in index.iterdir():
            if item.is_file():
                (os.link if item.name == "index.duckdb" else shutil.copy2)(item, kept / item.name)
        add_files(repo, 10, fresh_serial(repo))
        runs: dict[str, list[Figure]] = {"plain": [], "model": []}
        for rep in range(reps):
            for name in (("plain", "model") if rep % 2 else ("model", "plain")):
                for item in kept.iterdir():  # the same file (its inode: the index's seal names it), put back
                    os.link(item, index / f".{item.name}.back") if item.name == "index.duckdb" else \
                        shutil.copy2(item, index / f".{item.name}.back")
                    os.replace(index / f".{item.name}.back", index / item.name)
                    (index / f".{item.name}.back").unlink(missing_ok=True)  # a rename onto a link of itself does nothing
                runs[name].append(measured([sys.executable, "-m", "obsrepo", "index", "--quiet"], repo,
                                           plain if name == "plain" else with_model))
        differences = sorted(m.wall - p.wall for p, m in zip(runs["plain"], runs["model"], strict=True))
        cpu_differences = sorted(m.cpu - p.cpu for p, m in zip(runs["plain"], runs["model"], strict=True))
        print(f"the same +10 update, no embedder   : {median(runs['plain'])}  ({reps} runs from the same index)")
        print(f"the same +10 update, embedder      : {median(runs['model'])}  (paired differences, median: "
              f"+{statistics.median(differences) * 1000:.0f} ms wall, +{statistics.median(cpu_differences) * 1000:.0f} ms CPU; "
              f"target <= 50 ms)")
    finally:
        shutil.rmtree(kept, ignore_errors=True)


class Figure(NamedTuple):
    """A command's wall and CPU seconds."""

    wall: float
    cpu: float

    def __str__(self) -> str:
        return f"{self.wall:7.3f} s (CPU {self.cpu:6.3f} s)"

    def ratio(self, base: Figure) -> str:
        return f"{self.wall / base.wall:.2f}x wall, {self.cpu / base.cpu:.2f}x CPU"


def median(figures: list[Figure]) -> Figure:
    return Figure(statistics.median(f.wall for f in figures), statistics.median(f.cpu for f in figures))


def mean(figures: list[Figure]) -> Figure:
    return Figure(statistics.fmean(f.wall for f in figures), statistics.fmean(f.cpu for f in figures))


def measured(cmd: list[str], cwd: str, env: dict[str, str]) -> Figure:
    """Wall and CPU (user + sys of the finished child) of one run of `cmd`."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-1500:]}")
    return Figure(elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    main()

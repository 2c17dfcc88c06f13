"""Benchmark recall's ranking by meaning (docs/design.md §15) on a repository from bench/generate.py.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_semantic.py /tmp/obs-100k [--runs 3] [--reps 30]

It builds a random model2vec model of potion-base-8M's shape (a WordPiece vocabulary of 30,000
tokens × 256 float32, in the library's own layout) in a folder of its own, and points
OBSREPO_EMBEDDER at it. Medians of wall and CPU time (user + sys of the measured process: steadier
on a shared machine), each beside its baseline measured in the same run:
  index --full        without an embedder; with it and a cold vector cache; with it, warm
  +10 observations    `obsrepo index` after a commit of 10, with and without the embedder
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
from bench_index import add_commit  # noqa: E402 - the same helper as the index benchmark
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

        if not args.queries_only:
            lexical_full = timed(obsrepo + ["index", "--full", "--quiet"], plain)
            lexical_bytes = index_file.stat().st_size
            cold = timed(obsrepo + ["index", "--full", "--quiet"], with_model, before=lambda: shutil.rmtree(cache, True))
            warm = timed(obsrepo + ["index", "--full", "--quiet"], with_model)
            vector_bytes = index_file.stat().st_size
            cache_bytes = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
            step_plain, step_model = [], []
            for serial in range(args.runs):
                add_commit(repo, 10, 100 + 2 * serial)
                step_plain.append(measured(obsrepo + ["index", "--quiet"], repo, plain))
                measured(obsrepo + ["index", "--quiet"], repo, with_model)  # the vectors of that commit
                add_commit(repo, 10, 101 + 2 * serial)
                step_model.append(measured(obsrepo + ["index", "--quiet"], repo, with_model))
            plain_step, model_step = median(step_plain), median(step_model)
            print(f"index --full, no embedder          : {lexical_full}")
            print(f"index --full, cold vector cache    : {cold}  ({cold.ratio(lexical_full)}; target <= 2x)")
            print(f"index --full, warm vector cache    : {warm}  ({warm.ratio(lexical_full)}; target <= 1.1x)")
            print(f"index +10 observations, no embedder: {plain_step}")
            print(f"index +10 observations, embedder   : {model_step}  (+{(model_step.wall - plain_step.wall) * 1000:.0f} ms wall, "
                  f"+{(model_step.cpu - plain_step.cpu) * 1000:.0f} ms CPU; target <= 50 ms)")
            print(f"index file, no vectors / vectors   : {lexical_bytes / 2**20:7.1f} MiB / {vector_bytes / 2**20:.1f} MiB "
                  f"(+{(vector_bytes / lexical_bytes - 1) * 100:.1f} %; target <= 5 %); vector cache {cache_bytes / 2**20:.1f} MiB")
        for label, (p50, p95, cpu) in in_process(repo, embedder, args.reps, args.org).items():
            print(f"in process {label:<18s}      : p50 {p50 * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms  (CPU p50 {cpu * 1000:6.1f} ms)")
        query = obsrepo + ["query", "--text", TEXT, "--limit", "20"]
        cli_lexical = timed(query + ["--match", "lexical"], with_model)
        cli_hybrid = timed(query + ["--match", "hybrid"], with_model)
        print(f"CLI query --text, lexical          : {cli_lexical}")
        print(f"CLI query --text, hybrid           : {cli_hybrid}  ({cli_hybrid.ratio(cli_lexical)}; target <= 1.3x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


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

"""Benchmark recall's ranking by meaning (docs/design.md §15) on a repository from bench/generate.py.

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_semantic.py /tmp/obs-100k [--runs 3] [--reps 30]

It builds a random model2vec model of potion-base-8M's shape (a WordPiece vocabulary of 30,000
tokens × 256 float32, in the library's own layout) in a folder of its own, and points
OBSREPO_EMBEDDER at it. Medians (wall), each beside its baseline measured in the same run:
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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from bench_index import add_commit, wall  # noqa: E402 - the same helpers as the index benchmark
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

        def timed(cmd: list[str], env: dict[str, str], before=None) -> float:
            times = []
            for _ in range(args.runs):
                if before is not None:
                    before()
                times.append(wall_env(cmd, repo, env))
            return statistics.median(times)

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
                step_plain.append(wall_env(obsrepo + ["index", "--quiet"], repo, plain))
                wall_env(obsrepo + ["index", "--quiet"], repo, with_model)  # the vectors of that commit
                add_commit(repo, 10, 101 + 2 * serial)
                step_model.append(wall_env(obsrepo + ["index", "--quiet"], repo, with_model))
            print(f"index --full, no embedder          : {lexical_full:7.3f} s")
            print(f"index --full, cold vector cache    : {cold:7.3f} s  ({cold / lexical_full:.2f}x; target <= 2x)")
            print(f"index --full, warm vector cache    : {warm:7.3f} s  ({warm / lexical_full:.2f}x; target <= 1.1x)")
            print(f"index +10 observations, no embedder: {statistics.median(step_plain):7.3f} s")
            print(f"index +10 observations, embedder   : {statistics.median(step_model):7.3f} s  "
                  f"(+{(statistics.median(step_model) - statistics.median(step_plain)) * 1000:.0f} ms; target <= 50 ms)")
            print(f"index file, no vectors / vectors   : {lexical_bytes / 2**20:7.1f} MiB / {vector_bytes / 2**20:.1f} MiB "
                  f"(+{(vector_bytes / lexical_bytes - 1) * 100:.1f} %; target <= 5 %); vector cache {cache_bytes / 2**20:.1f} MiB")
        for label, (p50, p95, cpu) in in_process(repo, embedder, args.reps, args.org).items():
            print(f"in process {label:<18s}      : p50 {p50 * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms  (CPU p50 {cpu * 1000:6.1f} ms)")
        query = obsrepo + ["query", "--text", TEXT, "--limit", "20"]
        cli_lexical = timed(query + ["--match", "lexical"], with_model)
        cli_hybrid = timed(query + ["--match", "hybrid"], with_model)
        print(f"CLI query --text, lexical          : {cli_lexical:7.3f} s")
        print(f"CLI query --text, hybrid           : {cli_hybrid:7.3f} s  ({cli_hybrid / cli_lexical:.2f}x; target <= 1.3x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def wall_env(cmd: list[str], cwd: str, env: dict[str, str]) -> float:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return wall(cmd, cwd)
    finally:
        os.environ.clear()
        os.environ.update(saved)


if __name__ == "__main__":
    main()

"""Benchmark stewardship (docs/design.md §14) on a repository from bench/generate.py with feedback.

    python bench/generate.py /tmp/obs-stew --count 100000 --feedback 20000
    python bench/bench_steward.py /tmp/obs-stew [--runs 3]

Reports medians (wall) and ratios to a baseline measured in the same run:
  weights fold  a full index build in this process (`Repository.index(full=True)`, what
                `obsrepo index --full` runs), with the weights fold (`refresh_weights`: the
                feedback read in (commit, timestamp, id) order, the EMA, both tables written)
                timed separately inside the same build; the fold's share is fold / (build − fold)
  text query    `query --text` ranked by bm25 × weight against `--unweighted`, in the process
                on one read-only connection, alternated, and as whole CLI commands
  export        `obsrepo export --format parquet|csv` of every observation (whole commands);
                baseline: `obsrepo query --limit 1` (the interpreter, imports, opening the index)
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

from bench_index import wall  # bench/ is the script's folder: on sys.path

TEXTS = ["invoice", "backup completed", "deploy build", "printer jammed", "payment"]


def builds(repo: str, runs: int) -> tuple[float, float]:
    """Median (build, fold) seconds over `runs` full builds, the fold timed inside each build."""
    import obsrepo.index.build as build
    from obsrepo.api import Repository

    folds: list[float] = []
    original = build.refresh_weights

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            folds.append(time.perf_counter() - start)

    build.refresh_weights = timed
    try:
        api = Repository(repo)
        totals = []
        for _ in range(runs):
            start = time.perf_counter()
            api.index(full=True)
            totals.append(time.perf_counter() - start)
    finally:
        build.refresh_weights = original
    return statistics.median(totals), statistics.median(folds)


def text_queries(repo: str, reps: int) -> tuple[float, float]:
    """Median seconds of one `--text` query weighted and unweighted (alternated, limit 20)."""
    from obsrepo.gitstore import Git
    from obsrepo.index import IndexFiles, open_reader
    from obsrepo.index.paths import index_path
    from obsrepo.read.query import QueryRequest, run_query
    from obsrepo.read.scope import ReadScope

    con = open_reader(IndexFiles(index_path(repo, None)).path)
    scope = ReadScope(con, Git(repo))
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(reps):
        for text in TEXTS:
            for unweighted in (False, True):
                request = QueryRequest(text=text, limit=20, unweighted=unweighted)
                start = time.perf_counter()
                run_query(scope, request)
                times[unweighted].append(time.perf_counter() - start)
    scope.close()
    con.close()
    return statistics.median(times[False]), statistics.median(times[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("repo", help="a repository from bench/generate.py --feedback (it is indexed again)")
    parser.add_argument("--runs", type=int, default=3, help="full builds and whole commands of each kind")
    parser.add_argument("--reps", type=int, default=20, help="rounds of in-process text queries")
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    obsrepo = [sys.executable, "-m", "obsrepo"]

    build, fold = builds(repo, args.runs)
    weighted, unweighted = text_queries(repo, args.reps)
    cli = {flag: [] for flag in ((), ("--unweighted",))}
    for _ in range(args.runs):
        for flag, times in cli.items():
            times.append(wall(obsrepo + ["query", "--text", "invoice", "--limit", "20", *flag], repo))
    count = int(subprocess.run(obsrepo + ["sql", "SELECT count(*) FROM observations", "--format", "csv"], cwd=repo,
                               capture_output=True, text=True, check=True).stdout.split()[-1])
    feedback = int(subprocess.run(obsrepo + ["sql", "SELECT count(*) FROM observation_weight_history", "--format", "csv"],
                                  cwd=repo, capture_output=True, text=True, check=True).stdout.split()[-1])
    baseline, parquet, csv = [], [], []
    with tempfile.TemporaryDirectory(prefix="obsrepo-export-") as scratch:
        for run in range(args.runs):
            baseline.append(wall(obsrepo + ["query", "--limit", "1"], repo))
            folder = os.path.join(scratch, f"lake-{run}")
            parquet.append(wall(obsrepo + ["export", "--format", "parquet", "--output", folder], repo))
            shutil.rmtree(folder)
            csv.append(wall(obsrepo + ["export", "--format", "csv", "--output", os.path.join(scratch, "out.csv")], repo))
    base, pq, cs = (statistics.median(t) for t in (baseline, parquet, csv))
    cli_w, cli_u = (statistics.median(t) for t in cli.values())

    print(f"observations: {count} ({feedback} feedback folded); medians of {args.runs} runs")
    print(f"index --full (in process)            : {build:7.3f} s")
    print(f"  of which the weights fold          : {fold:7.3f} s  -> adds {fold / (build - fold):.1%} (target <= 15 %)")
    print(f"query --text, weighted (in process)  : {weighted * 1000:7.1f} ms")
    print(f"query --text, --unweighted           : {unweighted * 1000:7.1f} ms  -> weighted {weighted / unweighted:.2f}x "
          "(target <= 1.2x)")
    print(f"CLI query --text invoice, weighted   : {cli_w:7.3f} s  ({cli_w / cli_u:.2f}x --unweighted {cli_u:.3f} s)")
    print(f"baseline: CLI query --limit 1        : {base:7.3f} s")
    print(f"export --format parquet (whole)      : {pq:7.3f} s  ({pq / base:.1f}x baseline, {count / pq:,.0f} rows/s; "
          "target <= 3 s)")
    print(f"export --format csv (whole)          : {cs:7.3f} s  ({cs / base:.1f}x baseline, {count / cs:,.0f} rows/s; "
          "target <= 4 s)")


if __name__ == "__main__":
    main()

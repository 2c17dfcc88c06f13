"""Benchmark the per-document path of a full index build, stage by stage, and the whole commands
that pay it, for two code trees in the same run (this one and a baseline such as main).

    python bench/generate.py /tmp/obs-10k --count 10000
    git worktree add --detach /tmp/base main
    python bench/bench_reader.py /tmp/obs-10k --base /tmp/base/tooling [--runs 3] [--stages-only]

Stages (µs of CPU per document, medians of `--runs` passes over the same documents held in memory, one
process, one core):
  read        bytes → `Document` (`format.document.read_document`: the YAML reader)
  validate    the rest of `analyze` (validation, facts, record) + `place` + the cache rows
  rows        `rows_for` + the Arrow table of a chunk (index/build.py's chunk path)
  chunk path  the three together, per document

Whole processes (medians of wall time, and of CPU time: the process and all it waited for), each
tree through its own PYTHONPATH, runs interleaved:
  floor              `git ls-tree -r HEAD | git cat-file --batch` over the same blobs
  check cold         `obsrepo check`, analysis cache removed
  index --full cold  `obsrepo index --full`, cache removed (nothing parsed before)
  index after check  `obsrepo index --full` with the cache a cold `check` filled

`--profile` prints cProfile's top entries (cumulative) of one pass of the chunk path per tree.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OWN = os.path.join(os.path.dirname(HERE), "tooling")


def load_documents(repo: str, count: int) -> list[tuple[str, str, bytes]]:
    from obsrepo.gitstore import Git

    listing = subprocess.run(["git", "ls-tree", "-r", "HEAD", "observations", "comprehension"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    files = [(line.split("\t", 1)[1], line.split()[2]) for line in listing][:count]
    blobs = dict(Git(repo).read_blobs(sorted({blob for _, blob in files})))
    return [(path, blob, blobs[blob]) for path, blob in files]


def stages(repo: str, count: int, runs: int, profile: bool) -> dict[str, float]:
    """In this process (PYTHONPATH picks the tree): µs per document of each stage."""
    from datetime import datetime, timezone

    import obsrepo.format.validate  # noqa: F401 - loaded before timing, as a build warms it up
    from obsrepo.format.document import read_document
    from obsrepo.index import build
    from obsrepo.index.columns import OBS_COLUMNS
    from obsrepo.index.history import Commit
    from obsrepo.index.rows import arrow_table
    try:  # the rows' own module since the build was split (documents as named records)
        from obsrepo.index import documents
        from obsrepo.index.plan import Addition as version
        parse_for_cache = documents.parse_for_cache
    except ImportError:
        documents, version, parse_for_cache = build, lambda *file: list(file), build._parse_for_cache

    docs = load_documents(repo, count)
    info = {"c" * 40: Commit("c" * 40, datetime(2026, 1, 1, tzinfo=timezone.utc), "bench", "bench@example.com")}
    files = [version(path, blob, 1, "c" * 40) for path, blob, _ in docs]

    def read() -> None:
        for path, _, data in docs:
            read_document(path, data)

    def analyse() -> list:
        return [parse_for_cache(path, data)[:2] for path, _, data in docs]

    def rows(parsed: list) -> None:  # what build._chunk does after parsing, in each tree
        for start in range(0, len(files), build.CHUNK):
            chunk_files, chunk_parsed = files[start:start + build.CHUNK], parsed[start:start + build.CHUNK]
            if hasattr(documents, "sort_parsed"):
                from obsrepo.index.rows import observation_batch

                observation_batch(documents.sort_parsed(chunk_files, chunk_parsed, 0)[0], info)
            else:
                arrow_table("obs_versions", OBS_COLUMNS, documents.rows_for(chunk_files, chunk_parsed, 0, info)[0])

    def chunk_path() -> None:
        rows(analyse())

    if profile:
        import cProfile
        import pstats

        chunk_path()  # warm: every import done
        profiler = cProfile.Profile()
        profiler.runcall(chunk_path)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(28)
        return {}
    parsed = analyse()
    rows(parsed)  # imports pyarrow, warms everything

    def timed(fn, *args) -> float:
        """CPU µs per document, the cycle collector off (as a build runs the stages since this
        change): what the stage itself costs, whatever else the process holds."""
        samples = []
        for _ in range(runs):
            gc.collect()
            gc.disable()
            start = time.process_time()
            fn(*args)
            samples.append(time.process_time() - start)
            gc.enable()
        return statistics.median(samples) / len(docs) * 1e6

    read_us = timed(read)
    analyse_us = timed(analyse)
    rows_us = timed(rows, parsed)
    return {"read": read_us, "validate": analyse_us - read_us, "rows": rows_us, "chunk path": timed(chunk_path),
            "documents": len(docs)}


def tree_env(tooling: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": tooling}


def run_stages(tooling: str, repo: str, count: int, runs: int, profile: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, repo, "--in-process", "--count", str(count), "--runs", str(runs)]
    proc = subprocess.run(cmd + (["--profile"] if profile else []), env=tree_env(tooling), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    if profile:
        print(proc.stderr)
        return {}
    return json.loads(proc.stdout)


def wall(cmd: list[str] | str, cwd: str, env: dict | None = None, shell: bool = False) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and everything it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # check exits 1 when it finds problems: still a full run
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def clear_cache(repo: str) -> None:
    git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, capture_output=True, text=True).stdout.strip()
    shutil.rmtree(os.path.join(git_dir, "obsrepo"), ignore_errors=True)


def whole(repo: str, trees: dict[str, str], runs: int) -> dict[str, dict[str, tuple[float, float]]]:
    """Whole commands per tree, interleaved run by run so both see the same machine: medians of
    (wall, CPU)."""
    obsrepo = [sys.executable, "-m", "obsrepo"]
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo)
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {name: {} for name in [*trees, "floor"]}
    for _ in range(runs):
        samples["floor"].setdefault("floor", []).append(wall(
            "git ls-tree -r --format='%(objectname)' HEAD observations comprehension | git cat-file --batch > /dev/null",
            repo, shell=True))
        for name, tooling in trees.items():
            env = tree_env(tooling)
            clear_cache(repo)
            samples[name].setdefault("index --full cold", []).append(wall(obsrepo + ["index", "--full", "--quiet"], repo, env))
            clear_cache(repo)
            samples[name].setdefault("check cold", []).append(wall(obsrepo + ["check"], repo, env))
            samples[name].setdefault("index --full after check", []).append(
                wall(obsrepo + ["index", "--full", "--quiet"], repo, env))
    clear_cache(repo)
    return {name: {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in figures.items()}
            for name, figures in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--base", help="the baseline's tooling/ folder (e.g. a worktree of main)")
    parser.add_argument("--count", type=int, default=10000, help="documents for the stage figures")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stages-only", action="store_true")
    parser.add_argument("--whole-only", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    if args.in_process:
        print(json.dumps(stages(repo, args.count, args.runs, args.profile)))
        return
    trees = {"base": os.path.abspath(args.base), "this": OWN} if args.base else {"this": OWN}
    if args.profile:
        for name, tooling in trees.items():
            print(f"== profile, {name} ({tooling})")
            run_stages(tooling, repo, args.count, 1, True)
        return
    if not args.whole_only:
        figures = {name: run_stages(tooling, repo, args.count, args.runs, False) for name, tooling in trees.items()}
        print(f"per document (µs, median of {args.runs} passes over {int(figures['this']['documents'])} documents)")
        for stage in ("read", "validate", "rows", "chunk path"):
            line = "  ".join(f"{name} {figures[name][stage]:7.1f}" for name in trees)
            ratio = f"  ratio {figures['this'][stage] / figures['base'][stage]:.2f}" if "base" in trees else ""
            print(f"  {stage:<11s} {line}{ratio}")
    if not args.stages_only:
        results = whole(repo, trees, args.runs)
        floor, floor_cpu = results["floor"]["floor"]
        count = int(subprocess.run("git ls-files observations comprehension | wc -l", shell=True, cwd=repo,
                                   capture_output=True, text=True).stdout)
        print(f"whole processes, {count} documents (medians of {args.runs}): floor {floor:.3f} s wall, {floor_cpu:.3f} s CPU")
        for command in ("index --full cold", "check cold", "index --full after check"):
            cells = "  ".join(f"{name} {results[name][command][0]:7.3f} s ({results[name][command][0] / floor:4.1f}x floor, "
                              f"CPU {results[name][command][1]:6.2f} s)" for name in trees)
            ratio = f"  ratio {results['this'][command][0] / results['base'][command][0]:.2f}" if "base" in trees else ""
            print(f"  {command:<25s} {cells}{ratio}")


if __name__ == "__main__":
    main()

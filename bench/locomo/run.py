#!/usr/bin/env python3
"""Recall on real conversations: LoCoMo's questions asked of obsrepo, beside bm25s baselines.

    python bench/locomo/run.py DATA.json --model MODEL_FOLDER [--work DIR] [--cli 20] [--reps 1]
    # MODEL_FOLDER: a model2vec folder, e.g. from
    #   python bench/convert_wordllama.py /tmp/wl/wordllama-*.whl /tmp/wl/m2v

It converts the conversations into a fresh repository under --work (bench/locomo/convert.py;
the data set stays where it is: nothing of it is written into this repository), indexes it with
the model as embedder, asks every answerable question (categories 1-4) verbatim with `--scope` of
its conversation and `--limit 10` through the library in one kept-open session, lexical, semantic
and hybrid (cc and rrf), then a sample of --cli questions through whole `obsrepo query`
commands, which must give the same ids and scores. It prints R@1/5/10, hit@5 and MRR per
category and overall (bench/locomo/metrics.py), per-query latency p50/p95 in process and as a
whole command, and the baselines bm25s and bm25s + the same model (the `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tooling"))

from locomo import baselines, convert, metrics  # noqa: E402

OFF = {"time_hint": "off", "entity_hint": "off"}
METHODS = {  # label: Query options
    "obsrepo lexical": {"match": "lexical"},
    "lexical, no entity hint": {"match": "lexical", "entity_hint": "off"},
    "lexical, no hints": {"match": "lexical", **OFF},
    "lexical, no hints, no context": {"match": "lexical", **OFF, "_set": {"PREVIOUS": 0.0, "NEXT": 0.0}},
    "lexical, no hints, no context, no stop words": {"match": "lexical", **OFF,
                                                     "_set": {"PREVIOUS": 0.0, "NEXT": 0.0, "DROP": False}},
    "obsrepo semantic": {"match": "semantic"},
    "obsrepo hybrid cc": {"match": "hybrid"},
    "hybrid cc, alpha 0.5": {"match": "hybrid", "alpha": 0.5},
    "hybrid cc, no hints": {"match": "hybrid", **OFF},
    "obsrepo hybrid rrf": {"match": "hybrid", "fusion": "rrf"},
}


def ask(session, qs, options: dict, reps: int = 1) -> tuple[list[list[str]], list[float], list[dict]]:
    from obsrepo.read import bm25, context

    options = dict(options)
    changed = options.pop("_set", {})  # the levers turned off, in process only (an ablation)
    kept = (context.PREVIOUS, context.NEXT, bm25.DROP_STOP_WORDS)
    context.PREVIOUS, context.NEXT = changed.get("PREVIOUS", kept[0]), changed.get("NEXT", kept[1])
    bm25.DROP_STOP_WORDS = changed.get("DROP", kept[2])
    try:
        return _ask(session, qs, options, reps)
    finally:
        context.PREVIOUS, context.NEXT, bm25.DROP_STOP_WORDS = kept


def _ask(session, qs, options: dict, reps: int) -> tuple[list[list[str]], list[float], list[dict]]:
    from obsrepo.ops import run
    from obsrepo.ops.reads import Query

    answers, times, pages = [], [], []
    for q in qs:
        request = Query(text=q.text, scopes=(f"conversation/{q.conversation}",), limit=10, **options)
        for _ in range(reps):
            start = time.perf_counter()
            page = run(session, request).to_json()
            times.append(time.perf_counter() - start)
        answers.append([o["id"] for o in page["observations"]])
        pages.append(page)
    return answers, times, pages


def through_cli(repo: str, env: dict, qs, options: dict, pages: list[dict], count: int) -> tuple[int, list[float]]:
    """Whole `obsrepo query` commands for every len/count-th question; how many differ, the times."""
    step = max(1, len(qs) // count)
    differ, times = 0, []
    for i in range(0, len(qs), step)[:count]:
        q = qs[i]
        args = [sys.executable, "-m", "obsrepo", "query", "--text", q.text, "--scope", f"conversation/{q.conversation}",
                "--limit", "10", "--format", "json"]
        for name, value in options.items():
            args += [f"--{name}", str(value)]
        start = time.perf_counter()
        done = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        got = [(o["id"], o["score"]) for o in json.loads(done.stdout)["observations"]]
        differ += got != [(o["id"], o["score"]) for o in pages[i]["observations"]]
    return differ, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("--model", required=True, help="a model2vec folder (bench/convert_wordllama.py makes one)")
    parser.add_argument("--work", help="a scratch folder (default: a temporary one, removed after)")
    parser.add_argument("--cli", type=int, default=20, help="questions also asked through whole commands")
    parser.add_argument("--reps", type=int, default=1, help="times each question is asked in process (latency)")
    parser.add_argument("--only", help="comma-separated labels of METHODS to run (default all)")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="locomo-")
    repo = os.path.join(work, "repo")
    shutil.rmtree(repo, ignore_errors=True)
    started = time.perf_counter()
    ids = convert.build(args.data, repo)
    data = convert.load(args.data)
    qs = metrics.questions(data, ids)
    print(f"{len(ids)} observations, {len(qs)} questions; converted in {time.perf_counter() - started:.1f} s")
    embedder = f"model2vec:{os.path.abspath(args.model)}"
    env = dict(os.environ, OBSREPO_EMBEDDER=embedder, PYTHONPATH=os.path.join(ROOT, "tooling"))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "obsrepo", "index", "--full"], cwd=repo, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    print(f"indexed with the embedder in {time.perf_counter() - started:.1f} s")

    from obsrepo.ops import Session

    session = Session(repo, embedder=embedder)
    session.keep_open()
    runs, lines = {}, []
    chosen = {k: v for k, v in METHODS.items() if not args.only or k in args.only.split(",")}
    try:
        for label, options in chosen.items():
            ask(session, qs[:5], options)  # warm: the model, the index generation, the mapped vectors
            answers, times, pages = ask(session, qs, options, args.reps)
            runs[label] = answers
            line = f"{label}: in process {metrics.percentiles(times)}"
            if args.cli and label in ("obsrepo lexical", "obsrepo hybrid cc"):
                differ, cli_times = through_cli(repo, env, qs, options, pages, args.cli)
                line += f"; whole command ({len(cli_times)}) {metrics.percentiles(cli_times)}, {differ} differ"
            lines.append(line)
    finally:
        session.close()
    from obsrepo.embed.static import StaticTable

    model = StaticTable(args.model)
    runs.update(baselines.rank(convert.turns(data), ids, qs, model.encode))
    print(metrics.table(qs, runs))
    print()
    for label, answers in runs.items():
        print(f"{label}: {metrics.overall(qs, answers)}")
    print("\n".join(lines))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

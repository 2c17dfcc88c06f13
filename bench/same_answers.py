"""Check that this code tree and a baseline (e.g. main) give the same answers per document: the
companion of bench/bench_reader.py, for work that makes the document path faster.

    git worktree add --detach /tmp/base main
    python bench/same_answers.py /tmp/obs-10k --base /tmp/base/tooling [--count 10000] [--mutations 20000]

Inputs: the first COUNT documents of REPO at HEAD, the test cases and the demo documents, and
MUTATIONS seeded edits of them (characters inserted, deleted, lines repeated). For each input
both trees compute `analyze(..., with_record=True)` + `place` (issues, facts, cache rows,
record); for the valid observations, each chunk's Arrow batch as the index builds it. Values are
compared by repr, with their types (1, 1.0 and True differ). Prints the number of inputs and mismatches.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OWN = HERE.parent / "tooling"
MUTATIONS = ["", " ", "\n", ":", ": ", "- ", "#", "'", '"', "[", "]", "{", "}", ",", "&a ", "*a", "!", "?", "|", "\t",
             "\r", "é", "---\n", "~", "0", "1e3", "x-a: 1\n", "fields:\n  a: 1\n", "priority: 5\n", "corrects: obs-1\n",
             "tenant: {org: a}\n", "relations:\n  - type: PART_OF\n    target: a/b\n", "classification: public\n",
             "password", "ssn", "feedback: {target: obs-20260101-000000-aaaa, outcome: rework, session: s1}\n",
             "reclassify: {targets: obs-20260101-000000-aaaa, classification: restricted}\n", "scope: [a, b]\n",
             "data: {a: [1, 2.5, true, null]}\n", "context: {k: v}\n", "specificity: 1\n", "tenant: {project: p, org: o}\n",
             "retracts: [obs-1a, obs-2b]\n", "relations: [{type: DUPLICATE_OF, target: a/b}]\n", "entity: a/b\n"]


def inputs(repo: str, count: int, mutations: int) -> list[tuple[str, bytes]]:
    from obsrepo.gitstore import Git

    listing = subprocess.run(["git", "ls-tree", "-r", "HEAD", "observations", "comprehension"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    files = [(line.split("\t", 1)[1], line.split()[2]) for line in listing][:count]
    blobs = dict(Git(repo).read_blobs(sorted({blob for _, blob in files})))
    docs = [(path, blobs[blob]) for path, blob in files]
    root = HERE.parent
    for folder, pattern in (("tests/cases", "**/*.md"), ("observations", "**/*.md"), ("comprehension", "*.md")):
        docs += [(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted((root / folder).glob(pattern))]
    rng = random.Random(5)
    for _ in range(mutations):
        path, data = rng.choice(docs)
        text = data.decode("utf-8", "surrogateescape")
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(MUTATIONS) + text[at + rng.choice([0, 0, 1, 3]):]
        docs.append((path, text.encode("utf-8", "surrogateescape")))
    return docs


def answers(repo: str, count: int, mutations: int, out: str) -> None:
    """In this process (PYTHONPATH picks the tree): every input's answers, pickled to `out`."""
    from datetime import datetime, timezone

    from obsrepo.format.analyze import analyze
    from obsrepo.format.rules import place
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

    results: list[Any] = []
    parsed = []
    docs = inputs(repo, count, mutations)
    for path, data in docs:
        analysis = analyze(path, data, with_record=True)
        issues = analysis.issues + place(path, analysis)
        results.append((analysis.to_cache(), analysis.record_to_cache(), [i.as_dict() for i in issues]))
        parsed.append(parse_for_cache(path, data)[:2])
    sha = "c" * 40
    info = {sha: Commit(sha, datetime(2026, 1, 1, tzinfo=timezone.utc), "bench", "bench@example.com")}
    # observations only (a test case's path says nothing of its kind), under paths that say so
    kept = [i for i, (_, record) in enumerate(parsed) if record is None or "event" in record]
    files = [version(f"observations/x/{i}.md", f"{i:040x}", 1, sha) for i in kept]
    parsed = [parsed[i] for i in kept]
    for start in range(0, len(files), build.CHUNK):
        chunk_files, chunk_parsed = files[start:start + build.CHUNK], parsed[start:start + build.CHUNK]
        rows = documents.rows_for(chunk_files, chunk_parsed, 0, info)[0]
        tables = [arrow_table("obs_versions", OBS_COLUMNS, rows)] * 2  # the rows path (a small update) and the chunk path
        if hasattr(documents, "sort_parsed"):  # a chunk path that skips the rows
            from obsrepo.index.rows import observation_batch

            tables[1] = observation_batch(documents.sort_parsed(chunk_files, chunk_parsed, 0)[0], info)
        for table in tables:
            results.append((str(table.schema), table.to_pylist()))
    with open(out, "wb") as handle:
        pickle.dump(results, handle)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--base", required=True, help="the baseline's tooling/ folder")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--mutations", type=int, default=20000)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    if args.out:
        answers(repo, args.count, args.mutations, args.out)
        return
    loaded = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, tooling in (("base", os.path.abspath(args.base)), ("this", str(OWN))):
            out = os.path.join(tmp, name)
            cmd = [sys.executable, __file__, repo, "--base", tooling, "--count", str(args.count),
                   "--mutations", str(args.mutations), "--out", out]
            subprocess.run(cmd, env={**os.environ, "PYTHONPATH": tooling}, check=True)
            with open(out, "rb") as handle:
                loaded.append(pickle.load(handle))
    base, this = loaded
    mismatches = [i for i, (a, b) in enumerate(zip(base, this)) if repr(a) != repr(b)]  # repr: types too
    print(f"answers compared: {len(base)} (documents, then Arrow batches)   mismatches: {len(mismatches)}")
    for i in mismatches[:5]:
        print(f"  #{i}\n    base: {base[i]!r:.1500}\n    this: {this[i]!r:.1500}")
    sys.exit(1 if mismatches or len(base) != len(this) else 0)


if __name__ == "__main__":
    main()

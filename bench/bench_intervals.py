"""Benchmark `obsrepo intervals` (docs/design.md §19) of one entity with many observations and periods.

    python bench/bench_intervals.py [--observations 1000] [--periods 200] [--reps 15]

Makes a repository (obsrepo init, one commit, obsrepo index) holding one contract with N
observations, P of them with a period of valid time, carrying four fields, one per rule:
`price` (highest_priority), `status` (last_write), `region` (most_specific), `tags`
(merge_array). Medians in the process (the operation through the index, a fresh connection per read as one
command opens it, and with the index kept open as the MCP server and `serve` keep it) for each
field alone and for all four, the sweep itself (format/intervals.py, no index) for each rule, and
the rows alone. The baseline of the same run is the `price` field (highest_priority) in the
process; each line prints its ratio to it. Runs are interleaved, one of each per round.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

FIELDS = {"price": "highest_priority", "status": "last_write", "region": "most_specific", "tags": "merge_array"}
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
SOURCES = ["agent/crm", "agent/sales", "human/alice", "agent/billing"]
TAGS = [f"tag-{i}" for i in range(40)]


def medians_ms(fns: dict[str, object], reps: int) -> dict[str, float]:
    """Each function's median, the runs interleaved (one of each per round), so a busy machine
    weighs on every line alike and the ratios stay fair."""
    times: dict[str, list[float]] = {label: [] for label in fns}
    for fn in fns.values():
        fn()
    for _ in range(reps):
        for label, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(spent) * 1000 for label, spent in times.items()}


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def document(index: int, rng: random.Random, periods: set[int]) -> tuple[str, str]:
    """One observation of contract/big: a few of the four fields, sometimes a period."""
    stamp = START + timedelta(hours=6 * index)
    ident = f"obs-{stamp:%Y%m%d-%H%M%S}-{index:08x}"
    lines = ["spec: observation/v1", f"id: {ident}", f"timestamp: {iso(stamp)}",
             f"source: {SOURCES[index % len(SOURCES)]}", f"event: observed {ident}", "entity: contract/big"]
    if rng.random() < 0.1:
        lines.append(f"priority: {rng.choice([50, 200])}")
    if rng.random() < 0.3:
        lines.append(f"specificity: {rng.choice([0.2, 0.5, 0.9])}")
    if index in periods:
        start = stamp + timedelta(days=rng.randint(-30, 60))
        lines.append("valid:")
        lines.append(f"  from: {iso(start)}")
        lines.append(f"  until: {iso(start + timedelta(days=rng.randint(1, 90)))}")
    lines.append("fields:")
    lines.append(f"  price: {rng.randint(50, 150)}")
    if rng.random() < 0.6:
        lines.append(f"  status: {rng.choice(['open', 'signed', 'paused'])}")
    if rng.random() < 0.6:
        lines.append(f"  region: {rng.choice(['eu', 'us', 'apac'])}")
    if rng.random() < 0.7:
        lines.append(f"  tags: [{', '.join(rng.sample(TAGS, rng.randint(1, 3)))}]")
    text = "---\n" + "\n".join(lines) + "\n---\n\nDetails.\n"
    return f"observations/{stamp:%Y/%m/%d}/{ident}.md", text


def make(root: str, count: int, periods: int) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    subprocess.run([sys.executable, "-m", "obsrepo", "init", root], check=True, capture_output=True, env=env)
    schema = "spec: entity-schema/v1\ntype: contract\nfields:\n" + "".join(
        f"  {name}: {{policy: {policy}}}\n" for name, policy in FIELDS.items())
    with open(os.path.join(root, "schemas/entities/contract.yaml"), "w") as out:
        out.write(schema)
    rng = random.Random(7)
    bounded = set(rng.sample(range(count), periods))
    for index in range(count):
        path, text = document(index, rng, bounded)
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as out:
            out.write(text)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "contract/big"], cwd=root, check=True, env=env)
    subprocess.run([sys.executable, "-m", "obsrepo", "index"], cwd=root, check=True, capture_output=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--observations", type=int, default=1000)
    parser.add_argument("--periods", type=int, default=200)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()

    from obsrepo.format.intervals import field_intervals
    from obsrepo.ops import Intervals, Session, run
    from obsrepo.read.time import family_observations

    with tempfile.TemporaryDirectory() as root:
        make(root, args.observations, args.periods)
        session = Session(root)
        observations = session.read(lambda scope: family_observations(scope, "contract/big")[1], None)
        answer = run(session, Intervals("contract/big")).to_json()
        spans = {f["field"]: len(f["intervals"]) for f in answer["fields"]}
        print(f"contract/big: {len(observations)} observations, {args.periods} periods; intervals per field: {spans}")
        kept = Session(root)
        kept.keep_open()
        fns = {}
        for name, policy in FIELDS.items():
            fns[f"in process --field {name} ({policy})"] = lambda name=name: run(session, Intervals("contract/big", (name,)))
        fns["in process, every field"] = lambda: run(session, Intervals("contract/big"))
        for name in FIELDS:
            fns[f"index kept open --field {name}"] = lambda name=name: run(kept, Intervals("contract/big", (name,)))
        for name, policy in FIELDS.items():
            fns[f"sweep only {name} ({policy})"] = lambda name=name: field_intervals("contract/big", observations, FIELDS,
                                                                                   (name,))
        fns["the rows only (read scope, no sweep)"] = lambda: session.read(
            lambda scope: family_observations(scope, "contract/big"), None, stems=False)
        medians = medians_ms(fns, args.reps)
        baseline = medians["in process --field price (highest_priority)"]
        for label, ms in medians.items():
            print(f"{label:45s} {ms:8.1f} ms  {ms / baseline:5.2f}×")
        kept.close()


if __name__ == "__main__":
    main()

"""Benchmark `recall` (docs/design.md §15) in process and as an MCP round trip, beside a query in
the same run.

    git clone -q /tmp/bench100k /tmp/recall-100k        # it writes an index and a vector cache
    python bench/bench_recall.py /tmp/recall-100k [--reps 20]

A random model of potion-base-8M's shape (30,000 tokens × 256, float32) is written first, in
model2vec's layout (a word-level tokenizer whose vocabulary starts with the repository's own
words, so texts have known tokens), and the repository is indexed with it (the cold vector
cache is timed). Medians of:

  in process    `ops.run(Recall(text, budget 2000))` on a kept-open Session (hybrid ranking),
                with no text (the newest observations), with the text and no embedder (BM25),
                with a scope and no text; beside `Query(text, limit 20)` hybrid on the same session
                (and lexical, with no embedder)
  MCP           `recall` (Markdown, with and without the text) round trips on a warm
                `obsrepo mcp` server, through the SDK's own client; beside `observation_query`
                (text, limit 20, json)

Targets: in process ≤ 100 ms, MCP ≤ 150 ms. Also printed: the cache's size on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

TOKENS, DIMENSIONS = 30_000, 256
TEXT = "invoice paid late by the customer"
SCOPE = "ops"  # a scope of about 5 % of the benchmark repositories' observations


def write_random_model(folder: Path, words: list[str]) -> Path:
    """potion-base-8M's shape, random vectors: `words` first, then made-up tokens."""
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary = list(dict.fromkeys(["[UNK]", "[PAD]", *words]))[:TOKENS]
    vocabulary += [f"tok{n}" for n in range(TOKENS - len(vocabulary))]
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                 "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "Whitespace"},
                 "post_processor": None, "decoder": None,
                 "model": {"type": "WordLevel", "vocab": {t: i for i, t in enumerate(vocabulary)}, "unk_token": "[UNK]"}}
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"normalize": True, "hidden_dim": DIMENSIONS}), encoding="utf-8")
    rng = random.Random(8)
    data = struct.pack(f"<{TOKENS * DIMENSIONS}f", *(rng.gauss(0, 1) for _ in range(TOKENS * DIMENSIONS)))
    header = json.dumps({"embeddings": {"dtype": "F32", "shape": [TOKENS, DIMENSIONS], "data_offsets": [0, len(data)]}})
    raw = header.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return folder


def corpus_words(repo: str, limit: int = 2000) -> list[str]:
    """The most frequent words of the repository's events (from git, not the index)."""
    listing = subprocess.run(["git", "grep", "-h", "^event:", "HEAD", "--", "observations"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout
    counts = Counter(word.lower() for line in listing.splitlines() for word in line[len("event:"):].split() if word.isalpha())
    return [word for word, _ in counts.most_common(limit)] + TEXT.split()


def median_ms(work: Any, reps: int) -> float:
    work()  # warm: this commit's caches
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def in_process(repo: str, embedder: str, reps: int) -> dict[str, float]:
    from obsrepo.ops import Query, Recall, Session, run

    def timed(configured: str, cases: dict[str, Any]) -> dict[str, float]:
        session = Session(repo, embedder=configured)  # one kept-open session at a time in a process
        session.keep_open()
        try:
            return {name: median_ms(partial(run, session, request), reps) for name, request in cases.items()}
        finally:
            session.close()

    return {**timed(embedder, {"recall --text": Recall(text=TEXT), "recall (no text)": Recall(),
                               "recall --scope, no text": Recall(scopes=(SCOPE,)),
                               "query --text (baseline)": Query(text=TEXT, limit=20)}),
            **timed("none", {"recall --text, no embedder": Recall(text=TEXT),
                             "query --text, no embedder": Query(text=TEXT, limit=20)})}


def over_mcp(repo: str, embedder: str, reps: int) -> dict[str, float]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", "mcp"], cwd=repo,
                                   env=dict(os.environ, OBSREPO_EMBEDDER=embedder))

    async def timed(session: ClientSession, tool: str, arguments: dict[str, Any]) -> float:
        await session.call_tool(tool, arguments)
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            result = await session.call_tool(tool, arguments)
            times.append(time.perf_counter() - start)
            if result.is_error:
                raise SystemExit(f"{tool}: {result.content[0].text}")
        return statistics.median(times) * 1000

    async def main() -> dict[str, float]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {"recall": await timed(session, "recall", {"text": TEXT}),
                    "recall (no text)": await timed(session, "recall", {}),
                    "observation_query (baseline)": await timed(session, "observation_query",
                                                                {"text": TEXT, "limit": 20, "mode": "json"})}

    return anyio.run(main)


def disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    model = write_random_model(Path(repo) / ".obsrepo" / "bench-model", corpus_words(repo))
    embedder = f"model2vec:{model}"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "obsrepo", "index", "--quiet"], cwd=repo, check=True,
                   env=dict(os.environ, OBSREPO_EMBEDDER=embedder))
    indexed = time.perf_counter() - start
    cache = Path(repo) / ".git" / "obsrepo" / "embeddings"
    print(f"index with the embedder (cold cache where it was empty): {indexed:.1f} s; vector cache {disk(cache) / 1e6:.1f} MB")
    local = in_process(repo, embedder, args.reps)
    remote = over_mcp(repo, embedder, args.reps)
    for name, value in local.items():
        print(f"in process  {name:28s} {value:8.1f} ms  ({value / local['query --text (baseline)']:.2f}× the query)")
    for name, value in remote.items():
        print(f"MCP         {name:28s} {value:8.1f} ms  ({value / remote['observation_query (baseline)']:.2f}× the query)")
    slowest_local = max(v for k, v in local.items() if k.startswith("recall"))
    slowest_remote = max(v for k, v in remote.items() if k.startswith("recall"))
    print(f"targets: recall in process ≤ 100 ms ({'met' if slowest_local <= 100 else 'MISSED'}), "
          f"MCP ≤ 150 ms ({'met' if slowest_remote <= 150 else 'MISSED'})")


if __name__ == "__main__":
    main()

"""Recall's vector cache and ranking (docs/design.md §15), through the CLI: a real loopback
embedding server counting what it embeds, a real model2vec model written by the test."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from embedders import EmbeddingServer, write_model
from helpers import Repo, observation

TEXTS = {  # id → (event, body)
    "obs-20260210-090000-0001": ("invoice paid", "acme"),
    "obs-20260211-090000-0002": ("parcel late", "acme"),
    "obs-20260212-090000-0003": ("shipment delayed", "the parcel"),
}


def run(repo: Repo, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return repo.obsrepo(*args, env=env)


def ok(repo: Repo, *args: str, env: dict[str, str]) -> Any:
    proc = run(repo, *args, "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def embedded(event: str, body: str) -> str:
    return f"{event}\n\n{body}"


@pytest.fixture
def texts_repo(repo: Repo) -> Repo:
    for obs_id, (event, body) in TEXTS.items():
        repo.add(observation(obs_id, event=event, body=body))
    # the same text again, in another tenant: one text, embedded once
    repo.add(observation("obs-20260213-090000-0004", event="invoice paid", body="acme", tenant={"org": "globex"}))
    repo.commit("observations")
    return repo


def segments(repo: Repo) -> list[Path]:
    return sorted((repo.path / ".git" / "obsrepo" / "embeddings").glob("*/*.vectors"))


def test_every_distinct_text_is_embedded_once_and_a_rebuild_embeds_nothing(texts_repo):
    with EmbeddingServer() as server:
        env = server.env("openai:toy")
        built = ok(texts_repo, "index", env=env)
        # each text once, and nothing else: the size came with the first vectors (no probe)
        distinct = sorted({embedded(*text) for text in TEXTS.values()})
        assert sorted(server.texts) == distinct
        assert built["semantic"]["embedded"] == 3 and built["semantic"]["pending"] == 0
        (texts_repo.path / ".obsrepo" / "index.duckdb").unlink()
        rebuilt = ok(texts_repo, "index", "--full", env=env)
        ok(texts_repo, "index", "--index", str(texts_repo.path / "other.duckdb"), env=env)
        assert sorted(server.texts) == distinct, "a rebuild or another index embedded again"
        assert rebuilt["semantic"] == built["semantic"]
        status = ok(texts_repo, "status", env=env)["semantic"]
        assert status == {"fingerprint": built["semantic"]["fingerprint"], "embedded": 3, "pending": 0}
        assert status["fingerprint"].startswith("openai-")


def test_a_provider_that_is_down_never_fails_index_and_the_next_run_fills_the_gap(texts_repo):
    with EmbeddingServer() as server:
        env = server.env("openai:toy")
        server.mode = "503"
        proc = run(texts_repo, "index", env=env)
        assert proc.returncode == 0, proc.stderr
        assert "pending" in proc.stderr and "HTTP 503" in proc.stderr, proc.stderr
        assert ok(texts_repo, "status", env=env)["semantic"]["pending"] == 3
        page = ok(texts_repo, "query", "--text", "invoice", env={})
        assert [o["id"] for o in page["observations"]] == ["obs-20260213-090000-0004", "obs-20260210-090000-0001"]
        server.mode = "ok"
        filled = ok(texts_repo, "index", env=env)["semantic"]
        assert filled["embedded"] == 3 and filled["pending"] == 0 and filled["error"] is None
        assert ok(texts_repo, "status", env=env)["semantic"]["pending"] == 0
        assert len(server.texts) == 3  # the three texts, nothing sent only to learn the size
        server.mode = "503"  # known size, nothing pending: index answers without asking the server
        assert run(texts_repo, "index", env=env).returncode == 0
        assert len(server.requests) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign"])
def test_a_damaged_or_foreign_segment_is_ignored_and_recomputed(texts_repo, damage):
    with EmbeddingServer() as server:
        env = server.env("openai:toy")
        ok(texts_repo, "index", env=env)
        (segment,) = segments(texts_repo)
        data = segment.read_bytes()
        if damage == "truncate":
            segment.write_bytes(data[:-7])
        elif damage == "flip":
            segment.write_bytes(data[:-40] + bytes([data[-40] ^ 1]) + data[-39:])
        else:
            shutil.copy(segment, segment.parent.parent)
            segment.unlink()
            wrong = segment.parent.parent / segment.name
            (segment.parent / "0-elsewhere.vectors").write_bytes(wrong.read_bytes().replace(b"openai-", b"ollama-"))
        before = len(server.texts)
        rebuilt = ok(texts_repo, "index", "--full", env=env)["semantic"]
        assert rebuilt["embedded"] == 3 and rebuilt["pending"] == 0
        assert len(server.texts) == before + 3
        ok(texts_repo, "index", "--full", env=env)
        assert len(server.texts) == before + 3


# -- ranking by meaning --------------------------------------------------------------------

needs_model2vec = pytest.mark.skipif(importlib.util.find_spec("model2vec") is None, reason="the semantic extra is not installed")
MEANING = {  # the exact-term document is the oldest: a tie on cosine would put it last
    "obs-20260210-090000-0001": ("bill settled", "acme"),
    "obs-20260211-090000-0002": ("parcel late", "the shipment was delayed"),
    "obs-20260212-090000-0003": ("invoice paid", "acme"),
}


def ids(page: dict[str, Any]) -> list[str]:
    return [record["id"] for record in page["observations"]]


def meaning_repo(repo: Repo, others: bool = False) -> Repo:
    for obs_id, (event, body) in MEANING.items():
        repo.add(observation(obs_id, event=event, body=body, tenant={"org": "northwind"}))
    if others:  # another tenant's rows: exact terms, synonyms, a vector pointing everywhere
        for n, (event, body) in enumerate([("bill settled", "bill settled bill"), ("invoice paid", "settled"),
                                           ("parcel delayed", "invoice bill paid late")]):
            repo.add(observation(f"obs-20260213-09000{n}-00{n}9", event=event, body=body, tenant={"org": "globex"}))
    repo.commit("observations")
    return repo


@needs_model2vec
def test_bill_settled_finds_invoice_paid_by_meaning_and_the_exact_term_ranks_first(repo, tmp_path):
    env = {"OBSREPO_EMBEDDER": f"model2vec:{write_model(tmp_path / 'model')}"}
    meaning_repo(repo)
    lexical = ok(repo, "query", "--text", "bill settled", "--match", "lexical", env=env)
    assert ids(lexical) == ["obs-20260210-090000-0001"]
    assert lexical == ok(repo, "query", "--text", "bill settled", env={}), "lexical is what it was without an embedder"
    semantic = ok(repo, "query", "--text", "bill settled", "--match", "semantic", env=env)
    assert ids(semantic)[:2] == ["obs-20260212-090000-0003", "obs-20260210-090000-0001"]  # equal cosines: newest first
    assert semantic["observations"][0]["scores"]["semantic"] == pytest.approx(2 / math.sqrt(6), abs=1e-6)
    hybrid = ok(repo, "query", "--text", "bill settled", env=env)  # hybrid: the default with an embedder
    assert ids(hybrid)[:2] == ["obs-20260210-090000-0001", "obs-20260212-090000-0003"]
    first = hybrid["observations"][0]
    assert first["scores"]["lexical"] == 1.0 and first["scores"]["weight"] == 1.0 and first["scores"]["hint"] == 1.0
    assert first["score"] == round(round(0.3 * first["scores"]["semantic"] + 0.7 * 1.0, 6) * 1.0, 6)  # α 0.3 by default
    assert hybrid["semantic_coverage"] == {"candidates": 3, "with_vectors": 3} and hybrid["total"] == 3
    only_meaning = ok(repo, "query", "--text", "bill settled", "--alpha", "1", env=env)
    assert only_meaning["observations"][0]["score"] == only_meaning["observations"][1]["score"]
    rrf = ok(repo, "query", "--text", "bill settled", "--fusion", "rrf", env=env)
    assert ids(rrf)[0] == "obs-20260210-090000-0001" and rrf["observations"][0]["score"] == round(1 / 62 + 1 / 61, 6)
    nearest = ok(repo, "query", "--text", "bill settled", "--match", "semantic", "--semantic-k", "1", env=env)
    assert ids(nearest) == ["obs-20260212-090000-0003"] and nearest["total"] == 1


@needs_model2vec
def test_a_local_model_changed_in_place_is_a_new_kind_of_vector(repo, tmp_path):
    """A process does not hash the model's files again while they are as they were (the hash is
    kept in the embeddings folder), and a file rewritten in place (same name, same size) is
    hashed again: its vectors are never mixed with the old model's."""
    model = write_model(tmp_path / "model")
    env = {"OBSREPO_EMBEDDER": f"model2vec:{model}"}
    meaning_repo(repo)
    first = ok(repo, "index", env=env)["semantic"]
    memo = repo.path / ".git" / "obsrepo" / "embeddings" / "model-hashes.json"
    kept = json.loads(memo.read_text("utf-8"))
    assert list(kept) == [str(model)]
    kept[str(model)]["hash"] = "0" * 64  # the kept hash is what names the model while the files are unchanged
    memo.write_text(json.dumps(kept), encoding="utf-8")
    assert ok(repo, "index", "--full", env=env)["semantic"]["fingerprint"] != first["fingerprint"]
    write_model(model, scale=2.0)  # the same files, other weights
    changed = ok(repo, "index", "--full", env=env)["semantic"]
    assert changed["fingerprint"] not in (first["fingerprint"], kept[str(model)]["hash"])
    assert json.loads(memo.read_text("utf-8"))[str(model)]["hash"] != "0" * 64
    write_model(model)  # the first model again: its vectors are in the cache already
    again = ok(repo, "index", "--full", env=env)["semantic"]
    assert again["fingerprint"] == first["fingerprint"] and again["pending"] == 0


@pytest.fixture(scope="module")
def alone_and_crowded(make_module_repo, tmp_path_factory) -> tuple[Repo, Repo, dict[str, str]]:
    """northwind's rows alone, and the same rows among another tenant's: built (and indexed by the
    first query) once for every ranking the test below compares."""
    env = {"OBSREPO_EMBEDDER": f"model2vec:{write_model(tmp_path_factory.mktemp('model'))}"}
    return meaning_repo(make_module_repo("alone")), meaning_repo(make_module_repo("crowded"), others=True), env


@needs_model2vec
@pytest.mark.parametrize("options", [("--match", "semantic"), ("--match", "hybrid"), ("--fusion", "rrf"), ("--alpha", "0.2")])
def test_a_bound_caller_ranks_the_same_whatever_other_tenants_hold(alone_and_crowded, options):
    alone, crowded, env = alone_and_crowded
    for text in ("bill settled", "parcel", "zzz"):
        pages = [ok(r, "query", "--text", text, "--tenant", "org=northwind", *options, env=env) for r in (alone, crowded)]
        for page in pages:
            page.pop("at_commit")
            for record in page["observations"]:
                record.pop("commit")
        assert pages[0] == pages[1], text
        assert all(not math.isnan(r["score"]) for r in pages[0]["observations"])


def test_ranking_by_meaning_without_an_embedder_or_a_text_is_refused_naming_match(texts_repo):
    for args in (["--text", "invoice", "--match", "semantic"], ["--match", "hybrid"]):
        proc = run(texts_repo, "query", *args, "--format", "json", env={})
        assert proc.returncode == 2, proc.stdout + proc.stderr
        error = json.loads(proc.stdout)["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == "--match", error
    proc = run(texts_repo, "query", "--text", "x", "--alpha", "1.5", "--format", "json", env={})
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["details"]["parameter"] == "--alpha"


def test_scores_are_rounded_as_python_rounds():
    """A page's scores are rounded as arrays; each is Python's `round(x, 6)`, halves included
    (a caller recomputes a score from its record with Python's rounding)."""
    import random

    import numpy as np
    from obsrepo.read.semantic import round6

    rng = random.Random(5)
    values = [rng.random() * rng.choice([1, 3, 1000]) for _ in range(20_000)]
    values += [n / 2e6 for n in range(0, 40_000, 7)] + [(n + 0.5) / 1e6 for n in range(0, 20_000, 3)]
    values += [0.0, -0.0, 1.0, 0.1234565, 2.5e-7, 0.9999995, -1e-7, -0.0000015, -2.5e-7, 0.5e-6]
    values += [rng.randrange(1, 10**7) / 10**rng.randrange(6, 9) * rng.choice([1, -1]) for _ in range(20_000)]
    rounded = round6(np.asarray(values, dtype=np.float64))
    assert [repr(float(r)) for r in rounded] == [repr(round(v, 6)) for v in values]  # -0.0 as well


@pytest.fixture(scope="module")
def many_hits(make_module_repo, tmp_path_factory) -> tuple[Repo, str]:
    """80 observations that nearly all hold the query's terms (a random model of potion's shape,
    few tokens), some with feedback weights, some texts twice: pages far smaller than the hits."""
    import random

    from embedders import write_wordpiece_model

    repo = make_module_repo("many")
    rng = random.Random(11)
    words = ["invoice", "paid", "late", "parcel", "bill", "settled", "vendor", "total"]
    ids = []
    for n in range(80):
        obs_id = f"obs-202602{10 + n // 20:02d}-09{n % 20:02d}00-{n:04d}"
        event = "invoice " + " ".join(rng.choice(words) for _ in range(rng.randrange(1, 5))) if n % 9 else "shipment"
        repo.add(observation(obs_id, event=event, body="the same body" if n % 4 else f"body {n} {event}",
                             tenant={"org": "northwind" if n % 3 else "globex"}))
        ids.append(obs_id)
    for n, target in enumerate(ids[::7]):
        repo.add(observation(f"obs-20260301-090000-{n:04d}", feedback={"target": target, "outcome": "misleading"},
                             tenant={"org": "northwind" if ids.index(target) % 3 else "globex"}))
    repo.commit("many hits")
    model = write_wordpiece_model(tmp_path_factory.mktemp("model"), tokens=2000, dimension=32)
    return repo, f"model2vec:{model}"


@needs_model2vec
@pytest.mark.parametrize("binding", [{}, {"org": "northwind"}])
def test_a_page_of_a_ranking_is_that_part_of_the_whole_ranking(many_hits, binding):
    """Only the hits that may reach a page get an exact cosine and a place in the default order:
    every page (offset, limit) is the same slice of the ranking read whole, scores included."""
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query
    from obsrepo.ops.values import Binding

    repo, embedder = many_hits
    session = Session(str(repo.path), embedder=embedder, binding=Binding.of(binding))
    session.keep_open()
    try:
        for options in ({}, {"alpha": 0.9}, {"alpha": 0.1}, {"unweighted": True}, {"match": "semantic", "semantic_k": 7},
                        {"fusion": "rrf"}, {"semantic_k": 3}):
            options = {"match": "hybrid", **options}
            whole = run(session, Query(text="invoice paid", limit=500, **options)).data
            assert whole["total"] == len(whole["observations"]) > (5 if options["match"] == "semantic" else 30), options
            assert any(r["scores"]["weight"] != 1.0 for r in whole["observations"]) or options.get("unweighted") \
                or options["match"] == "semantic"
            for offset, limit in ((0, 1), (0, 5), (3, 4), (10, 10), (len(whole["observations"]) - 2, 5)):
                page = run(session, Query(text="invoice paid", limit=limit, offset=offset, **options)).data
                assert page["total"] == whole["total"] and page["semantic_coverage"] == whole["semantic_coverage"]
                assert page["observations"] == whole["observations"][offset:offset + limit], (options, offset, limit)
    finally:
        session.close()


@needs_model2vec
@pytest.mark.parametrize("binding", [{}, {"org": "northwind"}])
def test_a_few_rows_placed_by_row_id_rank_as_a_scan_of_every_row_does(many_hits, binding, monkeypatch):
    """A page's few rows are placed in the default order by their stored timestamps and ids, read
    by row id; with that read turned off (every row scanned) every page is the same, ties included."""
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query
    from obsrepo.ops.values import Binding
    from obsrepo.read import scope

    repo, embedder = many_hits

    def pages() -> list[dict[str, Any]]:
        session = Session(str(repo.path), embedder=embedder, binding=Binding.of(binding))
        try:
            return [run(session, Query(text="invoice paid", limit=limit, offset=offset, **options)).data
                    for options in ({"match": "lexical"}, {"match": "lexical", "unweighted": True}, {"match": "hybrid"},
                                    {"match": "semantic", "semantic_k": 7}, {"match": "hybrid", "fusion": "rrf"})
                    for offset, limit in ((0, 3), (5, 10), (20, 40))]
        finally:
            session.close()

    by_row_id = pages()
    monkeypatch.setattr(scope, "RECORDS_BY_KEY", 0)
    assert pages() == by_row_id


def test_row_id_sets_answer_as_sorted_searches_do():
    """`rowids` (masks and arrays over the dense row ids) answers what a sort and a binary
    search answer, for dense and sparse ids, drafts' negative ids and ids listed twice."""
    import numpy as np
    from obsrepo.read.rowids import ByRow, among, ascending

    rng = np.random.default_rng(3)
    for top, count in ((1000, 900), (1000, 30), (10**9, 50), (50, 0)):
        ids = rng.choice(top, size=count, replace=False).astype(np.int64)
        ids = np.concatenate([ids, -(2**40) - np.arange(3)]) if top == 1000 and count == 30 else ids
        assert np.array_equal(ascending(ids), np.sort(ids))
        sorted_ids, asked = np.sort(ids), rng.integers(-5, max(top, 5) + 5, size=200)
        at = np.minimum(np.searchsorted(sorted_ids, asked), max(len(sorted_ids) - 1, 0))
        expected = sorted_ids[at] == asked if len(sorted_ids) else np.zeros(len(asked), dtype=bool)
        assert np.array_equal(among(sorted_ids, asked), expected)
        values = rng.random(len(ids))
        twice = np.concatenate([ids, ids[:3]]), np.concatenate([values, values[:3] + 1])  # the first value counts
        for row_ids, row_values in ((ids, values), twice):
            lookup = ByRow(row_ids, row_values, 1.0)
            first = {}
            for row, value in zip(row_ids.tolist(), row_values.tolist()):
                first.setdefault(row, value)
            assert lookup.of(asked).tolist() == [first.get(row, 1.0) for row in asked.tolist()]


def test_postings_summed_per_row_as_a_sort_sums_them():
    """BM25's sum per row (over the id range, or by sorting the ids) adds each row's postings in
    the order they come, as `np.unique` + `np.bincount` do: the same rows and the same bits."""
    import numpy as np
    from obsrepo.read.bm25 import _per_row

    rng = np.random.default_rng(5)
    for top, count in ((20, 200), (1000, 300), (10**6, 50_000), (10**9, 40), (1, 0)):
        ids = rng.integers(0, top, size=count).astype(np.int64)
        ids = np.concatenate([ids, -(2**40) - ids[:3]]) if top == 1000 else ids  # drafts: sorted
        each = rng.random(len(ids)) * rng.choice([1e-3, 1.0, 1e3], size=len(ids))
        hit, sums = _per_row(ids, each)
        expected, which = np.unique(ids, return_inverse=True)
        assert hit.dtype == np.int64 and np.array_equal(hit, expected)
        assert sums.tobytes() == np.bincount(which, weights=each, minlength=len(expected)).tobytes()


@needs_model2vec
@pytest.mark.parametrize("binding", [{}, {"org": "northwind"}])
def test_a_kept_open_reader_keeps_a_few_filters_rows_and_answers_as_a_fresh_one(many_hits, binding):
    """The rows a text query's filters pass are kept for the last few filters (bm25.FILTERS_KEPT)
    of a kept-open reader: asked in turns over more filters than are kept, twice, each answer is
    that of a reader opened for it alone."""
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query
    from obsrepo.ops.values import Binding
    from obsrepo.read.bm25 import FILTERS_KEPT

    repo, embedder = many_hits
    asks: list[Query] = [Query(text="invoice paid", after=f"2026-02-{10 + n // 4:02d}T09:{(n % 4) * 5:02d}:00Z", limit=8,
                  match="hybrid" if n % 3 == 0 else "lexical", org="northwind" if n % 5 == 4 else None)
            for n in range(FILTERS_KEPT + 4)]
    asks += [replace(ask, max_classification="public") for ask in asks[:3]]  # another view, the same SQL

    def alone(ask: Query) -> dict[str, Any]:
        session = Session(str(repo.path), embedder=embedder, binding=Binding.of(binding))
        try:
            return run(session, ask).data
        finally:
            session.close()

    expected = [alone(ask) for ask in asks]
    assert len({json.dumps(e, sort_keys=True) for e in expected}) > FILTERS_KEPT  # the filters differ in their answers
    assert expected[-1]["total"] == 0 < expected[2]["total"]
    kept = Session(str(repo.path), embedder=embedder, binding=Binding.of(binding))
    kept.keep_open()
    try:
        for _ in range(2):
            assert [run(kept, ask).data for ask in asks] == expected
            assert [run(kept, ask).data for ask in reversed(asks)] == expected[::-1]
    finally:
        kept.close()

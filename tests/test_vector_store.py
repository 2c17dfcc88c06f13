"""Recall's vector store (docs/design.md §15) under failure and among tenants: a real `kill -9`
of `obsrepo index` between writing a segment and publishing the index, a segment damaged after
an index recorded it, and the tenancy property (hypothesis) through the door the library and
the MCP server use."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from embedders import EmbeddingServer, toy_vector, write_model
from helpers import Repo, observation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WORDS = ["invoice", "bill", "paid", "settled", "shipment", "parcel", "late", "delayed", "acme", "the", "zzz"]


def segments(repo: Repo) -> list[Path]:
    return sorted((repo.path / ".git" / "obsrepo" / "embeddings").glob("*/*.vectors"))


def run_json(repo: Repo, *args: str, env: dict[str, str]) -> Any:
    proc = repo.obsrepo(*args, "--format", "json", env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_index_killed_between_a_segment_and_publishing_leaves_a_readable_correct_state(repo):
    """The second batch of texts is held by the server: the process has written its first
    segment (1024 texts) and published nothing when it is killed."""
    count = 1100
    for n in range(count):
        event, body = ("invoice paid", "acme") if n % 2 else ("parcel late", "the shipment")
        repo.add(observation(f"obs-20260210-09{n // 60 % 60:02d}{n % 60:02d}-{n:04d}", event=f"{event} {n}", body=body))
    repo.commit("observations")
    index_file = repo.path / ".obsrepo" / "index.duckdb"
    with EmbeddingServer() as server:
        env = server.env("openai:toy")
        server.hold_after = 1024  # the first segment's texts (their answer gave the size)
        proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "index", "--quiet"], cwd=repo.path,
                                env={**repo.env, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not segments(repo) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.kill()  # SIGKILL: no handler, no cleanup
        proc.wait()
        server.release.set()
        assert proc.returncode == -9, proc.stderr.read().decode() if proc.stderr else ""
        (segment,) = segments(repo)
        assert not index_file.exists(), "the index was published before the kill: the window was missed"
        held = len(server.texts)
        assert held == 1024
        server.hold_after = None
        page = run_json(repo, "query", "--text", "bill settled", "--match", "semantic", "--limit", "3", env=env)
        assert page["semantic_coverage"] == {"candidates": count, "with_vectors": count}
        assert all(r["event"].startswith("invoice paid") for r in page["observations"])
        assert page["observations"][0]["scores"]["semantic"] == pytest.approx(1 / math.sqrt(3) * 2 / math.sqrt(2), abs=1e-6)
        # the killed run's segment was used, not embedded again: only the rest, and the query
        assert len(server.texts) == held + (count - 1024) + 1
        assert segment.exists()
        state = run_json(repo, "status", env=env)["semantic"]
        assert state["embedded"] == count and state["pending"] == 0


@pytest.fixture
def indexed(repo: Repo, tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    env = {"OBSREPO_EMBEDDER": f"model2vec:{write_model(tmp_path / 'model')}"}
    for n, (event, body) in enumerate([("invoice paid", "acme"), ("parcel late", "the shipment"), ("bill settled", "")]):
        repo.add(observation(f"obs-20260210-09000{n}-000{n}", event=event, body=body or "acme"))
    repo.commit("observations")
    run_json(repo, "index", env=env)
    return repo, env


needs_model2vec = pytest.mark.skipif(__import__("importlib").util.find_spec("model2vec") is None,
                                     reason="the semantic extra is not installed")


@needs_model2vec
def test_a_segment_truncated_after_the_index_recorded_it_is_recomputed_by_the_next_index(indexed):
    repo, env = indexed
    (segment,) = segments(repo)
    whole = segment.read_bytes()
    segment.write_bytes(whole[:-5])
    query = ("query", "--text", "bill settled", "--match", "semantic")
    damaged = run_json(repo, *query, env=env)  # no crash: its rows have no vectors until the next index
    assert damaged["semantic_coverage"]["with_vectors"] == 0
    assert not segment.exists(), "a segment of the wrong size is removed when found"
    built = run_json(repo, "index", env=env)["semantic"]  # not --full: the index at its commit notices
    assert built["embedded"] == 3 and built["pending"] == 0
    again = run_json(repo, *query, env=env)
    assert again["semantic_coverage"] == {"candidates": 3, "with_vectors": 3}
    assert [r["event"] for r in again["observations"]][:2] == ["bill settled", "invoice paid"]


# -- the tenancy property ---------------------------------------------------------------------

MINE = [("invoice paid", "acme"), ("parcel late", "the shipment"), ("bill settled", "acme"), ("the", "zzz"),
        ("shipment delayed", "invoice")]
THEIRS = [("bill settled", "bill settled bill"), ("invoice paid", "acme"), ("parcel delayed", "invoice bill paid late"),
          ("late late late", "parcel"), ("zzz", "the")]


def tenant_rows(repo: Repo, rows: list[tuple[str, str]], org: str | None, start: int) -> None:
    for n, (event, body) in enumerate(rows, start):
        tenant = {"tenant": {"org": org}} if org else {}
        repo.add(observation(f"obs-20260211-1000{n:02d}-00{n:02d}", event=event, body=body, **tenant))


@pytest.fixture(scope="module")
def alone_and_crowded(make_module_repo, tmp_path_factory) -> Any:
    """northwind's rows alone, and the same rows among globex's and untenanted rows (some with
    the same texts, so the same vectors): two kept-open sessions bound to northwind."""
    pytest.importorskip("model2vec")
    from obsrepo.ops import Session
    from obsrepo.ops.values import Binding

    model = f"model2vec:{write_model(tmp_path_factory.mktemp('model'))}"
    alone, crowded = make_module_repo("alone"), make_module_repo("crowded")
    tenant_rows(alone, MINE, "northwind", 0)
    tenant_rows(crowded, MINE, "northwind", 0)
    tenant_rows(crowded, THEIRS, "globex", 20)
    tenant_rows(crowded, THEIRS[:2], None, 40)
    sessions = []
    for repo in (alone, crowded):
        repo.commit("observations")
        session = Session(str(repo.path), binding=Binding.of({"org": "northwind"}), embedder=model)
        session.keep_open()
        sessions.append(session)
    yield sessions
    for session in sessions:
        session.close()


queries = st.fixed_dictionaries({
    "text": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    "match": st.sampled_from(["semantic", "hybrid"]),
    "fusion": st.sampled_from(["cc", "rrf"]),
    "alpha": st.sampled_from([0.0, 0.3, 0.5, 1.0]),
    "semantic_k": st.integers(1, 6),
    "limit": st.integers(1, 6),
    "offset": st.integers(0, 3),
    "own_vector": st.booleans(),
})


@needs_model2vec
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=queries)
def test_a_bound_callers_page_is_the_same_whatever_other_tenants_rows_and_vectors_exist(alone_and_crowded, query):
    from obsrepo.ops import Query, run

    own = query.pop("own_vector")
    if own:  # the caller's own vector in place of the embedded text
        query["embedding"] = tuple(toy_vector(query["text"]))
    pages = [run(session, Query(**query)).to_json() for session in alone_and_crowded]
    for page in pages:
        page.pop("at_commit")
        for record in page["observations"]:
            record.pop("commit")
    assert pages[0] == pages[1]
    assert pages[0]["semantic_coverage"] == {"candidates": len(MINE), "with_vectors": len(MINE)}


@needs_model2vec
def test_a_callers_own_embedding_without_an_embedder_is_refused_naming_it(alone_and_crowded):
    from obsrepo.errors import UsageError
    from obsrepo.ops import Query, Session, run

    alone = alone_and_crowded[0]
    with pytest.raises(UsageError) as refused:
        run(Session(str(alone.root), embedder="none"), Query(embedding=(1.0, 0.0)))
    assert refused.value.details["parameter"] == "embedding" and "OBSREPO_EMBEDDER" in refused.value.message


def test_a_local_model_writes_large_segments_and_a_failure_keeps_what_it_gave(repo, tmp_path, monkeypatch):
    """A local model's texts go into segments of up to SEGMENT_TEXTS (a batch of BATCH_TEXTS
    at a time); when the model fails midway, what it gave is written and recorded, the rest
    pending, and the next run embeds only that."""
    from obsrepo.embed.local import Model2Vec
    from obsrepo.errors import EmbedderFault
    from obsrepo.index import vectors
    from obsrepo.ops import Session

    monkeypatch.setattr(vectors, "BATCH_TEXTS", 2)
    monkeypatch.setattr(vectors, "SEGMENT_TEXTS", 4)
    for n in range(7):
        repo.add(observation(f"obs-20260210-0900{n:02d}-{n:04d}", event=f"{WORDS[n]} {n}", body="acme"))
    repo.commit("seven texts")
    session = Session(str(repo.path), embedder=f"model2vec:{write_model(tmp_path / 'model')}")
    first = session.build(session.rev("HEAD", "at")).semantic
    assert first["embedded"] == 7 and first["pending"] == 0 and first["error"] is None
    assert sorted(p.stat().st_size for p in segments(repo))[0] < sorted(p.stat().st_size for p in segments(repo))[1]
    assert len(segments(repo)) == 2  # 4 texts, then 3

    places_kept(repo)
    for n in range(7, 12):
        repo.add(observation(f"obs-20260211-0900{n:02d}-{n:04d}", event=f"{WORDS[n % len(WORDS)]} {n}", body="acme"))
    repo.add(observation("obs-20260211-090100-0099", event=f"{WORDS[0]} 0", body="acme"))  # a text embedded already
    repo.commit("five more")
    calls = []
    embed = Model2Vec.embed

    def failing(self, texts):
        calls.append(len(texts))
        if len(calls) > 1:
            raise EmbedderFault("the model went away", provider="model2vec")
        return embed(self, texts)

    monkeypatch.setattr(Model2Vec, "embed", failing)
    second = session.build(session.rev("HEAD", "at")).semantic
    assert calls == [2, 2] and second["error"] == "the model went away"
    assert second["embedded"] == 9 and second["pending"] == 3 and len(segments(repo)) == 3
    places_kept(repo)
    monkeypatch.setattr(Model2Vec, "embed", embed)
    third = session.build(session.rev("HEAD", "at")).semantic
    assert third["embedded"] == 12 and third["pending"] == 0 and len(segments(repo)) == 4
    places_kept(repo)
    min(segments(repo)).unlink()  # a recorded segment gone: forgotten, its texts embedded again
    assert session.build(session.rev("HEAD", "at")).semantic["pending"] == 0
    places_kept(repo)
    other = Session(str(repo.path), embedder=f"model2vec:{write_model(tmp_path / 'other', scale=2.0)}")
    assert other.build(session.rev("HEAD", "at")).semantic["embedded"] == 12  # another kind of vector: all again
    places_kept(repo)


def places_kept(repo: Repo) -> None:
    """`obs_vectors` (each row's vector's place, kept with the index) is what joining the rows'
    text keys with `embedded_texts` says, row for row."""
    import duckdb

    con = duckdb.connect(str(repo.path / ".obsrepo" / "index.duckdb"), read_only=True)
    try:
        kept = con.execute("SELECT row_id, segment, slot FROM obs_vectors ORDER BY ALL").fetchall()
        joined = con.execute("SELECT t.row_id, e.segment, e.slot FROM obs_texts AS t "
                             "JOIN embedded_texts AS e USING (text_key) ORDER BY ALL").fetchall()
    finally:
        con.close()
    assert kept == joined and kept


# -- a small update leaves its few texts to a later one ----------------------------------------


@needs_model2vec
def test_a_small_update_leaves_its_texts_pending_and_queries_answer_as_if_they_were_embedded(indexed, tmp_path):
    """An update bringing at most DEFERRED_TEXTS new texts does not load a local model for them:
    no segment is written, `status` counts them pending, the index is not taken for behind, and
    a query ranking by meaning embeds them, answering byte for byte what it answers once the
    index holds their vectors. The update that brings more embeds every pending text at once."""
    from obsrepo.embed import DEFERRED_TEXTS

    repo, env = indexed
    before = segments(repo)
    repo.add(observation("obs-20260211-090000-0101", event="bill paid", body="acme"),
             observation("obs-20260211-090100-0102", event="invoice settled", body="the"),
             observation("obs-20260211-090200-0103", event="bill settled", body="acme"))  # a text indexed already
    repo.commit("three more")
    update = run_json(repo, "index", env=env)["semantic"]
    assert update["pending"] == 2 and segments(repo) == before, "the update embedded its texts"
    assert run_json(repo, "status", env=env)["semantic"]["pending"] == 2
    again = run_json(repo, "index", env=env)
    assert "semantic" not in again and again["commits"] == 0, again  # not behind: nothing published
    queries = [("query", "--text", "bill settled", "--match", match, "--limit", "10") for match in ("semantic", "hybrid")]
    queries.append(("query", "--text", "invoice settled", "--match", "hybrid", "--fusion", "rrf", "--source", "agent/test"))
    waiting = [run_json(repo, *query, env=env) for query in queries]
    assert waiting[0]["semantic_coverage"] == {"candidates": 6, "with_vectors": 6}
    assert {r["id"] for r in waiting[0]["observations"][:3]} >= {"obs-20260211-090000-0101", "obs-20260211-090100-0102"}
    recall = run_json(repo, "recall", "--text", "bill settled", env=env)
    assert waiting[2]["observations"] and recall["observations"]
    full = run_json(repo, "index", "--full", env=env)["semantic"]
    assert full["pending"] == 0 and len(segments(repo)) == len(before) + 1
    assert [run_json(repo, *query, env=env) for query in queries] == waiting
    assert run_json(repo, "recall", "--text", "bill settled", env=env) == recall
    # more than DEFERRED_TEXTS new texts: the update embeds them all, the earlier waiting ones too
    repo.add(observation("obs-20260212-090000-0201", event="parcel paid", body="acme"))
    repo.commit("one more")
    assert run_json(repo, "index", env=env)["semantic"]["pending"] == 1
    for n in range(DEFERRED_TEXTS):
        repo.add(observation(f"obs-20260212-1{n // 60:02d}{n % 60:02d}00-{n:04d}", event=f"shipment {n}", body="late"))
    repo.commit("many")
    many = run_json(repo, "index", env=env)["semantic"]
    assert many["pending"] == 0 and many["embedded"] == 6 + DEFERRED_TEXTS


@needs_model2vec
def test_the_texts_of_an_index_a_first_embedder_meets_never_wait(repo, tmp_path):
    """Only texts new since an update last embedded may wait: an index built without an
    embedder, indexed again with one, embeds its few texts at once."""
    model = write_model(tmp_path / "model")
    repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
    repo.commit("one")
    run_json(repo, "index", env={})
    first = run_json(repo, "index", env={"OBSREPO_EMBEDDER": f"model2vec:{model}"})["semantic"]
    assert first["pending"] == 0 and first["embedded"] == 1 and len(segments(repo)) == 1

"""MCP `observation_query` ranking by meaning (docs/design.md §15), through the SDK's own client:
`match`, a caller's own `embedding`, its refusals, and the server's kept-open index built with
the configured embedder (a commit made while it runs gets its vectors)."""

from __future__ import annotations

import math

import anyio
import pytest
from embedders import DIMENSION, toy_vector, write_model
from helpers import observation
from test_mcp import call, failure, stdio_session

pytest.importorskip("model2vec")

MEANING = [("bill settled", "acme"), ("parcel late", "the shipment was delayed"), ("invoice paid", "acme")]


def test_match_and_a_callers_own_embedding_rank_by_meaning_and_the_kept_open_index_embeds_new_commits(repo, tmp_path):
    for n, (event, body) in enumerate(MEANING):
        repo.add(observation(f"obs-20260210-09000{n}-000{n}", event=event, body=body))
    repo.commit("observations")
    env = {"OBSREPO_EMBEDDER": f"model2vec:{write_model(tmp_path / 'model')}"}

    async def scenario() -> None:
        async with stdio_session(repo, env=env) as session:
            semantic = await call(session, "observation_query", text="bill settled", match="semantic", mode="json")
            assert [r["event"] for r in semantic["observations"]][:2] == ["invoice paid", "bill settled"]
            assert semantic["semantic_coverage"] == {"candidates": 3, "with_vectors": 3}
            lexical = await call(session, "observation_query", text="bill settled", match="lexical", mode="json")
            assert [r["event"] for r in lexical["observations"]] == ["bill settled"]
            # the caller's own vector: "bill settled"'s, no text at all
            own = await call(session, "observation_query", embedding=toy_vector("bill settled"), mode="json")
            assert [r["id"] for r in own["observations"]] == [r["id"] for r in semantic["observations"]]
            assert own["observations"][0]["scores"]["semantic"] == pytest.approx(2 / math.sqrt(6), abs=1e-6)
            wrong = await failure(session, "observation_query", embedding=[0.5] * (DIMENSION + 1))
            assert wrong["code"] == "VALIDATION_ERROR" and wrong["details"]["parameter"] == "embedding", wrong
            assert f"{DIMENSION + 1} numbers" in wrong["message"] and f"have {DIMENSION}" in wrong["message"], wrong
            beyond = await failure(session, "observation_query", embedding=[1e300] + [0.0] * (DIMENSION - 1))  # inf as float32
            assert beyond["code"] == "VALIDATION_ERROR" and beyond["details"]["parameter"] == "embedding", beyond
            assert "not finite as float32" in beyond["message"], beyond
            lexical_own = await failure(session, "observation_query", embedding=toy_vector("bill"), match="lexical")
            assert lexical_own["details"]["parameter"] == "embedding", lexical_own
            hybrid_without_text = await failure(session, "observation_query", embedding=toy_vector("bill"), match="hybrid")
            assert hybrid_without_text["details"]["parameter"] == "match", hybrid_without_text
            # a commit while the server runs: the kept-open index embeds its text too
            repo.add(observation("obs-20260211-090000-0009", event="settled bill", body="acme"))
            repo.commit("one more")
            after = await call(session, "observation_query", text="bill settled", match="semantic", mode="json")
            assert after["semantic_coverage"] == {"candidates": 4, "with_vectors": 4}
            assert after["observations"][0]["scores"]["semantic"] == pytest.approx(2 / math.sqrt(6), abs=1e-6)

    anyio.run(scenario)


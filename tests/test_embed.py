"""The embedders of recall (docs/design.md §15), through `obsrepo embed info`: a real model2vec
model written by the test and loaded by the product's loader (tests/test_static_model.py proves
it encodes as the library does), a real loopback server for
the OpenAI-compatible and Ollama APIs, and every refusal a clear error, never a traceback."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from embedders import DIMENSION, EmbeddingServer, cosine, toy_vector, write_model
from helpers import Repo, observation
from test_extras import without

SECRET = "sk-test-DO-NOT-PRINT-1234567890"
# The tests of the local provider need the semantic extra, which the test extra includes
needs_model2vec = pytest.mark.skipif(importlib.util.find_spec("model2vec") is None, reason="the semantic extra is not installed")


@pytest.fixture
def committed(repo: Repo) -> Repo:
    repo.commit("empty", allow_empty=True)
    return repo


def obsrepo(repo: Repo, *args: str, **env: str) -> subprocess.CompletedProcess:
    return repo.obsrepo(*args, env=env)


def info(repo: Repo, *texts: str, **env: str) -> dict[str, Any]:
    proc = obsrepo(repo, "embed", "info", "--format", "json", *texts, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def refusal(repo: Repo, *args: str, code: int, **env: str) -> dict[str, Any]:
    proc = obsrepo(repo, "embed", "info", "--format", "json", *args, **env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)["error"]


# -- model2vec ------------------------------------------------------------------------------

@needs_model2vec
def test_a_local_model_puts_synonyms_together_and_names_its_vectors(committed, tmp_path):
    model = write_model(tmp_path / "model")
    state = info(committed, "bill settled", "invoice paid", "parcel late", "zzz", OBSREPO_EMBEDDER=f"model2vec:{model}")
    assert state["provider"] == "model2vec" and state["dimension"] == DIMENSION
    assert state["fingerprint"].startswith("model2vec-")
    bill, invoice, parcel, unknown = state["vectors"]
    assert cosine(bill, invoice) > 0.999
    assert cosine(bill, parcel) < 0.001
    assert bill == pytest.approx(toy_vector("bill settled"), abs=1e-6)
    assert unknown == [0.0] * DIMENSION  # no known token: a zero vector, never NaN


@needs_model2vec
def test_the_fingerprint_follows_the_weights_not_the_folder(committed, tmp_path):
    first = info(committed, OBSREPO_EMBEDDER=f"model2vec:{write_model(tmp_path / 'a')}")
    same = info(committed, "--embedder", f"model2vec:{write_model(tmp_path / 'b')}")
    other = info(committed, "--embedder", f"model2vec:{write_model(tmp_path / 'c', scale=2.0)}")
    assert first["fingerprint"] == same["fingerprint"] != other["fingerprint"]


@needs_model2vec
def test_a_missing_or_broken_model_names_the_command_that_fetches_one(committed, tmp_path):
    for folder in (tmp_path / "absent", tmp_path / "empty"):
        (tmp_path / "empty").mkdir(exist_ok=True)
        error = refusal(committed, "--embedder", f"model2vec:{folder}", code=4)
        assert error["code"] == "EMBEDDER_ERROR" and "obsrepo embed pull" in error["message"], error
    broken = write_model(tmp_path / "broken")
    (broken / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    error = refusal(committed, "--embedder", f"model2vec:{broken}", code=4)
    assert error["code"] == "EMBEDDER_ERROR" and "could not be read" in error["message"], error
    assert "obsrepo embed pull" in error["message"]


@needs_model2vec
def test_without_the_semantic_extra_a_local_model_names_the_extra(committed, tmp_path):
    model = write_model(tmp_path / "model")
    proc = committed.run(sys.executable, "-c", without("tokenizers"), "embed", "info", "--embedder", f"model2vec:{model}",
                         check=False)
    assert proc.returncode == 4, proc.stderr
    assert "needs the semantic extra" in proc.stderr and "pip install 'obsrepo[semantic]'" in proc.stderr, proc.stderr


# -- choosing one ---------------------------------------------------------------------------

def test_no_embedder_is_lexical_only_and_refuses_to_embed(committed):
    assert info(committed) == {"provider": "none", "fingerprint": None, "dimension": None, "vectors": []}
    assert info(committed, OBSREPO_EMBEDDER="none")["provider"] == "none"
    error = refusal(committed, "hello", code=2)
    assert error["details"]["parameter"] == "--embedder", error


@pytest.mark.parametrize(("given", "named"), [
    (["--embedder", "sentencepiece:x"], "--embedder"),
    (["--embedder", "openai"], "--embedder"),
    (["--embedder", "ollama: "], "--embedder"),
])
def test_an_unknown_provider_or_no_model_is_a_usage_error_naming_where_it_came_from(committed, given, named):
    error = refusal(committed, *given, code=2)
    assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == named
    assert error["message"].startswith(named), error
    error = refusal(committed, code=2, OBSREPO_EMBEDDER="word2vec:x")
    assert error["details"]["parameter"] == "OBSREPO_EMBEDDER" and "model2vec:<model folder>" in error["message"]


def test_the_library_takes_the_embedder_as_the_cli_does(committed, monkeypatch):
    from obsrepo import Repository
    from obsrepo.errors import UsageError

    with pytest.raises(UsageError) as refused:
        Repository(str(committed.path), embedder="bogus:x").embedder_info()
    assert refused.value.details["parameter"] == "embedder" and refused.value.message.startswith("embedder 'bogus:x'")
    with EmbeddingServer() as server:
        monkeypatch.setenv("OBSREPO_EMBEDDER_URL", server.env("ollama:m")["OBSREPO_EMBEDDER_URL"])
        state = Repository(str(committed.path), embedder="ollama:m").embedder_info("invoice paid")
    assert state["vectors"][0] == pytest.approx(toy_vector("invoice paid"), abs=1e-6)


def test_a_server_url_must_be_http(committed):
    error = refusal(committed, code=2, OBSREPO_EMBEDDER="openai:m", OBSREPO_EMBEDDER_URL="file:///etc/passwd")
    assert error["details"]["parameter"] == "OBSREPO_EMBEDDER_URL", error
    error = refusal(committed, code=2, OBSREPO_EMBEDDER="openai:m", OBSREPO_EMBEDDER_TIMEOUT="soon")
    assert error["details"]["parameter"] == "OBSREPO_EMBEDDER_TIMEOUT", error


# -- servers --------------------------------------------------------------------------------

@pytest.mark.parametrize(("embedder", "path"), [("openai:toy-embed", "/v1/embeddings"), ("ollama:toy-embed", "/api/embed")])
def test_a_server_embeds_with_the_key_as_bearer(committed, embedder, path):
    with EmbeddingServer() as server:
        state = info(committed, "bill settled", "invoice paid", **server.env(embedder), OPENAI_API_KEY=SECRET)
    assert state["provider"] == embedder.split(":")[0] and state["dimension"] == DIMENSION
    bill, invoice = state["vectors"]
    assert cosine(bill, invoice) > 0.999
    assert {r["path"] for r in server.requests} == {path}
    assert {r["model"] for r in server.requests} == {"toy-embed"}
    assert {r["authorization"] for r in server.requests} == {f"Bearer {SECRET}"}
    assert server.texts == ["bill settled", "invoice paid"]  # the dimension came with the vectors: no probe


def test_the_key_comes_from_the_variable_named_and_is_not_sent_without_one(committed):
    with EmbeddingServer() as server:
        info(committed, "a", **server.env("openai:m"), OBSREPO_EMBEDDER_KEY_ENV="MY_KEY", MY_KEY="k-1", OPENAI_API_KEY=SECRET)
        info(committed, "a", **server.env("openai:m"))
    assert [r["authorization"] for r in server.requests] == ["Bearer k-1", None]


def test_texts_go_in_batches_capped_by_count_and_bytes(committed):
    many = [f"note {i} invoice paid" for i in range(300)]
    big = [("x" * 5000) + f" {i}" for i in range(120)]
    with EmbeddingServer() as server:
        state = info(committed, *many, *big, **server.env("openai:m"))
    assert len(state["vectors"]) == 420
    assert server.texts == many + big  # every text once, in order
    sizes = [len(r["texts"]) for r in server.requests]
    assert sizes == [128, 128, 96, 52, 16], sizes  # 128 a batch; the big texts by bytes
    assert all(sum(len(t.encode()) for t in r["texts"]) <= 256 * 1024 for r in server.requests)


def test_a_text_beyond_the_cap_is_cut_at_a_character_boundary(committed):
    with EmbeddingServer() as server:
        info(committed, "é" * 10_000, **server.env("ollama:m"))
    (sent,) = server.texts
    assert sent == "é" * 4096 and len(sent.encode()) == 8192


@pytest.mark.parametrize(("mode", "words"), [
    ("429", "too many requests (rate limit); try again later (HTTP 429)"),
    ("503", "failed (HTTP 503): "),
    ("401-echo", "refused the key (check the variable OPENAI_API_KEY) (HTTP 401)"),
    ("malformed", "answered something that is not the openai embeddings JSON"),
    ("wrong-dimension", f"answered a vector of {DIMENSION + 1} dimensions where {DIMENSION} were expected"),
    ("slow", "did not answer within 0.5 s"),
])
def test_every_server_failure_is_a_clear_environment_error_without_the_key(committed, mode, words):
    with EmbeddingServer() as server:
        server.mode = mode
        env = {**server.env("openai:m"), "OPENAI_API_KEY": SECRET, "OBSREPO_EMBEDDER_TIMEOUT": "0.5"}
        for output in (["--format", "json"], ["--format", "text"]):
            proc = obsrepo(committed, "embed", "info", *output, "invoice", "paid", **env)
            out = proc.stdout + proc.stderr
            assert proc.returncode == 4, out
            assert SECRET not in out and "Traceback" not in out
            assert words in out, out
            assert f"the openai embedding server at {server.origin}/v1/embeddings" in out
    assert all(r["authorization"] == f"Bearer {SECRET}" for r in server.requests)  # sent, never shown


def test_a_server_that_is_down_is_said_so(committed):
    with EmbeddingServer() as server:
        env = server.env("ollama:m")
    error = refusal(committed, "x", code=4, **env)
    assert error["code"] == "EMBEDDER_ERROR" and "could not be reached" in error["message"], error
    assert error["details"]["url"] == env["OBSREPO_EMBEDDER_URL"] + "/api/embed"


def test_pull_refuses_a_name_that_is_no_hub_id(committed):
    for bad in ("potion", "a/b/c", "../x", "/x"):
        proc = obsrepo(committed, "embed", "pull", "--format", "json", bad)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["error"]["details"]["parameter"] == "HUB_ID"


@needs_model2vec
def test_model_files_are_the_library_layout(tmp_path):
    """The test model is what model2vec itself reads (the same files its save_pretrained writes)."""
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(write_model(tmp_path / "m")), force_download=False)
    assert model.dim == DIMENSION and sorted(p.name for p in Path(tmp_path / "m").iterdir()) == [
        "config.json", "model.safetensors", "tokenizer.json"]


# -- loaded only when a text needs it ---------------------------------------------------------

LOADED = ("import sys\nfrom obsrepo.cli import main\ntry:\n    main(prog_name='obsrepo')\nexcept SystemExit:\n    pass\n"
          "print('tokenizers loaded:', 'tokenizers' in sys.modules, file=sys.stderr)")


def index_run(repo: Repo, model: Path) -> subprocess.CompletedProcess:
    """`obsrepo index`, saying on its last line whether the model's tokenizer was loaded."""
    proc = subprocess.run([sys.executable, "-c", LOADED, "index"], cwd=repo.path,
                          env={**repo.env, "OBSREPO_EMBEDDER": f"model2vec:{model}"}, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return proc


@needs_model2vec
def test_index_reads_the_model_only_for_a_text_the_cache_lacks_and_says_when_it_is_damaged(committed, tmp_path):
    model = write_model(tmp_path / "model")
    committed.add(observation("obs-20260213-102500-0001", event="invoice paid", body="acme"))
    committed.commit("one")
    assert "tokenizers loaded: True" in index_run(committed, model).stderr  # its text embedded
    committed.add(observation("obs-20260213-102600-0002", event="invoice paid", body="acme", source="other"))
    committed.commit("the same text again")
    quiet = index_run(committed, model).stderr
    assert "tokenizers loaded: False" in quiet and "1 text with vectors, 0 pending" in quiet, quiet
    (model / "tokenizer.json").write_text("{not json")  # damaged: a new kind of vector, whose texts need the model
    committed.add(observation("obs-20260213-102700-0003", event="parcel late", body="acme"))
    committed.commit("a new text")
    damaged = index_run(committed, model).stderr
    assert "2 pending" in damaged and "could not be read" in damaged and "obsrepo embed pull" in damaged, damaged
    error = refusal(committed, "--embedder", f"model2vec:{model}", "parcel late", code=4)
    assert error["code"] == "EMBEDDER_ERROR" and "obsrepo embed pull" in error["message"], error

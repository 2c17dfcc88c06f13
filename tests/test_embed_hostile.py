"""Embedders that misbehave (docs/design.md §8b), through the command line against real
loopback servers and real model folders: a redirect never carries the key elsewhere, the
timeout bounds the whole request, a body too large, too deep or of another shape is a provider
error (exit 4, never 5), a vector not finite in float32 is refused and never cached, and a
model whose tensors are missing, cut short or of the wrong dtype or shape names the file and
`obsrepo embed pull`."""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from embedders import EmbeddingServer, ScriptedServer, answer, openai_answer, write_model, write_safetensors
from helpers import Repo, observation

SECRET = "sk-test-DO-NOT-PRINT-1234567890"
needs_model2vec = pytest.mark.skipif(importlib.util.find_spec("model2vec") is None, reason="the semantic extra is not installed")


def obsrepo(repo: Repo, *args: str, **env: str) -> subprocess.CompletedProcess:
    """A process: its exit code and how long it takes are the subject here."""
    return subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=repo.path, env={**repo.env, **env},
                          capture_output=True, text=True, check=False)


def refused(repo: Repo, **env: str) -> str:
    """`embed info` of one text: exit 4, EMBEDDER_ERROR, no traceback, no key; its message."""
    proc = obsrepo(repo, "embed", "info", "--format", "json", "invoice paid", OPENAI_API_KEY=SECRET, **env)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and SECRET not in proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "EMBEDDER_ERROR" and "\\n" not in proc.stdout, error
    return error["message"]


@pytest.fixture(scope="module")
def committed(make_module_repo: Any) -> Repo:
    repo = make_module_repo("hostile")
    repo.commit("empty", allow_empty=True)
    return repo


# -- the key stays with its origin ------------------------------------------------------------

@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_goes_to_no_other_origin(committed, status):
    with ScriptedServer(lambda h: answer(h, 200, openai_answer([[1.0, 0.0]]))) as elsewhere:
        target = elsewhere.origin + "/v1/embeddings"
        with ScriptedServer(lambda h: answer(h, status, b"", Location=target)) as configured:
            message = refused(committed, **configured.env())
    assert elsewhere.requests == [], "the other origin was sent something"
    assert [r["headers"].get("Authorization") for r in configured.requests] == [f"Bearer {SECRET}"]
    assert f"HTTP {status}" in message and elsewhere.origin in message and "OBSREPO_EMBEDDER_URL" in message, message


# -- the timeout bounds the whole request -------------------------------------------------------

def trickle(handler: Any, head: bool) -> None:
    """A byte every 0.2 s for at most 20 s: of the headers (`head`), else of a promised body."""
    start = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    payload = start + b"[" * 100 if head else b"[" * 100
    if not head:
        handler.wfile.write(start)
    for at in range(len(payload)):
        handler.wfile.write(payload[at:at + 1])
        handler.wfile.flush()
        time.sleep(0.2)


@pytest.mark.parametrize("head", [True, False], ids=["headers", "body"])
def test_a_server_that_trickles_is_cut_off_at_the_timeout(committed, head):
    with ScriptedServer(lambda h: trickle(h, head)) as server:
        began = time.monotonic()
        message = refused(committed, **server.env(), OBSREPO_EMBEDDER_TIMEOUT="2")
        took = time.monotonic() - began
    assert "did not answer within 2 s" in message, message
    # the trickle lasts 20 s or more: a bound on each read alone would wait for all of it; the
    # margin is for a loaded machine's process start
    assert took < 9, f"{took:.1f} s for a 2 s timeout"


def test_index_against_a_trickling_server_ends_within_its_timeout_and_leaves_texts_pending(make_repo):
    repo = make_repo()
    repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
    repo.commit("one")
    with ScriptedServer(lambda h: trickle(h, False)) as server:
        began = time.monotonic()
        proc = obsrepo(repo, "index", "--format", "json", **server.env(), OBSREPO_EMBEDDER_TIMEOUT="2")
        took = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["semantic"]["pending"] == 1
    assert took < 12, f"index took {took:.1f} s with a 2 s timeout"  # the trickle lasts 20 s; the process's start included


# -- what the body may be -------------------------------------------------------------------------

def huge(handler: Any, declared: bool) -> None:
    size = 64 * 1024 * 1024 + 1
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    if declared:
        handler.send_header("Content-Length", str(size))
    handler.end_headers()
    block = b" " * (1 << 20)
    for _ in range(65):
        handler.wfile.write(block)


@pytest.mark.parametrize(("body", "words"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 32 levels"),
    (b'{"data": ' + b"[" * 33 + b"]" * 33 + b"}", "nested deeper than 32 levels"),
    (b'{"data": [{"embedding": ' + b"[" * 40 + b"1" + b"]" * 40 + b"}]}", "nested deeper than 32 levels"),
    (b"[1, 2]", "not the openai embeddings JSON"),
    (b'{"data": {"embedding": [1]}}', "not the openai embeddings JSON"),
    (b'{"data": [{"index": 1e400, "embedding": [1.0]}]}', "not the openai embeddings JSON"),
    (b'{"data": [{"embedding": [' + b"9" * 400 + b"]}]}", "beyond float32's range"),
    (b'{"data": [{"embedding": "AAAA"}]}', "not a non-empty list of numbers"),
    (b'{"data": [{"embedding": [true, 1]}]}', "not a number"),
    (b'{"data": [{"embedding": [NaN, 1]}]}', "not finite as float32"),
    (b'{"data": [{"embedding": [1e39, 1]}]}', "not finite as float32"),
    (b'{"data": [{"embedding": [3e38, 3e38]}]}', "length (norm) beyond float32"),
    ("declared", "more than 64 MiB"),
    ("streamed", "more than 64 MiB"),
])
def test_a_body_too_large_too_deep_or_of_another_shape_is_a_provider_error(committed, body, words):
    script = (lambda h: huge(h, body == "declared")) if isinstance(body, str) else (lambda h: answer(h, 200, body))
    with ScriptedServer(script) as server:
        message = refused(committed, **server.env())
    assert words in message and f"{server.origin}/v1/embeddings" in message, message


# -- vectors are finite or refused ------------------------------------------------------------------

def segments(repo: Repo) -> list[Path]:
    return sorted((repo.path / ".git" / "obsrepo" / "embeddings").glob("*/*.vectors"))


def scores(repo: Repo, env: dict[str, str]) -> list[float]:
    proc = obsrepo(repo, "query", "--text", "invoice paid", "--match", "hybrid", "--format", "json", **env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    page = json.loads(proc.stdout)
    return [value for r in page["observations"] for value in (r["score"], *r["scores"].values())]


def test_a_vector_not_finite_in_float32_is_never_cached_and_a_later_good_run_scores_finitely(make_repo):
    repo = make_repo()
    repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
    repo.add(observation("obs-20260211-090000-0002", event="parcel late", body="acme"))
    repo.commit("two")
    with ScriptedServer(lambda h: answer(h, 200, openai_answer([[1e39, 0, 0, 0, 0], [0, 1, 0, 0, 0]]))) as bad:
        proc = obsrepo(repo, "index", "--format", "json", **bad.env("openai:toy"))
    assert proc.returncode == 0, proc.stderr
    state = json.loads(proc.stdout)["semantic"]
    assert state["pending"] == 2 and "not finite as float32" in state["error"], state
    assert segments(repo) == [], "a vector that is not finite was cached"
    with EmbeddingServer() as good:
        env = good.env("openai:toy")
        filled = obsrepo(repo, "index", "--format", "json", **env)
        assert json.loads(filled.stdout)["semantic"]["pending"] == 0, filled.stdout + filled.stderr
        found = scores(repo, env)
    assert found and all(math.isfinite(value) for value in found), found


def poison(segment: Path) -> None:
    """Write the segment's first vector's first number as infinity, its norm too, and the
    checksum anew: a whole, well-formed segment holding a vector that is not finite (as one
    written before such vectors were refused)."""
    data = bytearray(segment.read_bytes())
    start = len(b"obsrepo vectors 2\n") + 4 + struct.unpack_from("<I", data, len(b"obsrepo vectors 2\n"))[0]
    count = json.loads(bytes(data[22:start]))["count"]
    dimension = ((len(data) - start - 4) // count - 32 - 4) // 4  # a row: its key, its numbers, its norm
    matrix_at = start + count * 32
    struct.pack_into("<f", data, matrix_at, math.inf)
    struct.pack_into("<f", data, matrix_at + count * dimension * 4, math.inf)
    struct.pack_into("<I", data, len(data) - 4, zlib.crc32(bytes(data[:-4])))
    segment.write_bytes(bytes(data))


def test_a_cached_segment_holding_a_vector_not_finite_is_ignored_and_recomputed(make_repo):
    repo = make_repo()
    repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
    repo.add(observation("obs-20260211-090000-0002", event="parcel late", body="acme"))
    repo.commit("two")
    with EmbeddingServer() as server:
        env = server.env("openai:toy")
        assert obsrepo(repo, "index", **env).returncode == 0
        (segment,) = segments(repo)
        poison(segment)
        found = scores(repo, env)  # the recorded segment, mapped by a query: its norms say it is not whole
        assert all(math.isfinite(value) for value in found), found
        sent = len(server.texts)
        rebuilt = obsrepo(repo, "index", "--full", "--format", "json", **env)
        assert json.loads(rebuilt.stdout)["semantic"] == {"fingerprint": json.loads(rebuilt.stdout)["semantic"]["fingerprint"],
                                                          "embedded": 2, "pending": 0, "error": None}, rebuilt.stdout
        assert len(server.texts) == sent + 2  # recomputed
        found = scores(repo, env)
    assert found and all(math.isfinite(value) for value in found), found


# -- a local model whose tensors are not right -------------------------------------------------------

def tensor_damage(folder: Path, damage: str) -> None:
    import numpy as np

    weights = folder / "model.safetensors"
    rows = np.full((14, 5), 0.5, dtype="<f4")
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:-20])
    elif damage == "missing":
        write_safetensors(weights, {"other": rows})
    elif damage == "dtype":
        write_safetensors(weights, {"embeddings": rows.astype("<i8")})
    elif damage == "shape":
        write_safetensors(weights, {"embeddings": rows[:3]})
    elif damage == "mapping":
        write_safetensors(weights, {"embeddings": rows, "mapping": np.full(14, 99, dtype="<i8")})
    elif damage == "weights":
        write_safetensors(weights, {"embeddings": rows, "weights": np.ones(2, dtype="<f4")})
    elif damage == "not finite":
        write_safetensors(weights, {"embeddings": np.full((14, 5), 3e38, dtype="<f4")})
    elif damage == "header":
        weights.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")


@needs_model2vec
@pytest.mark.parametrize("damage", ["truncated", "missing", "dtype", "shape", "mapping", "weights", "not finite", "header"])
def test_a_model_whose_tensors_are_not_right_names_the_file_and_embed_pull(committed, tmp_path, damage):
    model = write_model(tmp_path / "model")
    tensor_damage(model, damage)
    message = refused(committed, OBSREPO_EMBEDDER=f"model2vec:{model}")
    assert "model.safetensors" in message and "obsrepo embed pull" in message, message
    assert "Error:" not in message, message  # no library's exception names


@needs_model2vec
def test_index_with_a_damaged_model_publishes_the_lexical_index_and_says_why(make_repo, tmp_path):
    repo = make_repo()
    repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
    repo.commit("one")
    model = write_model(tmp_path / "model")
    tensor_damage(model, "mapping")
    proc = obsrepo(repo, "index", "--format", "json", OBSREPO_EMBEDDER=f"model2vec:{model}")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    state = json.loads(proc.stdout)["semantic"]
    assert state["pending"] == 1 and "model.safetensors" in state["error"] and "obsrepo embed pull" in state["error"]

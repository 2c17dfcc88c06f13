"""Never twice means never probed (docs/design.md §8b): `index` sends a remote provider only
the texts that need vectors, its size coming with the first answer, and nothing at all when
nothing is new; `status` reports the configured embedder's vectors and names the index's when
they differ. And a model that cannot be fetched (offline) says what a model folder is and how
to bring one from another machine, on one clean line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest
from embedders import EmbeddingServer, write_model
from helpers import Repo, observation

needs_model2vec = pytest.mark.skipif(importlib.util.find_spec("model2vec") is None, reason="the semantic extra is not installed")


def ok(repo: Repo, *args: str, **env: str) -> Any:
    proc = repo.obsrepo(*args, "--format", "json", env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_index_sends_only_texts_that_need_vectors_and_nothing_when_nothing_is_new(make_repo):
    repo = make_repo()
    repo.commit("empty", allow_empty=True)
    with EmbeddingServer() as server:
        env = server.env("openai:toy")
        ok(repo, "index", **env)
        assert server.requests == [], "a repository without texts was sent something"
        repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
        repo.commit("one")
        first = ok(repo, "index", **env)["semantic"]
        assert server.texts == ["invoice paid\n\nacme"]  # no probe: the size came with it
        assert first["embedded"] == 1 and first["pending"] == 0 and first["fingerprint"].startswith("openai-")
        ok(repo, "index", **env)
        ok(repo, "index", "--index", str(repo.path / "other.duckdb"), **env)  # another index: the cache has it
        assert len(server.requests) == 1, server.requests
        repo.add(observation("obs-20260211-090000-0002", event="parcel late", body="acme"))
        repo.commit("two")
        ok(repo, "index", **env)
        assert server.texts == ["invoice paid\n\nacme", "parcel late\n\nacme"]  # each text once, ever


def test_status_reports_the_configured_embedders_vectors_and_names_the_indexed_ones(make_repo):
    repo = make_repo()
    repo.add(observation("obs-20260210-090000-0001", event="invoice paid", body="acme"))
    repo.add(observation("obs-20260211-090000-0002", event="parcel late", body="acme"))
    repo.commit("two")
    with EmbeddingServer() as server:
        toy = server.env("openai:toy")
        indexed = ok(repo, "index", **toy)["semantic"]["fingerprint"]
        other = server.env("openai:other")
        assert ok(repo, "status", **toy)["semantic"] == {"fingerprint": indexed, "embedded": 2, "pending": 0}
        # another model that has embedded nothing here: no fingerprint yet, nothing sent to learn it
        before = len(server.requests)
        state = ok(repo, "status", **other)["semantic"]
        assert state == {"fingerprint": None, "embedded": 0, "pending": 2, "indexed_fingerprint": indexed}, state
        assert len(server.requests) == before
        ok(repo, "index", "--index", str(repo.path / "other.duckdb"), **other)  # the other model's vectors, elsewhere
        state = ok(repo, "status", **other)["semantic"]
        assert state["fingerprint"] not in (None, indexed) and state["indexed_fingerprint"] == indexed, state
        assert (state["embedded"], state["pending"]) == (2, 0), state
        proc = repo.obsrepo("status", "--embedder", "openai:other", env=toy)
        assert f"the index holds {indexed} vectors" in proc.stdout, proc.stdout + proc.stderr


# -- offline ---------------------------------------------------------------------------------

LAYOUT = ("config.json", "tokenizer.json", "model.safetensors")


def test_pull_offline_says_what_a_model_folder_is_and_how_to_copy_one_on_one_line(make_repo, tmp_path):
    pytest.importorskip("huggingface_hub")
    repo = make_repo()
    repo.commit("empty", allow_empty=True)
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}  # the hub client touches no network
    proc = subprocess.run([sys.executable, "-m", "obsrepo", "embed", "pull", "minishlab/potion-base-8M", "--format", "json"],
                          cwd=repo.path, env={**repo.env, **env}, capture_output=True, text=True, check=False)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    message = json.loads(proc.stdout)["error"]["message"]
    assert "\n" not in message and "Error" not in message, message  # one line, no library's exception names
    folder = str(repo.path / ".obsrepo" / "models" / "minishlab--potion-base-8M")
    assert all(name in message for name in LAYOUT) and folder in message, message
    assert "on a connected machine" in message and f"OBSREPO_EMBEDDER=model2vec:{folder}" in message, message


@needs_model2vec
def test_a_missing_model_says_what_a_model_folder_is_and_how_to_bring_one(make_repo, tmp_path):
    repo = make_repo()
    repo.commit("empty", allow_empty=True)
    for folder in (tmp_path / "absent", write_model(tmp_path / "partial")):
        if folder.exists():
            (folder / "tokenizer.json").unlink()
        proc = repo.obsrepo("embed", "info", "--embedder", f"model2vec:{folder}", "x")
        assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert str(folder) in line and all(name in line for name in LAYOUT), line
        assert "obsrepo embed pull" in line and "on a connected machine" in line and "OBSREPO_EMBEDDER=model2vec:" in line

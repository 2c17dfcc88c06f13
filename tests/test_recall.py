"""Recall's vector cache and ranking (docs/design.md §15), through the CLI: a real loopback
embedding server counting what it embeds, a real model2vec model written by the test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from embedders import EmbeddingServer
from helpers import Repo, observation

TEXTS = {  # id → (event, body)
    "obs-20260210-090000-0001": ("invoice paid", "acme"),
    "obs-20260211-090000-0002": ("parcel late", "acme"),
    "obs-20260212-090000-0003": ("shipment delayed", "the parcel"),
}


def run(repo: Repo, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=repo.path, env={**repo.env, **env},
                          capture_output=True, text=True, check=False)


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
        # each text once, and once ever the short probe that learns a remote model's size
        distinct = sorted({embedded(*text) for text in TEXTS.values()} | {"obsrepo"})
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
        assert len(server.texts) == 3 + 1  # the three texts, and the probe that learned the size
        server.mode = "503"  # known size, nothing pending: index answers without asking the server
        assert run(texts_repo, "index", env=env).returncode == 0
        assert len(server.requests) == 2 + 1


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

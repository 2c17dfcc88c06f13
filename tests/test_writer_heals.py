"""A kept-open writer heals (docs/design.md §8b): the MCP server, driven by the MCP SDK's own
client, keeps its rule state and the base's lookup store open across writes; when the stores
under `.git/obsrepo/` are damaged on disk (truncated, garbage bytes) the next write is judged as
before, the lookup store is built again, and the writes after it use that store."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import Repo
from obsrepo.gate.facts import FactsStore
from obsrepo.gate.lookup import BaseLookup
from obsrepo.gitstore import Git
from test_mcp import demo
from test_mcp_write import BRANCH, record, serving, tip, written


def _damage(file: Path, how: str) -> None:
    size = file.stat().st_size
    with open(file, "r+b") as handle:  # in place: the writer's open handle sees it
        if how == "truncate":
            handle.truncate(size // 2)
        else:
            handle.seek(0)
            handle.write(os.urandom(min(size, 8192)))


def _store(repo: Repo) -> Path:
    (store,) = (repo.path / ".git" / "obsrepo").glob("lookup-*.sqlite")
    return store


def _valid(repo: Repo) -> bool:
    """Whether the kept lookup store of HEAD's tree opens and validates (whole, of these rules)."""
    return BaseLookup.kept(Git(str(repo.path)), "HEAD", FactsStore.open(Git(str(repo.path)))) is not None


@pytest.mark.parametrize("how", ["truncate", "garbage"])
def test_a_write_after_the_stores_are_damaged_is_judged_right_and_rebuilds_the_store(make_repo: Callable[..., Repo],
                                                                                     how: str) -> None:
    repo = demo(make_repo)
    assert repo.check().returncode == 0  # the analysis cache, kept: damaged below as well
    committed = sorted((repo.path / "observations").rglob("*.md"))[0].stem
    with serving(repo, BRANCH) as server:
        first = record(server, "W1 registered", "company/w-one")
        written(repo, first, None)
        store = _store(repo)
        assert _valid(repo)
        kept = repo.path / ".git" / "obsrepo"
        for file in [store, *(kept / name for name in ("facts.marshal", "check-cache.marshal", "records.marshal"))]:
            if file.is_file():
                _damage(file, how)
        assert not _valid(repo)

        # judged as before: a retraction of a committed observation needs the store to find it
        retracted = server.call("retract_observation", observation_id=committed, reason="Recorded twice")
        assert f"retracts: [{committed}]" in written(repo, retracted, first["commit"], tool="retract")
        missing = server.failure("retract_observation", observation_id="obs-20200101-000000-0000", reason="none")
        assert missing["code"] == "REF_NOT_FOUND", missing
        assert tip(repo) == retracted["commit"]  # the refusal moved nothing
        assert _valid(repo)  # built again, in place
        rebuilt = store.stat()

        # the writes after it use the rebuilt store: it is not built again
        again = server.call("retract_observation", observation_id=committed, reason="Once more")
        written(repo, again, retracted["commit"])
        later = record(server, "W2 registered", "company/w-two")
        written(repo, later, again["commit"])
        assert (store.stat().st_ino, store.stat().st_mtime_ns) == (rebuilt.st_ino, rebuilt.st_mtime_ns)
        assert _valid(repo)

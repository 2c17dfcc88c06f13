"""Read your own commit (docs/design.md §8a): with `obsrepo watch` running, a reader asked right
after `git commit` answers at the new HEAD, never from the commit before it. Before, a reader
deferred to the watcher without waiting, so `git commit` of 300 observations followed at once by
`obsrepo query` answered from the previous commit.

A real `obsrepo watch` process follows real watchdog events; the readers are the CLI (a
process), the library (in this process) and the MCP server (the SDK's own client), asked in
turn right after each of 20 commits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from helpers import Repo, obs_id, observation, stop
from obsrepo import Repository
from obsrepo.read.query import QueryRequest
from test_mcp import call, stdio_session

pytest.importorskip("watchdog")

COMMITS = 20
PER_COMMIT = 25


def _start_watcher(repo: Repo, index: str) -> subprocess.Popen:
    watcher = subprocess.Popen([sys.executable, "-m", "obsrepo", "watch", "--index", index], cwd=repo.path,
                               env=repo.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = json.loads(repo.obsrepo("status", "--index", index, "--format", "json").stdout)
        if state["watcher"] and state["indexed_commit"] == state["head"]:
            return watcher
        assert watcher.poll() is None, watcher.stderr.read() if watcher.stderr else ""
        time.sleep(0.05)
    watcher.kill()
    raise AssertionError("the watcher never started")


def _stop(watcher: subprocess.Popen) -> None:
    """SIGTERM, and SIGKILL if a loaded machine keeps it from ending within a minute."""
    stop(watcher, timeout=60)


def _commit(repo: Repo, round_: int) -> str:
    for n in range(PER_COMMIT):
        doc = observation(obs_id(round_ * PER_COMMIT + n + 1), entity=f"task/{round_}", fields={"n": n})
        repo.write(doc.path, doc)
    return repo.commit(f"round {round_}")


def test_a_reader_right_after_a_commit_answers_at_that_commit_while_a_watcher_runs(repo: Repo, tmp_path: Path) -> None:
    index = str(tmp_path / "index.duckdb")
    _commit(repo, 0)
    watcher = _start_watcher(repo, index)
    library = Repository(str(repo.path), index=index)
    stale: list[tuple[int, str, int]] = []

    async def rounds() -> None:
        async with stdio_session(repo, "--index", index) as session:
            for round_ in range(1, COMMITS + 1):
                head = _commit(repo, round_)
                expected = (round_ + 1) * PER_COMMIT
                reader = ("cli", "library", "mcp")[round_ % 3]
                if reader == "cli":
                    proc = repo.obsrepo("query", "--index", index, "--limit", "1", "--format", "json")
                    page = json.loads(proc.stdout)
                elif reader == "library":
                    page = library.query(QueryRequest(limit=1))
                else:
                    page = await call(session, "observation_query", limit=1, mode="json")
                if (page["total"], page["at_commit"]) != (expected, head):
                    stale.append((round_, reader, page["total"]))

    try:
        anyio.run(rounds)
    finally:
        _stop(watcher)
    assert stale == [], f"answers from an older commit (round, reader, total): {stale}"


def test_a_watcher_that_does_not_follow_is_waited_for_at_most_the_bound_then_the_reader_updates(
        repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watcher that is stopped (SIGSTOP) still holds its lock: the reader waits the bound of
    §8a, then brings the index to HEAD itself; it never answers from the older commit."""
    import signal

    from obsrepo.index import freshness

    index = str(tmp_path / "index.duckdb")
    _commit(repo, 0)
    watcher = _start_watcher(repo, index)
    try:
        watcher.send_signal(signal.SIGSTOP)
        head = _commit(repo, 1)
        monkeypatch.setattr(freshness, "WATCHER_WAIT", 1.0)  # the bound of §8a, shortened for the test
        started = time.monotonic()
        page = Repository(str(repo.path), index=index).query(QueryRequest(limit=1))
        waited = time.monotonic() - started
        assert (page["total"], page["at_commit"]) == (2 * PER_COMMIT, head)
        assert waited >= 1.0
    finally:
        watcher.send_signal(signal.SIGCONT)
        _stop(watcher)

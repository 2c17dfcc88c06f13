"""`obsrepo mcp --watch`: the watcher runs inside the server, driven by real watchdog events.

An agent asking the server sees the work tree's valid drafts (flagged `uncommitted`) as soon as
they are saved, and a commit as soon as it lands; an invalid draft is never shown; the watch
lock is the server's while it runs, so a second watcher of the same index is refused.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from helpers import observation
from test_mcp import call, demo, stdio_session


async def _ids(session: Any, scope: str) -> dict[str, bool]:
    """id → uncommitted, for the records of `scope`."""
    records = await call(session, "observation_query", scopeIds=[scope], mode="json", limit=50)
    return {r["id"]: bool(r.get("uncommitted")) for r in records["observations"]}


async def _until(session: Any, scope: str, wanted: dict[str, bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    got: dict[str, bool] = {}
    while time.monotonic() < deadline:
        got = await _ids(session, scope)
        if got == wanted:
            return
        await anyio.sleep(0.1)
    raise AssertionError(f"wanted {wanted}, the server answers {got}")


def test_a_watching_server_answers_with_drafts_and_commits(make_repo):
    repo = demo(make_repo)
    draft = observation("obs-20260701-090000-0001", scope=["task/live"], event="A draft the agent saved")
    bad = observation("obs-20260701-090000-0002", scope=["task/live"], event="Broken", priority="high")

    async def scenario() -> None:
        async with stdio_session(repo, "--watch") as session:
            assert await _ids(session, "task/live") == {}
            repo.write(draft.path, draft)
            repo.write(bad.path, bad)  # invalid: reported on the server's stderr, never served
            await _until(session, "task/live", {"obs-20260701-090000-0001": True})

            second = repo.obsrepo("watch", "--quiet")
            assert second.returncode == 4 and "INDEX_ERROR" in second.stderr + second.stdout

            (repo.path / bad.path).unlink()
            repo.git("add", draft.path)
            repo.git("commit", "-q", "-m", "the draft, committed")
            await _until(session, "task/live", {"obs-20260701-090000-0001": False})

    anyio.run(scenario)

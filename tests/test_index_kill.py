"""Killed work never blocks the next command (docs/design.md §8b): after `kill -9` of an
`obsrepo index` in the middle of its build, with its workers paused, no process of it stays
behind and the next `obsrepo index` takes the writer lock at once; a command that has to wait
for the lock says so on stderr and gives up within its bound."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, git_env
from proc_tree import descendants, running, wait_for_workers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
GENERATE = Path(__file__).resolve().parents[1] / "bench" / "generate.py"


@pytest.fixture(scope="module")
def large(tmp_path_factory: Any) -> Repo:
    """3000 observations: a full build uses the worker pool (past 2000 documents to parse)."""
    base = tmp_path_factory.mktemp("large")
    home = base / "_home"
    home.mkdir()
    env = git_env(home, base)
    subprocess.run([sys.executable, str(GENERATE), str(base / "repo"), "--count", "3000"],
                   env=env, check=True, capture_output=True)
    return Repo(base / "repo", dict(env, OBSREPO_NO_CACHE="1"), None)  # type: ignore[arg-type]


def kill_mid_build(repo: Repo, index: Path) -> tuple[set[int], float]:
    """Start `obsrepo index --full`, wait until its worker pool runs, pause the workers, then
    `kill -9` the indexer alone; the pids of the killed run, and when it was killed."""
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "index", "--full", "-q", "--index", str(index)],
                            cwd=repo.path, env=repo.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        paused = wait_for_workers(proc)
        for pid in paused:
            os.kill(pid, signal.SIGSTOP)
        run = descendants(proc.pid) | {proc.pid}
        os.kill(proc.pid, signal.SIGKILL)  # the indexer only, as `kill -9 PID` would: never its group
        killed = time.monotonic()
        assert proc.wait(timeout=10) == -signal.SIGKILL
        return run, killed
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise


def test_kill_9_mid_build_leaves_no_process_and_no_held_lock(large: Repo, tmp_path: Path) -> None:
    index = tmp_path / "index.duckdb"
    run, killed = kill_mid_build(large, index)
    try:
        deadline = killed + 5
        while any(running(pid) for pid in run) and time.monotonic() < deadline:
            time.sleep(0.01)
        left = sorted(pid for pid in run if running(pid))
        assert not left, f"processes of the killed run still run: {left}"
    finally:
        for pid in run:  # a failure must not leave them behind either
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    with open(str(index) + ".lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds the writer lock
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "obsrepo", "index", "-q", "--index", str(index)],
                          cwd=large.path, env=large.env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30
    assert "waiting" not in proc.stderr


def test_a_held_writer_lock_is_named_on_stderr_and_given_up_on(large: Repo, tmp_path: Path) -> None:
    index = tmp_path / "index.duckdb"
    with open(str(index) + ".lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "obsrepo", "index", "-q", "--index", str(index), "--format", "json"],
                              cwd=large.path, env=dict(large.env, OBSREPO_LOCK_WAIT="3"), capture_output=True,
                              text=True, timeout=60)
        waited = time.monotonic() - started
    assert proc.returncode == 4, proc
    assert '"INDEX_ERROR"' in proc.stdout and str(index) + ".lock" in proc.stdout, proc.stdout
    assert f"waiting for the index writer lock ({index}.lock, locked by pid {os.getpid()}" in proc.stderr, proc.stderr
    assert 3 <= waited < 20
    assert not index.exists()

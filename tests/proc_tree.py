"""The processes a test started, as /proc shows them (Linux): descendants of a pid, whether a
pid still runs, and waiting for a process's worker pool to appear."""

from __future__ import annotations

import os
import time
from pathlib import Path


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of `pid`, None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has ended: only its entry is left)."""
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                parents[int(entry)] = found[1]
    found_ids: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found_ids
        found_ids |= frontier
    return found_ids


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def workers(pid: int) -> set[int]:
    """The pool workers under `pid`: the children of its fork server, spawned workers, or
    forked ones (a process caught between fork and exec shows its parent's command too)."""
    found, own = set(), _command(pid)
    for child in descendants(pid):
        command, state = _command(child), _stat(child)
        if state is None:
            continue
        if b"spawn_main" in command or (b"multiprocessing.forkserver" in command and state[1] != pid):
            found.add(child)
        elif state[1] == pid and command == own and cpu_ticks(child):
            found.add(child)  # a forked worker (a fork about to exec has used no time of its own)
    return found


def cpu_ticks(pid: int) -> int:
    """The processor time `pid` used so far, in clock ticks (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def wait_for_workers(proc, timeout: float = 60, busy: int = 10) -> set[int]:
    """The worker pool of `proc` (a Popen) once it works: every worker has used `busy` clock
    ticks of processor time, so it is past its start and in the middle of documents."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        found = workers(proc.pid)
        if found and all(cpu_ticks(pid) >= busy for pid in found):
            return found
        time.sleep(0.005)
    raise AssertionError(f"no busy worker pool appeared under pid {proc.pid} (exit {proc.poll()})")

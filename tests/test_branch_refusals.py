"""A proposal branch that can never be written is said so at once (docs/design.md §11): a name
that clashes with another branch or is too long is VALIDATION_ERROR naming --branch (exit 2), a
lock file left by a crashed git process is GIT_ERROR naming the file (exit 4). Only a lost
compare-and-swap is retried (tests/test_write.py races writers)."""

from __future__ import annotations

import json
import time

from helpers import comprehension, observation

NEW = ("new", "--source", "agent/x", "--event", "seen", "--commit", "--format", "json")
PROMPT = 3.5  # seconds: a retried write gave up after about 4; python and git start well within this


def proposed(repo, *args):
    started = time.monotonic()
    proc = repo.obsrepo(*args)
    return proc, time.monotonic() - started


def based(repo):
    repo.add(observation("obs-20260101-090000-0001"))
    repo.commit("one")
    return repo


def test_a_branch_named_like_a_folder_of_branches_is_refused_at_once(repo):
    based(repo).git("branch", "pb/x")
    proc, took = proposed(repo, *NEW, "--branch", "pb")
    assert proc.returncode == 2, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == "--branch", error
    assert "'pb/x'" in error["message"] and "kept moving" not in error["message"]
    assert took < PROMPT, took
    assert repo.git("branch", "--list", "pb") == ""


def test_a_branch_inside_an_existing_branch_is_refused_at_once(repo):
    based(repo).git("branch", "pb")
    proc, took = proposed(repo, *NEW, "--branch", "pb/x")
    assert proc.returncode == 2, proc
    error = json.loads(proc.stdout)["error"]
    assert error["details"] == {"parameter": "--branch", "branch": "pb/x", "clash": "pb"}, error
    assert took < PROMPT, took


def test_a_branch_name_too_long_for_a_file_is_refused_at_once(repo):
    name = "b" * 300
    proc, took = proposed(based(repo), *NEW, "--branch", name)
    assert proc.returncode == 2, proc
    error = json.loads(proc.stdout)["error"]
    assert error["details"]["parameter"] == "--branch" and "too long" in error["message"], error
    assert took < PROMPT, took


def test_a_stale_lock_names_the_file_and_writing_works_once_it_is_removed(repo):
    based(repo)
    lock = repo.path / ".git" / "refs" / "heads" / "review.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    proc, took = proposed(repo, *NEW, "--branch", "review")
    assert proc.returncode == 4, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "GIT_ERROR" and error["details"]["lock"] == str(lock), error
    assert "remove that file" in error["message"] and "kept moving" not in error["message"]
    assert took < PROMPT, took
    lock.unlink()
    again = repo.obsrepo(*NEW, "--branch", "review")
    assert again.returncode == 0, again
    assert json.loads(again.stdout)["commit"] == repo.sha("review")


def test_comprehend_on_a_clashing_branch_is_refused_at_once(repo):
    """Every write to a proposal branch goes the same way (here: a belief update)."""
    first = observation("obs-20260201-090000-0001")
    second = observation("obs-20260202-090000-0002")
    repo.add(first, second, comprehension("comp-x", [first.id]))
    repo.commit("belief")
    repo.git("branch", "obsrepo/proposals/old")
    proc, took = proposed(repo, "comprehend", "comp-x", "--observation", second.id, "--effect", "neutral", "--commit",
                          "--format", "json")
    assert proc.returncode == 2, proc
    assert json.loads(proc.stdout)["error"]["details"]["clash"] == "obsrepo/proposals/old"
    assert took < PROMPT, took

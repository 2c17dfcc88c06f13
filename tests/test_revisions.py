"""One revision, one commit (docs/design.md §8a): every revision argument of every surface
resolves to exactly one full commit id, or is refused naming its parameter.

Before, `--at ^HEAD` answered as if the repository were empty (exit 0), `show --at ^HEAD` said
an existing observation was missing, `retention --at ^HEAD` exited 5, ranges were GIT_ERROR and
`--at ''` (or `check --base ''`: no immutability check at all) silently meant HEAD.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import anyio
import pytest
from helpers import Repo, observation
from obsrepo.errors import NotFoundError, UsageError
from obsrepo.gitstore import Git, revision_syntax_problem
from test_mcp import failure, stdio_session

FIRST = observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"})
SECOND = observation("obs-20260214-102500-0002", entity="company/acme", fields={"name": "Acme Corp"})

# (the command and its arguments, the option that takes the revision: None for a positional)
REVISION_ARGUMENTS: list[tuple[list[str], str | None]] = [
    (["query"], "--at"),
    (["snapshot", "company/acme"], "--at"),
    (["provenance", "company/acme", "name"], "--at"),
    (["entities"], "--at"),
    (["find", "acme"], "--at"),
    (["observations", "company/acme"], "--at"),
    (["relations", "company/acme"], "--at"),
    (["related", "company/acme"], "--at"),
    (["timeline"], "--at"),
    (["show", FIRST.id], "--at"),
    (["retention"], "--at"),
    (["export", "--format", "jsonl"], "--at"),
    (["index"], "--rev"),
    (["check"], "--base"),
    (["diff", "{}", "HEAD"], "BASE"),
    (["diff", "HEAD~1", "{}"], "HEAD"),
]
NOT_ONE_COMMIT = ["^HEAD", "^main", "HEAD~1..HEAD", "HEAD...HEAD~1", "..HEAD", "", "HEAD^{tree}", "HEAD:observations",
                  ":observations", "HEAD^@", "HEAD^!", "HEAD^-", "-n", "--all", "HEAD\nHEAD~1", "HEAD\r", "HEAD\x1b"]


@pytest.fixture(scope="module")
def two_commits(make_module_repo: Callable[..., Repo]) -> Repo:
    repo = make_module_repo()
    repo.add(FIRST)
    repo.commit("first")
    repo.add(SECOND)
    repo.commit("second")
    repo.git("tag", "-a", "-m", "the second", "v2")
    assert repo.obsrepo("index").returncode == 0
    return repo


def _argv(command: list[str], option: str | None, rev: str) -> list[str]:
    if option in ("BASE", "HEAD"):
        return [rev if arg == "{}" else arg for arg in command]
    return [*command, f"{option}={rev}" if rev.startswith("-") else option, *([] if rev.startswith("-") else [rev])]


def _error(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stdout)["error"]


@pytest.mark.parametrize("command,option", REVISION_ARGUMENTS, ids=[" ".join(c[:1] + [o or ""]) for c, o in REVISION_ARGUMENTS])
def test_every_revision_argument_refuses_a_name_that_is_not_one_commit(two_commits: Repo, command, option) -> None:
    for rev in ("^HEAD", "HEAD~1..HEAD", ""):
        as_json = [] if command[0] == "export" else ["--format", "json"]  # export's --format is the file's
        proc = two_commits.obsrepo(*_argv(command, option, rev), *as_json)
        assert proc.returncode == 2, (command, rev, proc)
        if not as_json:  # the text envelope on stderr, nothing written
            assert proc.stderr.startswith(f"error: VALIDATION_ERROR: {option} {rev!r}") and proc.stdout == "", proc
            continue
        error = _error(proc)
        assert (error["code"], error["details"]["parameter"]) == ("VALIDATION_ERROR", option), (command, rev, error)
        assert repr(rev) in error["message"]


def test_every_malformed_name_is_a_usage_error_and_a_missing_one_is_not_found(two_commits: Repo) -> None:
    for rev in NOT_ONE_COMMIT:
        proc = two_commits.obsrepo("query", f"--at={rev}", "--format", "json")
        assert proc.returncode == 2 and _error(proc)["code"] == "VALIDATION_ERROR", (rev, proc)
    for rev in ("nope", "v9", "HEAD~7", "0" * 40):
        proc = two_commits.obsrepo("query", "--at", rev, "--format", "json")
        assert (proc.returncode, _error(proc)["code"]) == (3, "REF_NOT_FOUND"), (rev, proc)


def test_names_of_one_commit_answer_at_that_commit(two_commits: Repo) -> None:
    first, second = two_commits.git("rev-list", "--reverse", "HEAD").split()
    expected = {"HEAD": second, "main": second, "v2": second, "HEAD~1": first, "HEAD^": first, second[:10]: second,
                first: first, "HEAD@{0}": second, "HEAD^{commit}": second, "v2^{}": second, "HEAD^{/first}": first}
    for rev, sha in expected.items():
        page = json.loads(two_commits.obsrepo("query", "--at", rev, "--format", "json").stdout)
        assert page["at_commit"] == sha, rev
        assert page["total"] == (1 if sha == first else 2), rev


def test_the_resolver_returns_one_full_sha_or_refuses(two_commits: Repo) -> None:
    git = Git(str(two_commits.path))
    head = two_commits.git("rev-parse", "HEAD").strip()
    assert git.resolve("HEAD", "at") == head and git.resolve("v2", "at") == head
    for rev in NOT_ONE_COMMIT:
        assert revision_syntax_problem(rev) is not None or rev in ("HEAD^{tree}",), rev
        with pytest.raises(UsageError) as raised:
            git.resolve(rev, "at")
        assert raised.value.details["parameter"] == "at"
    with pytest.raises(NotFoundError):
        git.resolve("no-such-branch", "at")
    # text inside a reflog selector or a message search is not read as a range or a path
    assert revision_syntax_problem("main@{2026-01-01 10:00:00}") is None
    assert revision_syntax_problem("HEAD^{/fix: a..b}") is None


def test_the_mcp_at_argument_is_refused_the_same_way(two_commits: Repo) -> None:
    async def main() -> None:
        async with stdio_session(two_commits) as session:
            for rev in ("^HEAD", "HEAD~1..HEAD", "HEAD:observations"):
                for tool, arguments in (("observation_query", {}), ("retrieve_entity_snapshot", {"entity_id": "company/acme"}),
                                        ("retrieve_entities", {})):
                    error = await failure(session, tool, at=rev, **arguments)
                    assert error["code"] == "VALIDATION_ERROR", (tool, rev, error)
                    assert repr(rev) in error["message"]

    anyio.run(main)


def test_check_base_given_empty_is_refused_not_skipped(two_commits: Repo) -> None:
    """An empty `--base "$BASE"` in CI used to check without immutability at all."""
    proc = two_commits.obsrepo("check", "--base", "", "--format", "json")
    assert proc.returncode == 2 and _error(proc)["details"]["parameter"] == "--base", proc

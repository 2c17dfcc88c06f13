"""Shared fixtures: real, hermetic git repositories in temporary folders.

    from helpers import observation

    def test_something(make_repo):
        repo = make_repo()                          # git init -b main, identity pinned
        doc = observation("obs-20260213-102500-0001")
        repo.write(doc.path, doc)                   # or repo.add(doc)
        base = repo.commit("base")                  # git add -A + commit → full sha
        proc = repo.obsrepo("check", "--base", "main")   # python -m obsrepo …, cwd = the repo
        result = repo.check("--base", "main")       # the same with --format json, parsed
        assert result.returncode == 0, result       # result.data, result.issues [(code, rule, path)]

Every git and obsrepo process gets the same environment: author and committer pinned, HOME
and XDG_CONFIG_HOME in a temporary folder, no system config, and GIT_CEILING_DIRECTORIES so
that a folder that is not a repository is never taken for part of an enclosing one. The test
process itself holds no `OBSREPO_*` variable of the caller's shell either (an `OBSREPO_INDEX`
would make in-process readers open a shared index outside the temporary folders): they are
cleared for the whole session, so module fixtures see none, and again around every test, so
one test's leftover cannot reach the next.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import Repo, git_env
from hypothesis import settings

# The same examples on every run, so a landing never depends on luck; a property's search for
# new counterexamples is `HYPOTHESIS_PROFILE=explore pytest` (found cases become explicit tests).
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "repeatable")


def _clear_obsrepo_environment(mp: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("OBSREPO_")]:
        mp.delenv(key)


@pytest.fixture(scope="session", autouse=True)
def _no_obsrepo_environment_in_session() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        _clear_obsrepo_environment(mp)
        yield


@pytest.fixture(autouse=True)
def _no_obsrepo_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_obsrepo_environment(monkeypatch)


def repo_factory(folder: Path) -> Callable[..., Repo]:
    """factory(name="repo", init=True) → Repo at folder/name (`git init -b main` unless init=False)."""
    home = folder / "_home"
    home.mkdir()
    env = git_env(home, folder)

    def factory(name: str = "repo", *, init: bool = True) -> Repo:
        path = folder / name
        path.mkdir()
        repo = Repo(path, env, factory)
        if init:
            repo.git("init", "-q", "-b", "main")
        return repo

    return factory


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Repo]:
    """A factory: make_repo(name="repo", init=True) → Repo at tmp_path/name (`git init -b main` unless init=False)."""
    return repo_factory(tmp_path)


@pytest.fixture(scope="module")
def make_module_repo(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Repo]:
    """make_repo for repositories shared by the tests of one module (a server kept open for all of them)."""
    return repo_factory(tmp_path_factory.mktemp("module"))


@pytest.fixture
def repo(make_repo: Callable[..., Repo]) -> Repo:
    """An empty repository on branch main."""
    return make_repo()

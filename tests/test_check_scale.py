"""`check` at scale (docs/design.md §2.7): a pull request's check reads what the change touches
and judges it against the compact facts of the rest, kept by blob id between runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import Repo, git_env, obs_id, observation

ROOT = Path(__file__).resolve().parents[1]
GENERATE = ROOT / "bench" / "generate.py"
COUNT = 4000


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Repo]:
    """Clones of one generated repository of `COUNT` observations over 4 commits."""
    base = tmp_path_factory.mktemp("scale")
    home = base / "_home"
    home.mkdir()
    env = git_env(home, base)
    subprocess.run([sys.executable, str(GENERATE), str(base / "origin"), "--count", str(COUNT), "--commits", "4"],
                   env=env, check=True, capture_output=True)

    def clone(name: str) -> Repo:
        subprocess.run(["git", "clone", "-q", str(base / "origin"), str(base / name)], env=env, check=True)
        return Repo(base / name, env, None)  # type: ignore[arg-type]

    return clone


def first_document(repo: Repo, rev: str = "HEAD") -> str:
    return repo.git("ls-tree", "-r", "--name-only", rev, "observations").splitlines()[0]


def copy_of(repo: Repo, path: str, new_id: str, **replace: str) -> str:
    """The document at `path` under another id (its content hash unchanged unless `replace`d)."""
    text = repo.read(path)
    old_id = Path(path).stem
    text = text.replace(f"id: {old_id}", f"id: {new_id}")
    for old, new in replace.items():
        text = text.replace(old, new)
    target = str(Path(path).with_name(f"{new_id}.md"))
    repo.write(target, text)
    return target


def test_a_pull_request_check_reads_what_it_changes_and_judges_it_against_the_facts_of_the_rest(generated) -> None:
    repo = generated("pr")
    cold = repo.check("--base", "HEAD~1")
    assert cold.returncode == 0 and cold.data["read"] == COUNT, cold  # nothing known yet: every document read
    assert cold.data["checked"] == COUNT

    repo.git("checkout", "-q", "-b", "topic")
    source = first_document(repo)
    copy_of(repo, source, "obs-20260101-000000-aaaaaaaa", **{"Parsed from": "Read from"})  # new content
    repo.commit("one new observation")
    warm = repo.check("--base", "main")
    assert warm.returncode == 0 and warm.data["read"] == 1, warm  # the change, not the repository
    assert warm.data["checked"] == COUNT + 1

    # the rest is judged by its facts: the same content again, an id taken, a relation to nothing
    copy_of(repo, source, "obs-20260101-000000-bbbbbbbb")
    taken = Path(source).stem
    repo.write(f"observations/2025/12/31/{taken}.md", repo.read(source).replace("Parsed from", "Seen in"))
    copy_of(repo, source, "obs-20260101-000000-dddddddd",
            **{"Parsed from": "Linked from", "tenant:": "relations: [{type: PART_OF, target: company/nowhere}]\ntenant:"})
    found = repo.check("--base", "main")
    assert found.data["read"] == 4, found  # the committed one and three in the work tree
    assert found.issues == [
        ("DUPLICATE_CONTENT", "duplicate-content", "observations/2026/01/01/obs-20260101-000000-bbbbbbbb.md"),
        ("DUPLICATE_ID", "duplicate-id", f"observations/2025/12/31/{taken}.md"),
        ("ENTITY_NOT_FOUND", "relation-target", "observations/2026/01/01/obs-20260101-000000-dddddddd.md")], found


def test_a_damaged_facts_store_is_ignored_and_built_again(repo: Repo) -> None:
    repo.add(observation(obs_id(1), entity="company/acme"), observation(obs_id(2), entity="company/acme"))
    repo.commit("two")
    repo.add(observation(obs_id(3), entity="company/acme-unit", relations=[{"type": "PART_OF", "target": "company/acme"}]))
    repo.commit("one more")
    assert repo.check("--base", "HEAD~1").data["read"] == 3
    store = repo.path / ".git" / "obsrepo" / "facts.marshal"
    data = store.read_bytes()
    for damaged in (data[: len(data) // 2], b"", data[:40] + b"\xff" * (len(data) - 40)):
        store.write_bytes(damaged)
        again = repo.check("--base", "HEAD~1")
        assert again.returncode == 0 and again.data["read"] == 3 and again.issues == [], again
        assert repo.check("--base", "HEAD~1").data["read"] == 1  # whole again: only HEAD~1..HEAD is read

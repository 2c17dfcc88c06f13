"""`check` at scale (docs/design.md §2.7): a pull request's check reads what the change touches
and judges it against the compact facts of the rest, kept by blob id between runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, git_env, obs_id, observation

ROOT = Path(__file__).resolve().parents[1]
GENERATE = ROOT / "bench" / "generate.py"
DEBUG = {"OBSREPO_DEBUG": "1"}  # check then says on stderr how many documents it read


def read(result: Any) -> int:
    """How many documents a check read and analysed (the others came from the facts cache),
    from its stderr; the report itself never says (its bytes depend on the repository only)."""
    stderr = result["stderr"] if isinstance(result, dict) else result.proc.stderr
    found = re.search(r"^obsrepo check: read (\d+) of \d+ documents$", stderr, re.M)
    assert found, stderr
    return int(found.group(1))
COUNT = 4000
LARGER = 12000
# measures peak RSS of one whole `obsrepo check` (getrusage of the child, its workers included)
PEAK = ("import json, resource, subprocess, sys\n"
        "proc = subprocess.run([sys.executable, '-m', 'obsrepo', 'check', '--format', 'json', *sys.argv[1:]], "
        "capture_output=True, text=True)\n"
        "print(json.dumps({'peak_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 'stderr': proc.stderr, "
        "'code': proc.returncode, 'report': json.loads(proc.stdout)}))\n")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int], Repo]:
    """clone(name, count): a clone of a generated repository of `count` observations over 40
    commits (`bench/generate.py`, one `git fast-import`), generated once per count."""
    base = tmp_path_factory.mktemp("scale")
    home = base / "_home"
    home.mkdir()
    # one malloc arena: peaks that say what a check holds, not where its threads allocated
    env = git_env(home, base) | DEBUG | {"MALLOC_ARENA_MAX": "1"}

    def clone(name: str, count: int = COUNT) -> Repo:
        origin = base / f"origin-{count}"
        if not origin.exists():
            subprocess.run([sys.executable, str(GENERATE), str(origin), "--count", str(count), "--commits", "40"],
                           env=env, check=True, capture_output=True)
        subprocess.run(["git", "clone", "-q", str(origin), str(base / name)], env=env, check=True)
        return Repo(base / name, env, None)  # type: ignore[arg-type]

    return clone


@pytest.fixture(scope="module")
def first_checks(generated) -> dict[int, tuple[Repo, dict[str, Any]]]:
    """A first `check --base HEAD~1` (no facts known yet) on clones of two sizes, with its peak RSS."""
    checks = {}
    for count in (COUNT, LARGER):
        repo = generated(f"first-{count}", count)
        proc = repo.run(sys.executable, "-c", PEAK, "--base", "HEAD~1")
        checks[count] = (repo, json.loads(proc.stdout))
    return checks


@pytest.fixture(scope="module")
def whole_checks(first_checks) -> dict[int, dict[str, Any]]:
    """`check` of everything (the analysis cache empty: every document read, and written to it) on
    the same two clones, with its peak RSS; run before the tests that change the clones."""
    checks = {}
    for count, (repo, _first) in first_checks.items():
        proc = repo.run(sys.executable, "-c", PEAK)
        checks[count] = json.loads(proc.stdout)
    return checks


def first_document(repo: Repo) -> str:
    """The first committed observation about an entity, with a tenant."""
    for path in repo.git("ls-tree", "-r", "--name-only", "HEAD", "observations").splitlines():
        text = repo.read(path)
        if "\nentity: " in text and "\ntenant: " in text:
            return path
    raise AssertionError("no observation about an entity")


def copy_of(repo: Repo, path: str, new_id: str, body: str = "", **replace: str) -> str:
    """The document at `path` under another id (its content hash unchanged unless `body` is
    added or text `replace`d)."""
    text = repo.read(path).replace(f"id: {Path(path).stem}", f"id: {new_id}") + body
    for old, new in replace.items():
        text = text.replace(old, new)
    target = str(Path(path).with_name(f"{new_id}.md"))
    repo.write(target, text)
    return target


def test_a_pull_request_check_reads_what_it_changes_and_judges_it_against_the_facts_of_the_rest(
        first_checks, whole_checks) -> None:
    repo, cold = first_checks[COUNT]
    assert cold["code"] == 0 and read(cold) == COUNT and "read" not in cold["report"], cold  # nothing known yet: every document read
    assert cold["report"]["checked"] == COUNT

    repo.git("checkout", "-q", "-b", "topic")
    source = first_document(repo)
    folder = Path(source).parent
    copy_of(repo, source, "obs-20260101-000000-aaaaaaaa", "\nRead again.\n")  # new content
    repo.commit("one new observation")
    warm = repo.check("--base", "main")
    assert warm.returncode == 0 and read(warm) == 1, warm  # the change, not the repository
    assert warm.data["checked"] == COUNT + 1

    # the rest is judged by its facts: the same content again, an id taken, a relation to nothing
    copy_of(repo, source, "obs-20260101-000000-bbbbbbbb")
    taken = Path(source).stem
    repo.write(f"observations/2025/12/31/{taken}.md", repo.read(source) + "\nSeen again.\n")
    copy_of(repo, source, "obs-20260101-000000-dddddddd", "\nLinked.\n",
            **{"\ntenant:": "\nrelations: [{type: PART_OF, target: company/nowhere}]\ntenant:"})
    found = repo.check("--base", "main")
    assert read(found) == 4, found  # the committed one and three in the work tree
    assert found.issues == [
        ("DUPLICATE_CONTENT", "duplicate-content", f"{folder}/obs-20260101-000000-bbbbbbbb.md"),
        ("DUPLICATE_ID", "duplicate-id", f"observations/2025/12/31/{taken}.md"),
        ("ENTITY_NOT_FOUND", "relation-target", f"{folder}/obs-20260101-000000-dddddddd.md")], found


def test_the_memory_of_a_check_grows_by_compact_facts_per_document_not_by_documents(first_checks) -> None:
    """Every document read and judged, its facts kept: what it costs per document beyond a
    fixed base is its compact facts and its line of the listing (1.5-2.5 kB of RSS with the
    allocator's share, more on a busy machine), far below the parsed documents, facts dicts and
    issues a check held before (~7 kB each, measured on the same two repositories)."""
    small, large = first_checks[COUNT][1], first_checks[LARGER][1]
    assert read(small) == COUNT and read(large) == LARGER
    per_document = (large["peak_kb"] - small["peak_kb"]) * 1024 / (LARGER - COUNT)
    assert per_document < 4000, (per_document, small["peak_kb"], large["peak_kb"])


def test_a_check_of_everything_holds_compact_facts_not_documents(whole_checks) -> None:
    """`check` streams the tree: each document's own problems are found as it is read and only
    its compact facts stay (and whole facts of those that name others, a quarter of these
    repositories). Holding every analysis, as it did before, cost ~5 kB a document on these
    two repositories (measured the same way); what is left is ~1.5 kB with the allocator's share."""
    small, large = whole_checks[COUNT], whole_checks[LARGER]
    assert small["code"] == large["code"] == 0, (small, large)
    assert read(small) == COUNT and read(large) == LARGER
    assert small["report"]["checked"] == COUNT and large["report"]["checked"] == LARGER
    per_document = (large["peak_kb"] - small["peak_kb"]) * 1024 / (LARGER - COUNT)
    assert per_document < 3000, (per_document, small["peak_kb"], large["peak_kb"])


def test_a_damaged_facts_store_is_ignored_and_built_again(repo: Repo) -> None:
    repo.add(observation(obs_id(1), entity="company/acme"), observation(obs_id(2), entity="company/acme"))
    repo.commit("two")
    repo.add(observation(obs_id(3), entity="company/acme-unit", relations=[{"type": "PART_OF", "target": "company/acme"}]))
    repo.commit("one more")
    repo.env.update(DEBUG)
    assert read(repo.check("--base", "HEAD~1")) == 3
    folder = repo.path / ".git" / "obsrepo"
    store = folder / "facts.marshal"
    (lookup,) = folder.glob("lookup-*.sqlite")  # the base tree's lookups, built from the facts
    data = store.read_bytes()
    for damaged in (data[: len(data) // 2], data[:40] + b"\xff" * (len(data) - 40)):
        store.write_bytes(damaged)
        lookup.unlink()
        again = repo.check("--base", "HEAD~1")
        assert again.returncode == 0 and read(again) == 3 and again.issues == [], again
        assert read(repo.check("--base", "HEAD~1")) == 1  # whole again: only HEAD~1..HEAD is read
    # a damaged lookup store is built again from the facts (nothing read), and still answers:
    # the change's duplicate of a document of the base is found through it
    repo.add(observation(obs_id(1), folder="observations/2026/elsewhere", entity="company/acme", event="again"))
    whole = lookup.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:100] + b"\xff" * (len(whole) - 100), b""):
        lookup.write_bytes(damaged)
        again = repo.check("--base", "HEAD~1")
        assert read(again) == 2 and [rule for _code, rule, _path in again.issues] == ["duplicate-id"], again
    # where the stores cannot be written (a file stands in their folder's place), the check
    # builds its lookups in memory and judges the same
    shutil.rmtree(folder)
    folder.write_bytes(b"")
    again = repo.check("--base", "HEAD~1")
    assert read(again) == 4 and [rule for _code, rule, _path in again.issues] == ["duplicate-id"], again

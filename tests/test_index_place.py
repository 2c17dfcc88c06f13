"""An index path is obsrepo's, or it is refused (docs/design.md §8b): `--index`/`OBSREPO_INDEX`
naming a text file, someone's own DuckDB database, a document of the work tree, a path git
tracks or a folder is INDEX_ERROR (exit 4) naming the path; nothing there is replaced or
truncated, and no side file (`.lock`, `.seal`, `.status.json`) appears beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from helpers import Repo, observation

DRAFT = observation("obs-20260213-102500-0009", entity="company/acme", fields={"name": "Draft"})
COMMANDS = [["query"], ["index"], ["snapshot", "company/acme"], ["sql", "SELECT 1"]]
SIDE_FILES = (".lock", ".seal", ".status.json", ".watch", ".overlay")


@pytest.fixture(scope="module")
def shared(make_module_repo) -> Repo:
    repo = make_module_repo("places")
    first = observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"})
    repo.add(first)
    repo.commit("one")
    repo.tracked = first.path  # type: ignore[attr-defined]
    return repo


def _places(repo: Repo, base: Path) -> dict[str, Path]:
    """What is there, by name: none of it obsrepo's."""
    base.mkdir(exist_ok=True)
    text = base / "notes.txt"
    text.write_text("my notes\n")
    own = base / "mine.duckdb"
    if not own.exists():
        con = duckdb.connect(str(own))
        con.execute("CREATE TABLE mine AS SELECT 42 AS answer")
        con.close()
    draft = repo.write(DRAFT.path, DRAFT)  # an uncommitted observation
    folder = base / "a-folder"
    folder.mkdir(exist_ok=True)
    return {"a text file": text, "someone's own DuckDB database": own, "an uncommitted draft": draft,
            "a path git tracks": repo.path / repo.tracked,  # type: ignore[attr-defined]
            "a folder": folder}


def _fingerprint(path: Path) -> object:
    return sorted(p.name for p in path.iterdir()) if path.is_dir() else path.read_bytes()


def _refused(proc, place: Path) -> None:
    assert proc.returncode == 4, proc
    error = json.loads(proc.stdout or proc.stderr)["error"]
    assert error["code"] == "INDEX_ERROR", error
    assert str(place) in error["message"], error


@pytest.mark.parametrize("by", ["option", "environment"])
def test_a_path_obsrepo_did_not_write_is_refused_and_left_alone(shared: Repo, tmp_path: Path, by: str) -> None:
    places = _places(shared, tmp_path / "places")
    before = {what: _fingerprint(place) for what, place in places.items()}
    neighbours = {what: sorted(os.listdir(place.parent)) for what, place in places.items()}
    for what, place in places.items():
        for command in COMMANDS:
            if by == "option":
                proc = shared.obsrepo(*command, "--index", str(place), "--format", "json")
            else:
                env = dict(shared.env, OBSREPO_INDEX=str(place))
                proc = Repo(shared.path, env, None).obsrepo(*command, "--format", "json")  # type: ignore[arg-type]
            _refused(proc, place)
            assert _fingerprint(place) == before[what], (what, command)
            assert sorted(os.listdir(place.parent)) == neighbours[what], (what, command, "no side files")
    con = duckdb.connect(str(places["someone's own DuckDB database"]), read_only=True)
    assert con.execute("SELECT answer FROM mine").fetchall() == [(42,)]
    con.close()
    status = shared.git("status", "--porcelain", "--untracked-files=all")
    assert status == f"?? {DRAFT.path}", "the tracked observation is untouched, the draft is the only change"
    assert not (shared.path / ".obsrepo").exists(), "nothing was made in the default place either"
    os.remove(places["an uncommitted draft"])


def test_a_tracked_path_deleted_from_the_work_tree_is_refused(shared: Repo, tmp_path: Path) -> None:
    tracked = shared.path / shared.tracked  # type: ignore[attr-defined]
    kept = tracked.read_bytes()
    tracked.unlink()
    try:
        proc = shared.obsrepo("query", "--index", str(tracked), "--format", "json")
        _refused(proc, tracked)
        assert not tracked.exists() and not [p for p in tracked.parent.iterdir() if p.name.startswith(tracked.name)]
    finally:
        tracked.write_bytes(kept)
    assert shared.git("status", "--porcelain") == ""


def test_a_missing_path_is_created_and_an_index_obsrepo_wrote_is_rebuilt(shared: Repo, tmp_path: Path) -> None:
    index = tmp_path / "new" / "index.duckdb"
    proc = shared.obsrepo("index", "--index", str(index), "--format", "json")
    assert proc.returncode == 0, proc
    assert all(os.path.exists(str(index) + side) for side in (".lock", ".seal", ".status.json"))
    # damaged beyond recognition in place: its seal still names it obsrepo's, so it is rebuilt
    with open(index, "r+b") as handle:
        handle.truncate(0)
        handle.write(b"this is not a DuckDB file\n" * 100)
    proc = shared.obsrepo("query", "--index", str(index), "--format", "json")
    assert proc.returncode == 0, proc
    assert index.read_bytes()[8:12] == b"DUCK"
    # an index of ours whose seal was lost (an older obsrepo, a copy): its metadata says so
    os.remove(str(index) + ".seal")
    os.utime(index, ns=(0, 0))
    proc = shared.obsrepo("index", "--index", str(index), "--format", "json")
    assert proc.returncode == 0, proc
    assert os.path.exists(str(index) + ".seal")


def test_the_default_index_damaged_without_its_seal_is_rebuilt(shared: Repo) -> None:
    index = shared.path / ".obsrepo" / "index.duckdb"
    try:
        assert shared.obsrepo("index", "-q").returncode == 0
        os.remove(str(index) + ".seal")
        index.write_bytes(b"\0" * 8192)
        proc = shared.obsrepo("query", "--format", "json")
        assert proc.returncode == 0, proc
        assert index.read_bytes()[8:12] == b"DUCK"
    finally:
        import shutil

        shutil.rmtree(shared.path / ".obsrepo")

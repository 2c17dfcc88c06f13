"""`obsrepo index` (docs/design.md §5, §7, §8): a DuckDB file built from git objects at a commit.

What is checked, always in real git repositories and real DuckDB files:
- an index updated incrementally is the same database as a full rebuild at the same commit
  (linear history, merges, a branch moved backwards, a force-push, an older --rev then
  forward, and random histories), compared through a canonical dump of every table;
- git objects are the only input (the work tree is never read), `meta` records the commit;
- invalid documents in history are reported and skipped, never crash, never drop valid ones
  (`--strict`: exit 1 and the previous index stays published);
- a truncated, overwritten, version-mismatched or damaged index is detected and rebuilt;
- `kill -9` of a real indexer at several moments leaves the previous index answering, and
  readers in other processes keep answering while an update runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from helpers import Repo, comprehension, git_env, hermetic, obs_id, observation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proc_tree import wait_for_workers

ROOT = Path(__file__).resolve().parents[1]
GENERATE = ROOT / "bench" / "generate.py"
PUBLIC = ("observations", "observation_scopes", "observation_fields", "relations", "comprehensions",
          "comprehension_observations", "meta")


# --- helpers ---------------------------------------------------------------------------------

@pytest.fixture
def api(repo: Repo) -> Iterator[Repo]:
    with hermetic(repo.env):
        yield repo


def repository(repo: Repo, index: Path | str | None = None, **kwargs: Any) -> Any:
    from obsrepo.api import Repository

    return Repository(str(repo.path), index=str(index) if index else None, **kwargs)


@contextlib.contextmanager
def reading(path: Path | str) -> Iterator[Any]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        yield con
    finally:
        con.close()


def meta(path: Path | str) -> dict[str, str]:
    with reading(path) as con:
        return dict(con.execute("SELECT key, value FROM meta").fetchall())


def dump(path: Path | str) -> dict[str, Any]:
    """Everything the index holds, independent of row ids (which differ between builds)."""
    with reading(path) as con:
        def rows(sql: str) -> list[tuple]:
            return con.execute(sql).fetchall()

        out: dict[str, Any] = {
            "commits": rows("SELECT * FROM commits ORDER BY seq"),
            "obs_versions": rows("SELECT * EXCLUDE (row_id) FROM obs_versions ORDER BY path, added_seq"),
            "comp_versions": rows("SELECT * EXCLUDE (row_id) FROM comp_versions ORDER BY path, added_seq"),
            "problems": rows("SELECT * FROM problems ORDER BY ALL"),
            "obs_terms": rows("SELECT v.path, v.added_seq, t.* EXCLUDE (row_id) FROM obs_terms t "
                              "JOIN obs_versions v USING (row_id) ORDER BY ALL"),
            # a key's range is its version's, whatever updates closed or reopened
            "keys_out_of_step": rows("SELECT count(*) FROM obs_keys k JOIN obs_versions v USING (row_id) "
                                     "WHERE k.added_seq <> v.added_seq OR k.removed_seq <> v.removed_seq"),
            "orphan_terms": rows("SELECT count(*) FROM obs_terms WHERE row_id NOT IN (SELECT row_id FROM obs_versions)"),
            "duplicate_row_ids": rows("SELECT count(*) - count(DISTINCT row_id) FROM "
                                      "(SELECT row_id FROM obs_versions UNION ALL SELECT row_id FROM comp_versions)"),
        }
        tables = {r[0] for r in rows("SELECT table_name FROM duckdb_tables()")}
        for name in sorted(tables - {"commits", "obs_versions", "comp_versions", "problems", "obs_terms", "meta"}):
            columns = [r[0] for r in rows(f"SELECT column_name FROM duckdb_columns() WHERE table_name = '{name}'")]
            if "row_id" in columns:  # any other per-observation side table, keyed like obs_terms
                out[name] = rows(f"SELECT v.path, v.added_seq, t.* EXCLUDE (row_id) FROM {name} t "
                                 "JOIN obs_versions v USING (row_id) ORDER BY ALL")
            else:
                out[name] = rows(f"SELECT * FROM {name} ORDER BY ALL")
        for view in PUBLIC:
            out["view " + view] = rows(f"SELECT * FROM {view} ORDER BY ALL")
        return out


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key], f"{key} differs between the incremental index and the full rebuild"


def tree_ids(repo: Repo, rev: str = "HEAD") -> set[str]:
    """Ids of the observation files git holds at REV (file names; the helpers name files by id)."""
    names = repo.git("ls-tree", "-r", "--name-only", rev, "--", "observations").splitlines()
    return {Path(n).stem for n in names}


class Twin:
    """An index kept up to date incrementally; at each comparing step, checked against a fresh full rebuild."""

    def __init__(self, repo: Repo, folder: Path) -> None:
        self.repo = repo
        self.folder = folder
        self.path = folder / "incremental.duckdb"
        self.steps = 0

    def step(self, rev: str | None = None, *, incremental: bool | None = None,
             compare: bool = True) -> dict[str, Any] | None:
        result = repository(self.repo, self.path).index(rev)
        target = self.repo.sha(rev or "HEAD")
        assert result.commit == target
        if incremental is not None:
            assert result.full is not incremental, result
        if not compare:
            return None
        self.steps += 1
        fresh = self.folder / f"full-{self.steps}.duckdb"
        repository(self.repo, fresh).index(rev, full=True)
        mine, full = dump(self.path), dump(fresh)
        assert_same(mine, full)
        assert meta(self.path)["commit"] == target
        return mine


def ids_in(state: dict[str, Any]) -> set[str]:
    return {row[0] for row in state["view observations"]}


# --- incremental == full rebuild -------------------------------------------------------------

# scopes and types shared in turns: their keys come and go with the documents
A, B, C, D, E, F, G = (observation(obs_id(n), scope=[f"s/{n % 3}"], type=f"t.{n % 2}") for n in range(1, 8))
BAD = "---\nspec: observation/v1\nid: obs-20260213-102500-0099\nsource: [unclosed\n---\n"
BAD_PATH = "observations/2026/02/13/obs-20260213-102500-0099.md"


def test_incremental_equals_full_along_linear_history(api: Repo, tmp_path: Path) -> None:
    repo, twin = api, Twin(api, tmp_path)
    rich = observation(obs_id(10), scope=["task/1", "company/acme"], entity="company/acme", type="task.updated",
                       fields={"name": "Acme", "size": 3}, tenant={"org": "acme", "project": "web"},
                       relations=[{"type": "REFERS_TO", "target": "company/acme"}], data={"k": [1, 2, None]},
                       classification="confidential", body="kangaroo kangaroo\n\nSecond paragraph.")
    odd = observation(obs_id(11), folder="observations/odd folder/ünïcödé")
    comp1 = comprehension("comp-acme", [A.id])
    repo.add(A, B, comp1)
    repo.commit("c0: A, B and a comprehension")
    twin.step(incremental=False, compare=False)  # a first build is a full build

    repo.add(rich, odd)
    repo.write(BAD_PATH, BAD)
    repo.commit("c1: a rich document, an odd folder, an invalid document")
    state = twin.step(incremental=True)
    assert ids_in(state) == {A.id, B.id, rich.id, odd.id}
    assert [p[2] for p in state["problems"]] == [BAD_PATH]

    repo.add(comprehension("comp-acme", [A.id, B.id], version=2), C)
    repo.git("rm", "-q", B.path)  # history may hold what `check` forbids: the index follows it
    repo.commit("c2: comprehension v2, B deleted, C added")
    state = twin.step(incremental=True)
    assert ids_in(state) == {A.id, rich.id, odd.id, C.id}
    with reading(twin.path) as con:
        assert con.execute("SELECT id, version FROM comprehensions").fetchall() == [("comp-acme", 2)]

    repo.write("README.md", "not a document\n")
    repo.commit("c3: no document changes")
    twin.step(incremental=True, compare=False)

    repo.write(BAD_PATH, observation("obs-20260213-102500-0099"))  # the invalid document repaired
    repo.write(A.path, A.replace("observed", "re-observed"))  # modified in place
    repo.write(rich.path, rich.replace("Second paragraph", "An edited paragraph"))  # its scopes' and type's keys too
    repo.commit("c4: repaired and modified")
    state = twin.step(incremental=True)
    assert ids_in(state) == {A.id, rich.id, odd.id, C.id, "obs-20260213-102500-0099"}
    assert {r[0]: r[3] for r in state["view observations"]}[A.id] == f"re-observed {A.id}"

    repo.git("rm", "-q", "comprehension/comp-acme.md")
    os.chmod(repo.path / C.path, 0o755)
    repo.commit("c5: comprehension deleted, a mode change")
    state = twin.step(incremental=True)
    assert state["view comprehensions"] == []
    assert ids_in(state) == tree_ids(repo)


def test_incremental_equals_full_across_merges(api: Repo, tmp_path: Path) -> None:
    repo, twin = api, Twin(api, tmp_path)
    repo.add(A)
    repo.commit("c0")
    twin.step(compare=False)
    repo.git("checkout", "-q", "-b", "side")
    repo.add(B)
    s1 = repo.commit("s1: B on the side branch")
    repo.add(C)
    repo.git("rm", "-q", A.path)
    s2 = repo.commit("s2: C, A deleted")
    repo.git("checkout", "-q", "main")
    repo.add(D)
    m1 = repo.commit("m1: D on main")
    twin.step(incremental=True, compare=False)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    state = twin.step(incremental=True)
    assert ids_in(state) == {B.id, C.id, D.id} == tree_ids(repo)
    with reading(twin.path) as con:
        commit_of = dict(con.execute('SELECT id, "commit" FROM observations').fetchall())
    assert (commit_of[B.id], commit_of[C.id], commit_of[D.id]) == (s1, s2, m1), \
        "the commit that added the file, on the side branch or not"
    repo.git("checkout", "-q", "side")
    repo.add(E)
    repo.commit("s3: E")
    repo.add(G)
    repo.commit("s4: G")
    twin.step("side")  # the index follows another branch …
    repo.git("checkout", "-q", "main")
    repo.add(F)
    repo.commit("m2: F")
    twin.step(compare=False)  # … and back
    repo.git("merge", "-q", "--no-ff", "-m", "merge side again", "side")
    assert ids_in(twin.step(incremental=True)) == {B.id, C.id, D.id, E.id, F.id, G.id}
    repo.git("checkout", "-q", "-b", "ff")
    repo.add(observation(obs_id(30)))
    repo.commit("ff")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "ff")
    twin.step(incremental=True)


def test_incremental_equals_full_after_the_branch_moves_backwards(api: Repo, tmp_path: Path) -> None:
    repo, twin = api, Twin(api, tmp_path)
    for doc in (A, B, C, D):
        repo.add(doc)
        repo.commit(f"add {doc.id}")
        twin.step(compare=False)
    repo.git("reset", "-q", "--hard", "HEAD~2")
    state = twin.step()
    assert ids_in(state) == {A.id, B.id}
    repo.add(E)
    repo.commit("E instead of C and D")
    assert ids_in(twin.step(incremental=True)) == {A.id, B.id, E.id}


def test_incremental_equals_full_after_a_force_push(api: Repo, tmp_path: Path) -> None:
    repo, twin = api, Twin(api, tmp_path)
    repo.add(A)
    repo.commit("c0")
    repo.add(B)
    c1 = repo.commit("c1")
    repo.add(C)
    c2 = repo.commit("c2")
    repo.add(D)
    c3 = repo.commit("c3")
    twin.step(compare=False)
    # rewrite c1 with other content and replay c2, c3 on top (what a force-push publishes)
    repo.git("reset", "-q", "--hard", c1)
    repo.git("rm", "-q", B.path)
    repo.add(E, comprehension("comp-rewritten", [A.id]))
    repo.git("add", "-A")
    repo.git("commit", "-q", "--amend", "-m", "c1, rewritten")
    repo.git("cherry-pick", c2, c3)
    assert repo.sha() != c3
    state = twin.step()
    assert ids_in(state) == {A.id, C.id, D.id, E.id} == tree_ids(repo)
    # an unrelated history replaces the branch entirely
    repo.git("checkout", "-q", "--orphan", "fresh")
    repo.git("rm", "-q", "-r", "--cached", ".")
    for path in list((repo.path / "observations").rglob("*.md")) + list((repo.path / "comprehension").rglob("*.md")):
        path.unlink()
    repo.add(F)
    repo.commit("a new root")
    repo.git("branch", "-f", "main", "fresh")
    repo.git("checkout", "-q", "main")
    assert ids_in(twin.step()) == {F.id}


def test_incremental_equals_full_when_the_indexed_commit_was_garbage_collected(api: Repo, tmp_path: Path) -> None:
    repo, twin = api, Twin(api, tmp_path)
    repo.add(A)
    c0 = repo.commit("c0")
    repo.add(B)
    gone = repo.commit("c1, soon rewritten and collected")
    twin.step(compare=False)
    repo.git("reset", "-q", "--hard", c0)
    repo.add(C)
    repo.commit("c1, rewritten")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    assert repo.run("git", "cat-file", "-t", gone, check=False).returncode != 0
    assert ids_in(twin.step()) == {A.id, C.id} == tree_ids(repo)


def test_incremental_equals_full_from_an_older_rev_forward(api: Repo, tmp_path: Path) -> None:
    repo, twin = api, Twin(api, tmp_path)
    for doc in (A, B, C, D, E):
        repo.add(doc)
        repo.commit(f"add {doc.id}")
    twin.step("HEAD~3", compare=False)
    assert ids_in(twin.step("HEAD~1", incremental=True)) == {A.id, B.id, C.id, D.id}
    assert ids_in(twin.step(incremental=True)) == {A.id, B.id, C.id, D.id, E.id}


OPS = st.lists(st.sampled_from(["add", "add2", "delete", "modify", "invalid", "comp", "merge", "reset", "amend",
                                "empty", "index"]), min_size=4, max_size=8)


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS, seed=st.integers(0, 2**16))
def test_incremental_equals_full_for_random_histories(make_repo: Any, tmp_path_factory: Any, ops: list[str],
                                                      seed: int) -> None:
    """Random sequences of commits, merges, resets and amends, indexed at random moments."""
    folder = tmp_path_factory.mktemp("random")
    repo = make_repo(folder.name + "-repo")
    rng = random.Random(seed)
    counter = iter(range(100, 10_000))
    present: list[Any] = []
    comp_version = 0
    with hermetic(repo.env):
        twin = Twin(repo, folder)
        repo.add(A)
        repo.commit("root")
        present.append(A)
        for op in ops:
            if op in ("add", "add2"):
                docs = [observation(obs_id(next(counter)), scope=[f"s/{rng.randint(1, 3)}"],
                                    body=" ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(5)))
                        for _ in range(1 if op == "add" else 2)]
                repo.add(*docs)
                present.extend(docs)
                repo.commit(op)
            elif op == "delete" and len(present) > 1:
                doc = present.pop(rng.randrange(len(present)))
                repo.git("rm", "-q", doc.path)
                repo.commit("delete")
            elif op == "modify" and present:
                doc = rng.choice(present)
                repo.write(doc.path, doc.replace("observed", f"modified {next(counter)}"))
                repo.commit("modify")
            elif op == "invalid":
                repo.write(f"observations/bad/obs-bad-{next(counter)}.md", "---\nid: [\n---\n")
                repo.commit("invalid")
            elif op == "comp" and present:
                comp_version += 1
                repo.add(comprehension("comp-random", [d.id for d in present[:2]], version=comp_version))
                repo.commit("comprehension")
            elif op == "merge":
                repo.git("checkout", "-q", "-b", f"side{next(counter)}")
                for _ in range(rng.randint(1, 2)):
                    repo.add(observation(obs_id(next(counter))))
                    repo.commit("side")
                repo.git("checkout", "-q", "main")
                repo.add(observation(obs_id(next(counter))))
                repo.commit("main")
                repo.git("merge", "-q", "--no-ff", "-m", "merge", "-")
            elif op == "reset" and int(repo.git("rev-list", "--count", "--first-parent", "HEAD")) > 2:
                repo.git("reset", "-q", "--hard", "HEAD~1")
                present = [p for p in present if (repo.path / p.path).exists()]
            elif op == "amend":
                doc = observation(obs_id(next(counter)))
                repo.add(doc)
                repo.git("add", "-A")
                repo.git("commit", "-q", "--amend", "-m", "amended")
                present.append(doc)
            elif op == "empty":
                repo.commit("empty", allow_empty=True)
            if op == "index":
                twin.step()
            elif rng.random() < 0.3:
                twin.step(compare=False)
        state = twin.step()
        assert ids_in(state) == {i for i in tree_ids(repo) if not i.startswith("obs-bad")}


# --- git objects only; meta; where the file lives --------------------------------------------

def test_index_reads_git_objects_never_the_work_tree(api: Repo, tmp_path: Path) -> None:
    repo = api
    repo.add(A, B)
    head = repo.commit("A and B")
    repo.write(A.path, A.replace("observed", "EDITED IN THE WORK TREE"))  # modified, not committed
    (repo.path / B.path).unlink()  # deleted, not committed
    repo.add(C)  # untracked
    repo.add(D)
    repo.git("add", D.path)  # staged, not committed
    index = tmp_path / "index.duckdb"
    result = repository(repo, index).index()
    assert result.commit == head
    assert meta(index)["commit"] == head
    with reading(index) as con:
        rows = dict(con.execute("SELECT id, event FROM observations").fetchall())
    assert rows == {A.id: f"observed {A.id}", B.id: f"observed {B.id}"}


def test_index_at_a_rev_that_is_not_checked_out(api: Repo, tmp_path: Path) -> None:
    repo = api
    repo.add(A)
    repo.commit("A")
    repo.git("checkout", "-q", "-b", "other")
    repo.add(B)
    other = repo.commit("B on other")
    repo.git("checkout", "-q", "main")
    index = tmp_path / "i.duckdb"
    assert repository(repo, index).index("other").commit == other
    with reading(index) as con:
        assert sorted(r[0] for r in con.execute("SELECT id FROM observations").fetchall()) == [A.id, B.id]
        assert dict(con.execute("SELECT key, value FROM meta").fetchall())["commit"] == other


def test_cli_index_default_location_meta_and_json(repo: Repo) -> None:
    repo.add(A, B)
    head = repo.commit("A and B")
    proc = repo.obsrepo("index", "--format", "json", cwd=repo.path / "observations")  # from a subfolder
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["commit"] == head and report["full"] is True and report["problems"] == []
    index = repo.path / ".obsrepo" / "index.duckdb"
    found = meta(index)
    assert found["commit"] == head and found["format_version"]
    with reading(index) as con:
        names = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() UNION ALL "
                                           "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert set(PUBLIC) <= names
    repo.add(C)
    repo.git("add", C.path)  # not `add -A`: .obsrepo/ is no business of this repository's history
    repo.git("commit", "-q", "-m", "C")
    new_head = repo.sha()
    proc = repo.obsrepo("index", "--strict", "--format", "json")  # --strict without problems: exit 0
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["commit"] == new_head and report["full"] is False
    assert report["added"] == 1 and report["commits"] == 1
    assert meta(index)["commit"] == new_head


def test_the_default_index_location_is_git_ignored(api: Repo) -> None:
    api.add(A)
    api.commit("A")
    repository(api).index()
    assert (api.path / ".obsrepo" / "index.duckdb").exists()
    assert api.git("status", "--porcelain", "--untracked-files=all") == ""


def test_cli_index_location_from_option_and_environment(repo: Repo, tmp_path: Path) -> None:
    repo.add(A)
    head = repo.commit("A")
    by_env, by_option = tmp_path / "env" / "i.duckdb", tmp_path / "opt" / "i.duckdb"
    env_repo = Repo(repo.path, dict(repo.env, OBSREPO_INDEX=str(by_env)), None)  # type: ignore[arg-type]
    proc = env_repo.obsrepo("index", "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), "--quiet says nothing"
    assert env_repo.obsrepo("index", "-q", "--index", str(by_option)).returncode == 0  # the option wins
    assert meta(by_env)["commit"] == head and meta(by_option)["commit"] == head
    assert not (repo.path / ".obsrepo" / "index.duckdb").exists()


# --- invalid documents in history --------------------------------------------------------------

def _plant_invalid_history(repo: Repo) -> tuple[str, list[str], set[str]]:
    repo.add(A)
    good = repo.commit("valid")
    valid = [B, C, observation(obs_id(20), folder="observations/with space/ü")]
    repo.add(*valid)
    bad = {
        "observations/2026/02/13/obs-20260213-102500-0091.md": b"---\nspec: observation/v1\nid: [\n---\n",
        "observations/2026/02/13/obs-20260213-102500-0092.md": observation("obs-20260213-102500-0092", colour="red").encode(),
        "observations/2026/02/13/obs-20260213-102500-0093.md": b"\xef\xbb\xbf" + observation("obs-20260213-102500-0093").encode(),
        "observations/2026/02/13/obs-20260213-102500-0094.md": b"\xff\xfe\x00binary\x00",
        "observations/2026/02/13/obs-20260213-102500-0095.md": b"",
        "observations/2026/02/13/obs-20260213-102500-0096.md": observation("obs-20260213-102500-0097").encode(),
        "comprehension/comp-broken.md": b"---\nspec: comprehension/v1\nid: comp-broken\n---\n",
    }
    for path, data in bad.items():
        repo.write(path, data)
    os.symlink("../../../../README.md", repo.path / "observations/2026/02/13/obs-20260213-102500-0098.md")
    repo.commit("invalid documents among valid ones")
    blob = repo.git("rev-parse", f"{good}:{A.path}")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{good},observations/submodule")
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},observations/notes.txt")
    repo.git("commit", "-q", "--no-verify", "-m", "a gitlink and a non-markdown file")
    return good, [d.id for d in valid] + [A.id], set(bad)


def test_invalid_documents_are_reported_and_skipped_never_dropping_valid_ones(api: Repo, tmp_path: Path) -> None:
    _good, valid, bad = _plant_invalid_history(api)
    index = tmp_path / "i.duckdb"
    result = repository(api, index).index()
    reported = {p.path for p in result.problems}
    assert bad <= reported, reported
    with reading(index) as con:
        ids = sorted(r[0] for r in con.execute("SELECT id FROM observations").fetchall())
        paths = dict(con.execute("SELECT id, path FROM observations").fetchall())
    assert ids == sorted(valid)
    assert paths[obs_id(20)] == f"observations/with space/ü/{obs_id(20)}.md"


def test_the_parallel_path_equals_the_serial_one(api: Repo, tmp_path: Path, monkeypatch: Any) -> None:
    """Large additions are read by worker processes in chunks; with chunks of two documents and
    invalid documents and a comprehension among them, the index and the warnings are those of
    the serial path. So are those of the serial path loading many rows in Arrow batches (a
    build from the cache `check` filled), and of both when documents are loaded a few at a time
    (a build holds a slice of its documents, not all of them)."""
    from obsrepo.index import adding

    _plant_invalid_history(api)
    api.add(comprehension("comp-a", [A.id]))
    api.commit("a comprehension")
    serial = repository(api, tmp_path / "serial.duckdb").index()
    monkeypatch.setattr(adding, "PLAIN_LIMIT", 1)
    batch = repository(api, tmp_path / "batch.duckdb").index()
    assert [p.as_dict() for p in batch.problems] == [p.as_dict() for p in serial.problems]
    assert dump(tmp_path / "batch.duckdb") == dump(tmp_path / "serial.duckdb")
    monkeypatch.setattr(adding, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(adding, "CHUNK", 2)
    parallel = repository(api, tmp_path / "parallel.duckdb").index()
    assert [p.as_dict() for p in parallel.problems] == [p.as_dict() for p in serial.problems]
    assert parallel.added == serial.added > 0
    assert dump(tmp_path / "parallel.duckdb") == dump(tmp_path / "serial.duckdb")
    for built in ("batch", "parallel"):  # the printed records are stored in row-id order (a page fetch skips blocks)
        with reading(tmp_path / f"{built}.duckdb") as con:
            con.execute("SET threads = 1")
            stored = [r[0] for r in con.execute("SELECT row_id FROM obs_records").fetchall()]
        assert stored == sorted(stored) and len(stored) > 2, (built, stored)
    monkeypatch.setattr(adding, "FLUSH_ROWS", 3)
    sliced = repository(api, tmp_path / "sliced.duckdb").index()
    monkeypatch.setattr(adding, "PARALLEL_THRESHOLD", 10 ** 6)
    sliced_serial = repository(api, tmp_path / "sliced-serial.duckdb").index()
    for built, result in (("sliced", sliced), ("sliced-serial", sliced_serial)):
        assert [p.as_dict() for p in result.problems] == [p.as_dict() for p in serial.problems]
        assert dump(tmp_path / f"{built}.duckdb") == dump(tmp_path / "serial.duckdb"), built
        with reading(tmp_path / f"{built}.duckdb") as con:
            con.execute("SET threads = 1")
            stored = [r[0] for r in con.execute("SELECT row_id FROM obs_records").fetchall()]
            by_entity = [r[0] for r in con.execute("SELECT coalesce(entity, chr(65535)) FROM obs_versions").fetchall()]
            terms = [r[0] for r in con.execute("SELECT term FROM obs_terms").fetchall()]
        # stored in the orders reads rely on, across slices: records by row id, versions by entity, terms by term
        assert stored == sorted(stored) and by_entity == sorted(by_entity) and terms == sorted(terms), built
    with reading(tmp_path / "parallel.duckdb") as con:
        assert con.execute("SELECT count(*) FROM comprehensions").fetchone()[0] == 1
        row_ids = sorted(r[0] for r in con.execute("SELECT row_id FROM obs_versions UNION ALL SELECT row_id FROM comp_versions").fetchall())
    assert row_ids == list(range(len(row_ids)))


def test_cli_index_with_invalid_documents_warns_and_strict_keeps_the_previous_index(api: Repo) -> None:
    repo = api
    good, valid, bad = _plant_invalid_history(repo)
    index = repo.path / ".obsrepo" / "index.duckdb"
    repository(repo).index(good)
    before = dump(index)
    proc = repo.obsrepo("index", "--strict", "--format", "json")
    assert proc.returncode == 1, proc
    assert bad <= {p["path"] for p in json.loads(proc.stdout)["problems"]}
    assert dump(index) == before and meta(index)["commit"] == good  # still the previous index
    proc = repo.obsrepo("index")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    for path in bad:
        assert any(path in line for line in warned), (path, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert meta(index)["commit"] == repo.sha()
    with reading(index) as con:
        assert sorted(r[0] for r in con.execute("SELECT id FROM observations").fetchall()) == sorted(valid)


def test_unknown_rev_is_ref_not_found(repo: Repo) -> None:
    repo.add(A)
    repo.commit("A")
    proc = repo.obsrepo("index", "--rev", "no-such-branch", "--format", "json")
    assert proc.returncode == 3, proc
    assert json.loads(proc.stdout)["error"]["code"] == "REF_NOT_FOUND"
    proc = repo.obsrepo("index", "--rev", "no-such-branch")
    assert proc.returncode == 3 and "REF_NOT_FOUND" in proc.stderr and proc.stdout == ""


# --- a damaged index is detected and rebuilt, never trusted ------------------------------------
#
# Every index here is produced in place by obsrepo: a copied file is, rightly, not trusted.

@pytest.fixture(scope="module")
def medium(tmp_path_factory: Any) -> tuple[Repo, Path, Any]:
    """A generated repository of 150 observations, its good index, and what queries answer."""
    base = tmp_path_factory.mktemp("medium")
    home = base / "_home"
    home.mkdir()
    env = git_env(home, base)
    subprocess.run([sys.executable, str(GENERATE), str(base / "repo"), "--count", "150", "--commits", "5"],
                   env=env, check=True, capture_output=True)
    repo = Repo(base / "repo", env, None)  # type: ignore[arg-type]
    good = base / "good.duckdb"
    with hermetic(env):
        repository(repo, good).index()
        expected = answers(repository(repo, good))
    return repo, good, expected


def answers(repo: Any) -> Any:
    from obsrepo.read.query import QueryRequest

    return (repo.query(QueryRequest(limit=1000)), repo.query(QueryRequest(text="invoice paid", limit=1000)),
            repo.query(QueryRequest(type="task.updated", limit=1000)))  # read by key (obs_keys)


def _block_of(path: Path, table: str, column: str) -> int:
    """The file offset of a storage block holding `table.column` and nothing DuckDB needs to open."""
    with reading(path) as con:
        block_size = con.execute("PRAGMA database_size").fetchone()[2]
        wanted = {r[0] for r in con.execute(
            f"SELECT block_id FROM pragma_storage_info('{table}') WHERE column_name = ? AND block_id >= 0", [column]
        ).fetchall()}
        needed = {r[0] for name in ("meta", "commits")
                  for r in con.execute(f"SELECT block_id FROM pragma_storage_info('{name}')").fetchall()}
    block = min(wanted - needed)
    return 3 * 4096 + block * block_size  # after the file header and the two database headers


def _overwrite_block(table: str, column: str) -> Any:
    def damage(path: Path) -> None:
        offset = _block_of(path, table, column)
        with open(path, "r+b") as handle:
            handle.seek(offset + 512)
            handle.write(b"\xab" * 4096)
        with reading(path) as con, pytest.raises(duckdb.Error):  # the damage is real
            con.execute(f"SELECT sum(length({column}::VARCHAR)) FROM {table}").fetchall()
    return damage


def _truncate(fraction: float) -> Any:
    def damage(path: Path) -> None:
        os.truncate(path, int(os.path.getsize(path) * fraction))
    return damage


def _overwrite(offset: int, data: bytes) -> Any:
    def damage(path: Path) -> None:
        with open(path, "r+b") as handle:
            handle.seek(offset)
            handle.write(data)
    return damage


def _overwrite_middle(size: int) -> Any:
    def damage(path: Path) -> None:
        _overwrite(os.path.getsize(path) // 2, b"\xab" * size)(path)
    return damage


def _edit(*statements: str) -> Any:
    def damage(path: Path) -> None:
        con = duckdb.connect(str(path))
        try:
            for statement in statements:
                con.execute(statement)
            con.execute("CHECKPOINT")
        finally:
            con.close()  # DuckDB must close the file before anyone else opens it
    return damage


def _replace(data: bytes) -> Any:
    def damage(path: Path) -> None:
        with open(path, "r+b") as handle:  # same inode
            handle.truncate(0)
            handle.write(data)
    return damage


DAMAGES = {
    "truncated to half": _truncate(0.5),
    "header overwritten": _overwrite(0, b"\0" * 4096),
    "bytes in the middle overwritten": _overwrite_middle(8192),
    "not a database": _replace(b"this is not a DuckDB file\n" * 100),
    "wrong format_version": _edit("UPDATE meta SET value = '0' WHERE key = 'format_version'"),
    "a table dropped": _edit("DROP TABLE obs_terms"),
    "observation data block overwritten": _overwrite_block("obs_versions", "event"),
}


def damaged(repo: Repo, index: Path, damage: Any, *, keep_mtime: bool) -> None:
    """Build the index in place, then damage it; with keep_mtime the file keeps its modification
    time, as bit rot or a careless tool would leave it (only its content tells)."""
    repository(repo, index).index()
    before = os.stat(index)
    damage(index)
    if keep_mtime:
        os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("damage,keep_mtime", [
    *(pytest.param(damage, True, id=name) for name, damage in DAMAGES.items()),
    pytest.param(DAMAGES["wrong format_version"], False, id="wrong format_version, touched"),
])
def test_a_damaged_index_is_detected_and_rebuilt(medium: tuple[Repo, Path, Any], tmp_path: Path, damage: Any,
                                                  keep_mtime: bool) -> None:
    repo, good, expected = medium
    index = tmp_path / "index.duckdb"
    with hermetic(repo.env):
        damaged(repo, index, damage, keep_mtime=keep_mtime)
        assert answers(repository(repo, index)) == expected
    assert meta(index) == meta(good)
    assert dump(index) == dump(good)


@pytest.mark.parametrize("damage", [
    "observation data block overwritten",
    "wrong format_version",
])
def test_cli_index_repairs_a_damaged_index(medium: tuple[Repo, Path, Any], tmp_path: Path, damage: str) -> None:
    repo, good, _expected = medium
    index = tmp_path / "index.duckdb"
    with hermetic(repo.env):
        damaged(repo, index, DAMAGES[damage], keep_mtime=True)
    proc = repo.obsrepo("index", "--index", str(index), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["commit"] == repo.sha()
    assert dump(index) == dump(good)


def test_concurrent_writers_are_serialised(medium: tuple[Repo, Path, Any], tmp_path: Path) -> None:
    repo, good, _expected = medium
    index = tmp_path / "index.duckdb"
    procs = [subprocess.Popen([sys.executable, "-m", "obsrepo", "index", "-q", "--index", str(index), *extra],
                              cwd=repo.path, env=repo.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for extra in ([], ["--full"])]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert dump(index) == dump(good)


# --- kill -9 and concurrent readers, on a generated repository of 3000 observations ------------

class Big:
    """3000 observations over 15 commits (tags v0.1 … v0.3) and one index file that the tests
    bring, in place, to the commit each needs; every state is checked against the first dump
    recorded for that commit (so these moves are also incremental == full checks at scale)."""

    def __init__(self, repo: Repo, index: Path, seconds: float) -> None:
        self.repo, self.index, self.seconds = repo, index, seconds
        self.dumps: dict[str, dict[str, Any]] = {}

    def sha(self, rev: str) -> str:
        return self.repo.sha(rev)

    def at(self, rev: str) -> dict[str, Any]:
        with hermetic(self.repo.env):
            repository(self.repo, self.index).index(rev)
        return self.record(rev)

    def record(self, rev: str) -> dict[str, Any]:
        state = dump(self.index)
        assert meta(self.index)["commit"] == self.sha(rev)
        assert self.dumps.setdefault(rev, state) == state
        return state


@pytest.fixture(scope="module")
def big(tmp_path_factory: Any) -> Big:
    base = tmp_path_factory.mktemp("big")
    home = base / "_home"
    home.mkdir()
    env = git_env(home, base)
    subprocess.run([sys.executable, str(GENERATE), str(base / "repo"), "--count", "3000"],
                   env=env, check=True, capture_output=True)
    repo = Repo(base / "repo", env, None)  # type: ignore[arg-type]
    index = base / "index.duckdb"
    started = time.monotonic()
    proc = repo.obsrepo("index", "--index", str(index), "-q")
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    found = Big(repo, index, seconds)
    found.record("main")
    with reading(index) as con:
        assert con.execute("SELECT count(*) FROM observations").fetchone() == (3000,)
    return found


def _kill_at(repo: Repo, args: list[str], delay: float | None, watch: Path) -> int:
    """Start `obsrepo ARGS`, SIGKILL it after `delay` seconds (or as soon as its private copy
    appears when delay is None); its exit status (-9 when killed)."""
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", *args], cwd=repo.path, env=repo.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        if delay is None:
            deadline = time.monotonic() + 30
            while not list(watch.parent.glob(watch.name + ".tmp-*")) and proc.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.005)
        else:
            time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)  # the indexer only, as `kill -9 PID` would
        return proc.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # then any worker it left behind (we started the group)


def _kill_when_busy(repo: Repo, args: list[str]) -> int:
    """Start `obsrepo ARGS` and SIGKILL it once its worker pool is in the middle of the
    documents (an observed event, not a fraction of a measured time); its exit status."""
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", *args], cwd=repo.path, env=repo.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_workers(proc)
        os.kill(proc.pid, signal.SIGKILL)  # the indexer only, as `kill -9 PID` would
        return proc.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches /proc for the worker pool")
def test_kill_9_during_a_full_rebuild_leaves_the_previous_index_answering(big: Big) -> None:
    repo, index = big.repo, big.index
    big.at("main")
    args = ["index", "--full", "-q", "--index", str(index)]
    uncached = Repo(repo.path, dict(repo.env, OBSREPO_NO_CACHE="1"), None)  # type: ignore[arg-type]  # the workers parse
    with hermetic(repo.env):
        expected = answers(repository(repo, index))
        statuses = [_kill_at(repo, args, None, index), _kill_when_busy(uncached, args)]
        for status in statuses:
            assert status == -signal.SIGKILL, statuses
        assert meta(index)["commit"] == big.sha("main")
        assert answers(repository(repo, index)) == expected  # a pure read: the index is at HEAD
    big.at("main")  # a later update succeeds
    assert not list(index.parent.glob(index.name + ".tmp-*")), "private copies of killed writers are cleaned up"


def test_kill_9_during_an_update_leaves_the_previous_index_intact(big: Big) -> None:
    repo, index = big.repo, big.index
    old = big.at("v0.3")
    new = big.dumps.get("main") or big.at("main")
    untouched = 0
    for fraction in (None, 0.4):
        if dump(index) != old:
            big.at("v0.3")
        delay = None if fraction is None else fraction * big.seconds
        status = _kill_at(repo, ["index", "-q", "--index", str(index)], delay, index)
        state = dump(index)
        # the previous index, or (killed after publishing, or not killed) the complete new one
        assert state == old or state == new, status
        untouched += state == old and status == -signal.SIGKILL
    assert untouched >= 1, "no kill landed before the update was published"
    proc = repo.obsrepo("index", "-q", "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    big.record("main")


READER = textwrap.dedent("""
    import json, os, sys, time
    import duckdb
    mode, path, root, ready, stop = sys.argv[1:6]
    SQL = ("SELECT (SELECT value FROM meta WHERE key = 'commit'), (SELECT count(*) FROM observations), "
           "(SELECT count(*) FROM obs_terms), (SELECT sum(length(body)) FROM observations)")
    errors, seen, n = [], [], 0
    def note(value):
        if not seen or seen[-1] != value:
            seen.append(value)
    if mode == "held":
        con = duckdb.connect(path, read_only=True)
        note(con.execute(SQL).fetchone())
    elif mode == "api":
        from obsrepo.api import Repository
        from obsrepo.read.query import QueryRequest
        def ask():
            page = Repository(root, index=path).query(QueryRequest(limit=200, scopes=()))
            text = Repository(root, index=path).query(QueryRequest(text="invoice", limit=20))
            return json.dumps([page, text], sort_keys=True)
        note(ask())
    open(ready, "w").close()
    final = False
    while True:
        final = os.path.exists(stop)
        try:
            if mode == "held":
                note(con.execute(SQL).fetchone())
            elif mode == "reopen":
                con2 = duckdb.connect(path, read_only=True)
                try:
                    note(con2.execute(SQL).fetchone())
                finally:
                    con2.close()
            else:
                note(ask())
        except Exception as exc:
            errors.append(repr(exc))
        n += 1
        if final:
            break
        time.sleep(0.01)  # leave the writer some CPU
    print(json.dumps({"seen": seen, "errors": errors, "n": n}))
""")


def test_readers_keep_answering_while_an_update_runs(big: Big, tmp_path: Path) -> None:
    """A reader holding a connection, a reader reconnecting in a loop, and a `query` reader in
    other processes, while `obsrepo index` moves the index from v0.3 to HEAD."""
    old_sha, new_sha = big.sha("v0.3"), big.sha("main")
    clone = tmp_path / "clone"
    big.repo.run("git", "clone", "-q", "--no-checkout", "--shared", str(big.repo.path), str(clone))
    repo = Repo(clone, big.repo.env, None)  # type: ignore[arg-type]
    repo.git("update-ref", "refs/heads/main", old_sha)  # the clone's main starts at v0.3 …
    index = big.index
    big.at("v0.3")
    old_state = (old_sha, *_counts(index))
    stop = tmp_path / "stop"
    readers = {}
    for mode in ("held", "reopen", "api"):
        ready = tmp_path / f"ready-{mode}"
        readers[mode] = (subprocess.Popen(
            [sys.executable, "-c", READER, mode, str(index), str(clone), str(ready), str(stop)],
            cwd=clone, env=repo.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), ready)
    deadline = time.monotonic() + 60
    while not all(ready.exists() for _, ready in readers.values()):
        assert time.monotonic() < deadline and all(p.poll() is None for p, _ in readers.values())
        time.sleep(0.02)
    time.sleep(0.2)
    repo.git("update-ref", "refs/heads/main", new_sha)  # … and moves on: the index follows
    proc = repo.obsrepo("index", "-q", "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    time.sleep(0.2)
    stop.touch()
    results = {}
    for mode, (reader, _ready) in readers.items():
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0, err
        results[mode] = json.loads(out)
        assert results[mode]["errors"] == [], (mode, results[mode]["errors"][:3])
    big.record("main")
    new_state = (new_sha, *_counts(index))
    assert [tuple(s) for s in results["held"]["seen"]] == [old_state], "a held connection keeps its generation"
    reopened = [tuple(s) for s in results["reopen"]["seen"]]
    assert (reopened[0], reopened[-1]) == (old_state, new_state)
    assert set(reopened) <= {old_state, new_state}, "only complete generations, nothing half-written"
    seen = [json.loads(s) for s in results["api"]["seen"]]
    for k in (0, 1):  # the page, the text search: each is the old answer or the new one
        first, last = seen[0][k], seen[-1][k]
        assert (first["at_commit"], last["at_commit"]) == (old_sha, new_sha)
        for answer in seen:
            expected = first if answer[k]["at_commit"] == old_sha else last
            assert answer[k] == expected, _difference(answer[k], expected)


def _difference(got: Any, expected: Any, where: str = "") -> str:
    if type(got) is not type(expected) or not isinstance(got, (dict, list)):
        return f"{where}: {got!r} != {expected!r}"
    keys = range(max(len(got), len(expected))) if isinstance(got, list) else sorted(set(got) | set(expected))
    for key in keys:
        try:
            a, b = got[key], expected[key]
        except (IndexError, KeyError):
            return f"{where}[{key!r}] missing on one side"
        if a != b:
            return _difference(a, b, f"{where}[{key!r}]")
    return "equal"


def _counts(path: Path) -> tuple[int, int, int]:
    with reading(path) as con:
        return con.execute("SELECT (SELECT count(*) FROM observations), (SELECT count(*) FROM obs_terms), "
                           "(SELECT sum(length(body)) FROM observations)").fetchone()


def test_the_index_file_is_never_written_in_place(api: Repo, tmp_path: Path) -> None:
    """A new generation is a new file renamed over the old one: an open reader's file is untouched."""
    api.add(A)
    api.commit("A")
    index = tmp_path / "i.duckdb"
    repository(api, index).index()
    before = hashlib.sha256(index.read_bytes()).hexdigest()
    handle = open(index, "rb")  # what a reader holds
    try:
        api.add(B)
        api.commit("B")
        repository(api, index).index()
        assert hashlib.sha256(handle.read()).hexdigest() == before
        assert meta(index)["commit"] == api.sha()
    finally:
        handle.close()


def test_a_kept_open_index_follows_every_way_head_moves(make_repo) -> None:
    """The server's index resolves HEAD again only when a file git moves it with changed: a
    commit, packed refs, a branch switch, a detached HEAD and a hard reset are each seen."""
    from obsrepo.api import Repository
    from obsrepo.read.query import QueryRequest

    repo = make_repo()
    repo.add(observation(obs_id(1)))
    repo.commit("one")
    with hermetic(repo.env):
        library = Repository(str(repo.path))
        library.keep_open()
        try:
            def ids() -> set[str]:
                return {r["id"] for r in library.query(QueryRequest(limit=100))["observations"]}

            assert ids() == {obs_id(1)}
            repo.add(observation(obs_id(2)))
            repo.commit("two")
            assert ids() == {obs_id(1), obs_id(2)}
            repo.git("pack-refs", "--all")
            repo.add(observation(obs_id(3)))
            repo.commit("three, over packed refs")
            assert ids() == {obs_id(1), obs_id(2), obs_id(3)}
            repo.git("checkout", "-q", "-b", "side", "HEAD~2")
            assert ids() == {obs_id(1)}
            repo.git("checkout", "-q", "--detach", "main")
            assert ids() == {obs_id(1), obs_id(2), obs_id(3)}
            repo.git("checkout", "-q", "main")
            repo.git("reset", "-q", "--hard", "HEAD~1")
            assert ids() == {obs_id(1), obs_id(2)}
        finally:
            library.close()


def _names(folder: Path, pattern: str) -> list[str]:
    return sorted(p.name for p in folder.glob(pattern))


@pytest.fixture
def indexed_a(repo: Repo, tmp_path: Path) -> Iterator[tuple[Repo, Any, Path]]:
    """A repository with A committed and indexed at tmp_path/index.duckdb (git isolated)."""
    repo.add(A)
    repo.commit("A")
    index = tmp_path / "index.duckdb"
    with hermetic(repo.env):
        api = repository(repo, index)
        api.index()
        yield repo, api, index


def test_the_private_copy_started_early_is_used_or_removed(indexed_a: tuple[Repo, Any, Path]) -> None:
    """A writer starts copying the published file before it knows whether it will update it:
    the copy becomes the new generation, or is removed (nothing to do, a damaged file rebuilt
    from git, a full build); no private copy is ever left behind."""
    repo, api, index = indexed_a
    assert api.index().unchanged and _names(index.parent, "index.duckdb.tmp-*") == []
    repo.add(B)
    repo.commit("B")
    result = api.index()
    assert not result.unchanged and result.added == 1 and _names(index.parent, "index.duckdb.tmp-*") == []
    assert sorted(r[0] for r in duckdb.connect(str(index), read_only=True).execute("SELECT id FROM observations").fetchall()) \
        == sorted([A.id, B.id])
    _overwrite_block("obs_versions", "event")(index)
    repo.add(observation("obs-20260213-102500-0099"))
    repo.commit("C")
    assert api.index().added == 3 and _names(index.parent, "index.duckdb.tmp-*") == []  # rebuilt from git
    assert api.index(full=True).added == 3 and _names(index.parent, "index.duckdb.tmp-*") == []


def test_a_replaced_generation_is_freed_off_the_writers_path_and_never_left_behind(
        indexed_a: tuple[Repo, Any, Path]) -> None:
    """Publishing links the old generation to a second name, renames the new one over it and
    removes that name on a thread; a process that died before removing it leaves a name the
    next writer sweeps away. A reader holding the old generation keeps reading it."""
    from obsrepo.index.generations import wait_for_freeing

    repo, api, index = indexed_a
    reader = duckdb.connect(str(index), read_only=True)
    first = os.stat(index).st_ino
    repo.add(B)
    repo.commit("B")
    api.index()
    wait_for_freeing()
    assert os.stat(index).st_ino != first and _names(index.parent, "index.duckdb*.old-*") == []
    assert [r[0] for r in reader.execute("SELECT id FROM observations").fetchall()] == [A.id]  # still readable
    reader.close()
    os.link(index, index.parent / "index.duckdb.old-99999-0")  # as a killed writer would leave it
    repo.add(observation("obs-20260213-102500-0099"))
    repo.commit("C")
    api.index()
    wait_for_freeing()
    assert _names(index.parent, "index.duckdb*.old-*") == []


def test_records_read_raw_from_the_cache_index_as_parsed_ones_and_a_tampered_one_is_parsed_again(
        api: Repo, tmp_path: Path, monkeypatch: Any) -> None:
    """A build from the analysis cache reads each record as stored (moments as microseconds,
    not copied into datetimes) on both load paths, mixed with documents parsed in the same
    build; a record whose moments are not what the cache writes is parsed again."""
    from obsrepo.gate.cache import load_entries, rules_digest, store_entries
    from obsrepo.index import adding

    _plant_invalid_history(api)
    api.add(comprehension("comp-a", [A.id]))
    api.commit("a comprehension")
    with hermetic(api.env):
        fresh = repository(api, tmp_path / "fresh.duckdb").index()  # parses, and fills the cache
        assert fresh.parsed > 0
        monkeypatch.setattr(adding, "PLAIN_LIMIT", 1)  # the Arrow batch path for any number of rows
        cached = repository(api, tmp_path / "cached.duckdb").index()
        assert cached.parsed == 0 and cached.reused == fresh.parsed
        assert dump(tmp_path / "cached.duckdb") == dump(tmp_path / "fresh.duckdb")
        records = api.path / ".git" / "obsrepo" / "records.marshal"
        stored = load_entries(records, rules_digest())
        observation_key = next(k for k, v in stored.items() if "timestamp" in v)
        comprehension_key = next(k for k, v in stored.items() if "created" in v)
        stored[observation_key]["timestamp"] = ("2026-02-13",)
        stored[comprehension_key]["created"] = (10 ** 20,)  # past year 9999
        store_entries(records, rules_digest(), stored)
        again = repository(api, tmp_path / "again.duckdb").index()
        assert again.parsed == 2 and again.reused == fresh.parsed - 2
        assert dump(tmp_path / "again.duckdb") == dump(tmp_path / "fresh.duckdb")
        monkeypatch.setattr(adding, "PLAIN_LIMIT", 10_000)  # the plain-parameter path, from the cache too
        plain = repository(api, tmp_path / "plain.duckdb").index()
        assert plain.parsed == 0 and dump(tmp_path / "plain.duckdb") == dump(tmp_path / "fresh.duckdb")


def test_the_index_builds_with_numpy_and_without_pandas(make_repo) -> None:
    """With numpy installed pyarrow asks for pandas on every array; the index's "no pandas"
    shortcut once answered it with None, and every build was an INTERNAL_ERROR."""
    import importlib.util

    assert importlib.util.find_spec("numpy") is not None, "the test extra installs numpy"
    repo = make_repo()
    repo.add(observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"}))
    repo.commit("one")
    proc = repo.obsrepo("index", "--full", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    probe = ("import importlib.util\nfrom obsrepo.index.engine import without_pandas\nwithout_pandas()\nwithout_pandas()\n"
             "try:\n    import pandas\nexcept ModuleNotFoundError:\n    print('absent')\n"
             "importlib.util.find_spec('pandas')\n"  # answers, never raises
             "import pyarrow as pa\nprint(len(pa.array(range(3), pa.int32())))\n")
    if importlib.util.find_spec("pandas") is None:
        out = repo.run(sys.executable, "-c", probe).stdout.split()
        assert out == ["absent", "3"], out


def test_every_row_carries_its_entity_key_as_duckdb_spells_it(repo: Repo) -> None:
    """`entity_key` (what a statement naming entities compares first) is DuckDB's
    `md5_number_upper` of the entity on every row a build or an update stores, names beyond
    ASCII and a quote included, and NULL without an entity; a snapshot finds such an entity
    at the indexed commit, at a commit off the chain (an overlay's rows) and through the CLI."""
    names = ["company/café", "person/日本語", "task/o'brien", "doc/a\\b"]
    repo.add(*(observation(obs_id(n), entity=name, fields={"n": n}) for n, name in enumerate(names, 1)),
             observation(obs_id(9), fields={}))
    repo.commit("names beyond ASCII")
    api = repository(repo)
    api.index()
    repo.add(observation(obs_id(10), entity=names[0], fields={"n": 10}, priority=200))
    repo.commit("an update")
    api.index()
    index = repo.path / ".obsrepo" / "index.duckdb"
    with reading(index) as con:
        assert con.execute("SELECT count(*) FROM obs_versions WHERE entity IS NOT NULL").fetchone()[0] == 5
        assert con.execute("SELECT count(*) FROM obs_versions WHERE entity_key IS DISTINCT FROM "
                           "md5_number_upper(entity) OR (entity IS NULL) <> (entity_key IS NULL)").fetchone()[0] == 0
    for n, name in enumerate(names, 1):
        assert api.snapshot(name)["snapshot"]["n"] == (10 if n == 1 else n), name
    repo.git("checkout", "-q", "-b", "side")
    repo.add(observation(obs_id(11), entity=names[1], fields={"n": 11}, priority=300))
    side = repo.commit("off the chain")
    repo.git("checkout", "-q", "main")
    assert api.snapshot(names[1], at=side)["snapshot"]["n"] == 11  # the overlay's row, found by its key
    assert api.snapshot(names[1])["snapshot"]["n"] == 2
    proc = repo.obsrepo("snapshot", names[2], "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["snapshot"] == {"n": 3}, proc

"""`obsrepo watch` and `obsrepo status`: real watchdog events on real git repositories.

A watcher runs in a thread of the test process with short debounce settings; after each
change the test waits until the live index answers what a full build of the same commit
answers, plus the valid drafts (flagged `uncommitted`), and fails with the difference when
it never does.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import comprehension, observation

pytest.importorskip("watchdog")

from obsrepo import Repository  # noqa: E402
from obsrepo.ops import Session  # noqa: E402
from obsrepo.read.query import QueryRequest  # noqa: E402
from obsrepo.watch.loop import Watcher  # noqa: E402
from obsrepo.watch.plan import OVERFLOW, Debouncer, Event, WatchPlan, classify  # noqa: E402

ALL = QueryRequest(limit=1000, order="asc")


def _obs(n: int, **front):
    return observation(f"obs-20260213-102500-{n:04d}", **front)


class Live:
    """A watcher thread over `repo`, and what to compare it with."""

    def __init__(self, repo, tmp: Path, verbose: bool = False) -> None:
        self.repo = repo
        self.index = str(tmp / "live.duckdb")
        self.full = str(tmp / "full.duckdb")
        self.out = io.StringIO()
        self.watcher = Watcher(Session(str(repo.path), index=self.index), quiet=0.05, max_wait=0.5,
                               out=self.out, verbose=verbose)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)
        self.thread.start()
        self.wait(lambda: self.watcher.updates >= 1, "the first update")

    def stop(self) -> None:
        self.watcher.stop()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()

    @staticmethod
    def wait(condition, what: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what if isinstance(what, str) else what()}")

    def live(self, overlay: bool) -> list[dict]:
        return Repository(str(self.repo.path), index=self.index).query(ALL, overlay=overlay)["observations"]

    def rebuilt(self) -> list[dict]:
        api = Repository(str(self.repo.path), index=self.full)
        api.index(full=True)
        return api.query(ALL, overlay=False)["observations"]

    def tables(self, index: str) -> tuple:
        api = Repository(str(self.repo.path), index=index)
        return (api.sql("SELECT * FROM observations ORDER BY id")[1], api.sql("SELECT * FROM snapshots ORDER BY entity_id")[1])

    def settles(self, drafts: set[str]) -> None:
        """The live index equals a full build at HEAD, and with the overlay, plus exactly `drafts`."""
        head = self.repo.sha()
        expected = self.rebuilt()
        committed_ids = [r["id"] for r in expected]

        def agrees() -> bool:
            if self.watcher.indexed != head:
                return False
            with_drafts = self.live(True)
            got_drafts = {r["id"] for r in with_drafts if r.get("uncommitted")}
            return self.live(False) == expected and got_drafts == drafts and \
                sorted(r["id"] for r in with_drafts if not r.get("uncommitted")) == sorted(committed_ids)

        try:
            self.wait(agrees, "the live index to equal a full build plus the drafts")
        except AssertionError:
            got = self.live(True)
            raise AssertionError(f"live: {[(r['id'], r.get('uncommitted')) for r in got]}\n"
                                 f"expected committed {committed_ids} + drafts {sorted(drafts)}\n{self.out.getvalue()}") from None
        assert self.tables(self.index) == self.tables(self.full)
        for record in self.live(True):
            assert record.get("uncommitted", False) is (record["id"] in drafts)
            assert (record["commit"] is None) is (record["id"] in drafts)


@pytest.fixture
def live(make_repo, tmp_path):
    repo = make_repo()
    repo.add(_obs(1, entity="company/acme", fields={"name": "Acme"}), _obs(2))
    repo.commit("base")
    watching = Live(repo, tmp_path)
    yield watching
    watching.stop()


def test_drafts_saves_atomic_saves_deletes_and_a_burst(live):
    repo = live.repo
    draft = _obs(10, entity="company/acme", fields={"name": "Acme Corp"})
    repo.add(draft)  # a plain save, in a new folder
    live.settles({draft.id})
    repo.write(draft.path, draft.replace("Details of", "More details of"))  # saved again
    live.settles({draft.id})
    assert "More details" in next(r for r in live.live(True) if r["id"] == draft.id)["body"]

    atomic = _obs(11)  # an editor's save: a temporary file renamed over the target
    folder = repo.path / os.path.dirname(atomic.path)
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / ".obs.md.tmp"
    temp.write_text(atomic, encoding="utf-8")
    os.replace(temp, repo.path / atomic.path)
    live.settles({draft.id, atomic.id})

    os.remove(repo.path / draft.path)  # a draft deleted
    live.settles({atomic.id})

    before = live.watcher.updates
    burst = [observation(f"obs-20260301-000000-{n:04d}", timestamp=f"2026-03-{1 + n % 28:02d}T00:00:00Z")
             for n in range(500)]
    for doc in burst:  # 28 new folders and 500 files as fast as possible
        repo.add(doc)
    live.settles({atomic.id} | {d.id for d in burst})
    assert live.watcher.updates - before <= 10, "a burst is debounced into a few updates, not one per file"


def test_commit_branch_switch_rebase_and_reset(live):
    repo = live.repo
    draft = _obs(20)
    repo.add(draft)
    live.settles({draft.id})
    repo.commit("the draft")  # committed: no longer a draft
    live.settles(set())

    repo.git("checkout", "-q", "-b", "topic")
    repo.add(_obs(21))
    repo.commit("on topic")
    live.settles(set())
    repo.git("checkout", "-q", "main")  # a branch switch: the file of obs 21 leaves the work tree
    live.settles(set())

    repo.add(_obs(22))
    repo.commit("on main")
    repo.git("checkout", "-q", "topic")
    repo.git("rebase", "-q", "main")  # a rebase: many ref moves, one state at the end
    live.settles(set())

    pending = _obs(23)
    repo.add(pending)  # a draft survives a reset; the reset commit's file becomes a draft again
    repo.git("reset", "-q", "--soft", "HEAD~1")
    live.settles({pending.id, "obs-20260213-102500-0021"})
    repo.git("reset", "-q", "--hard", "HEAD~1")  # tracked changes gone; untracked drafts stay
    live.settles({pending.id})


def test_document_folders_that_go_and_come_back_are_watched_again(live):
    """A checkout of a branch without observations/ deletes the folder and its watch; the
    checkout back makes a new folder. Drafts saved there afterwards are seen, and so are drafts
    in a folder removed and made again between two updates, and in a new schemas/entities/."""
    repo = live.repo
    repo.git("checkout", "-q", "--orphan", "empty")
    repo.git("rm", "-rq", "--cached", ".")
    for leftover in ("observations", "comprehension"):
        subprocess.run(["rm", "-rf", str(repo.path / leftover)], check=True)
    repo.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "nothing")
    live.settles(set())
    repo.git("checkout", "-q", "-f", "main")
    live.settles(set())
    draft = _obs(50)
    repo.add(draft)  # in the folder made by the checkout back
    live.settles({draft.id})

    folder = repo.path / "observations"  # moved away and made again within one burst: another folder
    subprocess.run(f"mv '{folder}' '{repo.path}/elsewhere' && cp -a '{repo.path}/elsewhere' '{folder}' && "
                   f"rm -rf '{repo.path}/elsewhere'", shell=True, check=True)
    live.settles({draft.id})
    second = _obs(51)
    repo.add(second)
    live.settles({draft.id, second.id})

    schema = repo.path / "schemas" / "entities" / "company.yaml"
    schema.parent.mkdir(parents=True)
    schema.write_text("not: [a, schema\n", encoding="utf-8")
    live.wait(lambda: "schemas/entities/company.yaml" in live.out.getvalue(),
              lambda: "the schema's problem on stderr: " + live.out.getvalue())


def test_an_invalid_draft_never_hides_a_committed_document(live):
    repo = live.repo
    committed = _obs(1, entity="company/acme", fields={"name": "Acme"})
    impostor = observation(committed.id, folder="observations/drafts", event="another event", body="changed")
    repo.add(impostor)  # same id at another path: DUPLICATE_ID, never in the overlay
    broken = _obs(30).replace("source: agent/test\n", "")
    repo.write(_obs(30).path, broken)  # fails the per-document rules
    changed = committed.replace("Details of", "Edited details of")
    repo.write(committed.path, changed)  # a committed path modified in the work tree
    live.settles(set())
    live.wait(lambda: "DUPLICATE_ID" in live.out.getvalue() and "missing-key" in live.out.getvalue()
              and "IMMUTABLE_VIOLATION" in live.out.getvalue(), lambda: "the problems on stderr: " + live.out.getvalue())
    report = live.out.getvalue()
    assert f"observations/drafts/{committed.id}.md:" in report
    assert f"{_obs(30).path}:1:1 VALIDATION_ERROR" in report
    record = next(r for r in live.live(True) if r["id"] == committed.id)
    assert record["body"] == f"Details of {committed.id}." and record["path"] == committed.path


def test_a_symlinked_or_oversized_draft_is_reported_and_never_read(live, tmp_path):
    """A symlink among the drafts is reported as `check` reports it, and never followed (its
    target, a valid observation outside the repository, stays out of the overlay); a draft over
    the size limit is reported with its size, hashed a block at a time, never held whole."""
    repo = live.repo
    outside = _obs(60)
    target = tmp_path / "outside.md"
    target.write_text(outside, encoding="utf-8")
    link = repo.path / outside.path
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    big = _obs(61)
    size = 3 * 1024 * 1024 + 5
    (repo.path / big.path).parent.mkdir(parents=True, exist_ok=True)
    (repo.path / big.path).write_bytes(str(big).encode() + b"x" * (size - len(str(big).encode())))
    live.settles(set())
    live.wait(lambda: "[symlink]" in live.out.getvalue() and "[document-too-large]" in live.out.getvalue(),
              lambda: "both problems on stderr: " + live.out.getvalue())
    report = live.out.getvalue()
    assert f"{outside.path}:1:1 IMMUTABLE_VIOLATION" in report
    assert f"document is {size} bytes" in report
    os.remove(link)
    (repo.path / big.path).write_text(big, encoding="utf-8")  # now a draft like any other
    live.settles({big.id})


def test_a_watcher_started_before_the_first_commit_says_so_then_follows_it(make_repo, tmp_path):
    repo = make_repo()
    watching = Live(repo, tmp_path, verbose=True)
    try:
        assert "no commit yet" in watching.out.getvalue() and "None" not in watching.out.getvalue()
        first, draft = _obs(70), _obs(71)
        repo.add(first, draft)
        repo.git("add", first.path)
        repo.git("commit", "-q", "--no-verify", "-m", "the first commit")
        watching.settles({draft.id})
    finally:
        watching.stop()


def test_an_index_deleted_under_a_watcher_is_built_again_and_its_lock_taken_again(live, tmp_path):
    """Removing the index's files by hand (the index, its overlay, the watch lock) while a watcher
    runs: the watcher builds and publishes again without an event, and takes its lock again,
    so a second watcher is still refused."""
    from obsrepo.errors import IndexFault
    from obsrepo.index import IndexFiles

    draft = _obs(80)
    live.repo.add(draft)
    live.settles({draft.id})
    for leftover in tmp_path.glob("live.duckdb*"):
        if leftover.is_file():
            leftover.unlink()
    live.settles({draft.id})  # the overlay comes from the watcher alone
    assert (tmp_path / "live.duckdb.watch").read_text() == str(os.getpid())
    with pytest.raises(IndexFault, match="already watches"), IndexFiles(live.index).watch_lock():
        pass


def test_drafts_name_only_observations_of_their_own_tenant_as_check_says(make_repo, tmp_path):
    """A draft's corrections, retractions, feedback and reclassifications are judged by the rules
    `check` applies: a draft of one tenant correcting another tenant's observation never reaches
    the overlay, and the watcher reports what `check` reports for each draft."""
    from obsrepo.gate.check import CheckRequest, run_check

    repo = make_repo()
    theirs = _obs(1, entity="company/acme", fields={"name": "Acme"}, tenant={"org": "b"})
    ours = _obs(2, entity="company/ours", fields={"name": "Ours"}, tenant={"org": "a"})
    repo.add(theirs, ours)
    repo.commit("base")
    drafts = {
        "hijack": _obs(3, entity="company/acme", fields={"name": "Hijacked"}, corrects=theirs.id, priority=1000,
                       tenant={"org": "a"}),
        "retract": _obs(4, retracts=theirs.id, tenant={"org": "a"}),
        "feedback": _obs(5, feedback={"target": theirs.id, "outcome": "accepted", "session": "s"}, tenant={"org": "a"}),
        "reclassify": _obs(6, reclassify={"targets": [theirs.id], "classification": "restricted"}, tenant={"org": "a"}),
        "self": _obs(7, corrects=_obs(7).id, priority=1000, tenant={"org": "a"}),
        "fine": _obs(8, entity="company/ours", fields={"name": "Ours, corrected"}, corrects=ours.id, priority=1000,
                     tenant={"org": "a"}),
        "on a draft": _obs(9, feedback={"target": _obs(8).id, "outcome": "accepted", "session": "s"}, tenant={"org": "a"}),
    }
    repo.add(*drafts.values())
    live = Live(repo, tmp_path)
    try:
        live.settles({drafts["fine"].id, drafts["on a draft"].id})
        live.wait(lambda: all(d.path in live.out.getvalue() for k, d in drafts.items() if k not in ("fine", "on a draft")),
                  lambda: "every refused draft reported: " + live.out.getvalue())
        report = live.out.getvalue()
    finally:
        live.stop()
    checked = run_check(CheckRequest(cwd=str(repo.path)))
    expected = sorted(i.as_text() for i in checked.issues if i.rule.endswith("-target") or i.rule == "self-reference")
    assert {i.split(" [")[-1] for i in expected} == {"corrects-target]", "retracts-target]", "feedback-target]",
                                                       "reclassify-target]", "self-reference]"}
    assert sorted(line for line in report.splitlines() if line in expected) == expected


def test_a_folder_watch_that_dies_is_one_line_and_a_new_watch(live):
    """watchdog raises in a folder's watch thread when the folder vanishes as it is watched
    again; the thread dies. The watcher says so in one line (no traceback), watches anew and
    reconciles, so drafts saved afterwards are seen."""
    observer = live.watcher.observer
    folder = str(live.repo.path / "observations")
    emitter = next(e for e in list(observer.emitters) if e.watch.path == folder)

    def gone(timeout):
        raise FileNotFoundError(2, "No such file or directory", folder)

    emitter.queue_events = gone
    (live.repo.path / "observations" / "wake.txt").write_text("an event ends the watch's current wait")
    live.wait(lambda: live.watcher.observer is not observer, "a new observer")
    assert "a folder watch stopped (FileNotFoundError" in live.out.getvalue()
    assert "Traceback" not in live.out.getvalue()
    draft = _obs(90)
    live.repo.add(draft)
    live.settles({draft.id})


def test_lost_events_are_reconciled_against_git(live):
    repo = live.repo
    live.watcher.stop_observer()  # events behind its back
    draft = _obs(40)
    repo.add(draft, _obs(41))
    repo.git("add", _obs(41).path)
    repo.git("commit", "-q", "--no-verify", "-m", "behind the watcher's back")
    live.watcher.start_observer()
    live.watcher.put(Event(OVERFLOW, ""))  # what an inotify queue overflow reports
    live.settles({draft.id})


def test_a_second_watcher_is_refused_and_sigterm_exits_cleanly(make_repo):
    repo = make_repo()
    repo.add(_obs(1))
    repo.commit("base")
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "watch", "--debounce", "20"], cwd=repo.path, env=repo.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        status: dict = {}
        while time.monotonic() < deadline:
            status = json.loads(repo.obsrepo("status", "--format", "json").stdout)
            if status["watcher"] and status["watcher"].get("updated_at"):
                break
            time.sleep(0.05)
        assert status["watcher"]["pid"] == proc.pid, status
        assert status["indexed_commit"] == repo.sha() and status["behind"] == 0
        assert status["last_update"]["duration_ms"] > 0

        second = repo.obsrepo("watch")
        assert second.returncode == 4
        assert f"INDEX_ERROR: another `obsrepo watch` (pid {proc.pid})" in second.stderr

        repo.add(_obs(2))
        repo.write(_obs(3).path, _obs(3).replace("source: agent/test\n", ""))  # rejected: no source
        deadline = time.monotonic() + 20
        while True:
            status = json.loads(repo.obsrepo("status", "--format", "json").stdout)
            if status["overlay_documents"] == 1 and status["watcher"]["rejected_drafts"] == 1:
                break
            assert time.monotonic() < deadline, f"the drafts were never judged: {status}"
            time.sleep(0.05)
        text = repo.obsrepo("status").stdout
        assert "overlay:          1 uncommitted document; 1 draft rejected (see the watcher's output)" in text
        assert "behind HEAD:      0 commits" in text
        assert f"watcher:          pid {proc.pid}, its last update at 20" in text and " ms)" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    after = json.loads(repo.obsrepo("status", "--format", "json").stdout)
    assert after["watcher"] is None and after["overlay_documents"] == 0
    assert not os.path.exists(repo.path / ".obsrepo" / "index.duckdb.overlay")


def test_a_watcher_of_an_index_that_cannot_be_written_exits_at_once(make_repo, tmp_path):
    """Not a watcher that reports the same error on every event forever: exit 4 at the start."""
    repo = make_repo()
    repo.add(_obs(1))
    repo.commit("base")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for place in (str(folder), os.devnull):
        proc = subprocess.run([sys.executable, "-m", "obsrepo", "watch", "--index", place], cwd=repo.path, env=repo.env,
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 4, proc
        assert "INDEX_ERROR: the index cannot be created at" in proc.stderr and "Traceback" not in proc.stderr
        assert not os.path.exists(place + ".watch")
    status = json.loads(repo.obsrepo("status", "--format", "json", "--index", str(folder)).stdout)
    assert "not a regular file" in status["problem"] and status["indexed_commit"] is None


def test_a_watcher_whose_index_folder_becomes_a_file_exits_with_index_error(make_repo, tmp_path):
    repo = make_repo()
    repo.add(_obs(1))
    repo.commit("base")
    folder = tmp_path / "indexes"
    index = folder / "index.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "watch", "--index", str(index)], cwd=repo.path,
                            env=repo.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not (folder / "index.duckdb.watch.json").exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the watcher never made its first update"
            time.sleep(0.05)
        # the watcher may make the folder again between the removal and the write: the file takes
        # its place by a rename, tried again until it lands on an empty path
        placed = tmp_path / "a-file"
        placed.write_text("a file where the index's folder was")
        while True:
            shutil.rmtree(folder, ignore_errors=True)
            try:
                os.rename(placed, folder)
                break
            except OSError:
                assert time.monotonic() < deadline + 20, "the folder kept coming back"
        _out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, err
    assert "INDEX_ERROR" in err and "Traceback" not in err


def test_status_without_an_index(repo):
    repo.add(_obs(1))
    repo.commit("base")
    state = json.loads(repo.obsrepo("status", "--format", "json").stdout)
    assert state["indexed_commit"] is None and state["watcher"] is None and state["behind"] is None
    repo.obsrepo("index")
    repo.add(_obs(2))
    repo.commit("second")
    state = json.loads(repo.obsrepo("status", "--format", "json").stdout)
    assert state["behind"] == 1 and state["head"] == repo.sha()


# -- the planner, on its own --------------------------------------------------------------

ROOT, GIT = "/r", "/r/.git"


def test_classify_sorts_events_into_one_plan():
    events = [
        Event("created", "/r/observations/2026/a.md"),
        Event("created", "/r/observations/2026/.a.md.swp"),  # an editor's swap file: not a draft
        Event("moved", "/r/observations/2026/.tmp123", "/r/observations/2026/b.md"),  # an atomic save
        Event("created", "/r/observations/2027", is_dir=True),  # a new folder: list again
        Event("modified", "/r/.git/refs/heads/main.lock"),
        Event("moved", "/r/.git/refs/heads/main.lock", "/r/.git/refs/heads/main"),
        Event("modified", "/r/.git/index"),  # staging only
        Event("opened", "/r/observations/2026/c.md"),
        Event("modified", "/r/schemas/entities/invoice.yaml"),
        Event("modified", "/r/README.md"),
    ]
    plan = classify(events, ROOT, (GIT,))
    assert plan.git and plan.rescan and not plan.reconcile
    assert plan.paths == {"observations/2026/a.md", "observations/2026/b.md"}
    assert plan.schemas == {"schemas/entities/invoice.yaml"}
    assert classify([Event("modified", "/r/.git/index")], ROOT, (GIT,)).empty
    assert classify([Event("modified", "/r/.git/HEAD")], ROOT, (GIT,)).git
    assert classify([Event(OVERFLOW, "")], ROOT, (GIT,)).reconcile
    merged = WatchPlan(paths={"a"})
    merged.merge(WatchPlan(git=True, paths={"b"}))
    assert merged.git and merged.paths == {"a", "b"}


def test_debounce_waits_for_quiet_but_never_longer_than_max_wait():
    debounce = Debouncer(quiet=0.1, max_wait=1.0)
    assert not debounce.due(0.0) and debounce.deadline() is None
    debounce.add(0.0)
    assert not debounce.due(0.05) and debounce.due(0.1)
    for tick in range(1, 20):  # a steady stream every 50 ms
        debounce.add(tick * 0.05)
    assert debounce.deadline() == pytest.approx(1.0)
    debounce.reset()
    assert not debounce.pending


# -- parsed once: `check` and `index` share the analysis cache ------------------------------

def test_index_after_check_parses_nothing_and_check_after_index_hits_the_cache(make_repo):
    from obsrepo.format import validate as analyze_module  # every parse goes through validate.analyze
    from obsrepo.gate.check import CheckRequest, run_check

    repo = make_repo()
    docs = [_obs(n, entity=f"company/c{n % 3}", fields={"n": n}) for n in range(1, 40)]
    repo.add(*docs)
    repo.write("observations/bad/obs-20260213-102500-0999.md", "---\nspec: observation/v1\n---\n")
    repo.commit("base")
    clone = repo.clone("fresh")  # a fresh clone: no cache, no index

    calls = []
    original = analyze_module.analyze

    def counting(path, data, *options):
        calls.append(path)
        return original(path, data, *options)

    analyze_module.analyze = counting
    try:
        report = run_check(CheckRequest(cwd=str(clone.path)))
        assert len(calls) == 40 and any(i.path.startswith("observations/bad/") for i in report.issues)
        calls.clear()
        api = Repository(str(clone.path))
        result = api.index(full=True)
        assert (result.parsed, result.reused, calls) == (0, 40, [])  # every document came from check's analyses
        assert len(api.query(ALL)["observations"]) == 39 and len(result.problems) >= 1

        other = make_repo("other")  # the other way round: index first, then check
        other.add(*docs)
        other.commit("base")
        first = Repository(str(other.path)).index(full=True)
        assert (first.parsed, first.reused) == (39, 0)
        calls.clear()
        assert run_check(CheckRequest(cwd=str(other.path))).issues == []
        assert calls == []
        full = Repository(str(other.path), index=str(other.path / "again.duckdb")).index(full=True)
        assert (full.parsed, full.reused) == (0, 39)
        assert Repository(str(other.path), index=str(other.path / "again.duckdb")).query(ALL) == \
            Repository(str(other.path)).query(ALL)
    finally:
        analyze_module.analyze = original


def test_a_build_from_checks_records_reads_no_analysis_and_misplaced_documents_are_still_caught(make_repo):
    """A cached record belongs to a document the reader and the model accepted, so a build from
    the cache `check` filled takes it without reading check's analyses: a garbled analysis file
    is never read nor rewritten. The rules of a document's place (file name = id, folder) still
    hold: a misplaced document whose record is cached gets the problems a fresh parse reports."""
    from obsrepo.gate.check import CheckRequest, run_check

    repo = make_repo()
    repo.add(*[_obs(n, entity=f"company/c{n % 3}", fields={"n": n}) for n in range(1, 30)])
    repo.add(comprehension("comp-good", [_obs(1).id]))
    repo.commit("base")
    run_check(CheckRequest(cwd=str(repo.path)))
    analyses = repo.path / ".git" / "obsrepo" / "check-cache.marshal"
    analyses.write_bytes(b"not marshal")
    result = Repository(str(repo.path)).index(full=True)
    assert (result.parsed, result.reused, result.problems) == (0, 30, [])
    assert analyses.read_bytes() == b"not marshal"

    moved = _obs(40)
    comp = comprehension("comp-moved", [_obs(1).id])
    repo.write("observations/obs-20260213-102500-0041.md", moved)  # the file name is not the id
    repo.write(f"comprehension/deeper/{comp.path.split('/')[-1]}", comp)  # comprehensions live in comprehension/
    repo.write("comprehension/obs-20260213-102500-0042.md", _obs(42))  # an observation in the wrong folder
    repo.commit("misplaced")
    run_check(CheckRequest(cwd=str(repo.path)))  # fills the cache with their records too
    cached = Repository(str(repo.path), index=str(repo.path / "cached.duckdb")).index(full=True)
    assert cached.parsed == 0
    os.environ["OBSREPO_NO_CACHE"] = "1"
    try:
        fresh = Repository(str(repo.path), index=str(repo.path / "fresh.duckdb")).index(full=True)
    finally:
        del os.environ["OBSREPO_NO_CACHE"]
    rules = sorted((i.path, i.line, i.rule) for i in cached.problems)
    assert rules == sorted((i.path, i.line, i.rule) for i in fresh.problems)
    assert {rule for _, _, rule in rules} == {"id-filename-mismatch", "layout", "wrong-folder"}


def test_a_parallel_build_writes_its_workers_entries_as_parts_that_check_and_the_next_build_read(make_repo, monkeypatch):
    """The workers of a parallel build send their new cache entries as the cache file stores
    them (one part each); the parent writes them out without unpacking them. `check` and the
    next build read every part; a truncated, foreign or old-format file is ignored, never a
    traceback, and written anew."""
    import marshal

    from obsrepo.format import validate as analyze_module
    from obsrepo.gate.cache import _MAGIC, load_entries, rules_digest
    from obsrepo.gate.check import CheckRequest, run_check
    from obsrepo.index import adding

    repo = make_repo()
    docs = [_obs(n, entity=f"company/c{n % 3}", fields={"n": n}) for n in range(1, 24)]
    repo.add(*docs, comprehension("comp-good", [docs[0].id]))
    repo.write("observations/bad/obs-20260213-102500-0999.md", "---\nspec: observation/v1\n---\n")
    repo.commit("base")
    monkeypatch.setattr(adding, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(adding, "CHUNK", 5)
    folder = repo.path / ".git" / "obsrepo"
    first = Repository(str(repo.path)).index(full=True)
    assert (first.parsed, first.reused) == (25, 0)
    analyses, records = folder / "check-cache.marshal", folder / "records.marshal"
    data = analyses.read_bytes()
    assert data.startswith(_MAGIC) and len(marshal.loads(data[len(_MAGIC):])["sizes"]) == 1 + 5  # its own part, then one a chunk
    assert len(load_entries(analyses, rules_digest())) == 25 and len(load_entries(records, rules_digest())) == 24

    calls = []
    original = analyze_module.analyze
    monkeypatch.setattr(analyze_module, "analyze", lambda *a: calls.append(a[0]) or original(*a))
    again = Repository(str(repo.path), index=str(repo.path / "again.duckdb")).index(full=True)
    assert (again.parsed, again.reused) == (0, 25)
    assert Repository(str(repo.path), index=str(repo.path / "again.duckdb")).query(ALL) == Repository(str(repo.path)).query(ALL)
    report = run_check(CheckRequest(cwd=str(repo.path)))
    assert calls == [] and {i.path for i in report.issues} == {"observations/bad/obs-20260213-102500-0999.md"}

    for damage in (data[: len(data) // 2], marshal.dumps({"rules": rules_digest(), "entries": {}}),
                   data.replace(rules_digest().encode(), b"0" * 16), _MAGIC + b"\xff"):
        analyses.write_bytes(damage)
        records.write_bytes(damage)
        rebuilt = Repository(str(repo.path), index=str(repo.path / "rebuilt.duckdb")).index(full=True)
        assert (rebuilt.parsed, rebuilt.reused) == (25, 0)  # by the workers
        assert len(load_entries(analyses, rules_digest())) == 25  # written anew


def test_placed_says_what_place_says(make_repo):
    """`rules.placed` (a cached record at a path) agrees with `rules.place` (an analysis at a path)."""
    from obsrepo.format.analyze import analyze
    from obsrepo.format.rules import place, placed

    docs = [_obs(7), comprehension("comp-x", [_obs(1).id])]  # a comprehension cites at least one observation
    paths = ["observations/obs-20260213-102500-0007.md", "observations/a/b/obs-20260213-102500-0007.md",
             "observations/obs-20260213-102500-0008.md", "observations/obs-20260213-102500-0007.txt",
             "observations/obs-20260213-102500-0007", "comprehension/comp-x.md", "comprehension/sub/comp-x.md",
             "comprehension/comp-y.md", "comprehension/obs-20260213-102500-0007.md", "observations/comp-x.md",
             "notes/comp-x.md"]
    said = []
    for doc in docs:
        for path in paths:
            analysis = analyze(path, str(doc).encode(), with_record=True)
            if analysis.kind == "other" or analysis.record is None:
                continue
            said.append(placed(path, analysis.record))
            assert said[-1] == (not place(path, analysis)), (doc.path, path)
    # both documents at every path but the one outside the document folders; the observation
    # fits its flat and its nested path, the comprehension comprehension/comp-x.md alone
    assert len(said) == 2 * (len(paths) - 1) and said.count(True) == 3


def test_an_update_of_a_few_documents_leaves_a_large_cache_alone(make_repo, monkeypatch):
    """Loading and rewriting the cache of a large repository costs more than parsing a few new
    documents: an update that adds few parses them and never rewrites what `check` keeps."""
    from obsrepo.gate.check import CheckRequest, run_check
    from obsrepo.index import adding

    repo = make_repo()
    repo.add(*[_obs(n, fields={"n": n}, entity="company/c") for n in range(1, 30)])
    repo.commit("base")
    api = Repository(str(repo.path))
    assert api.index(full=True).parsed == 29
    run_check(CheckRequest(cwd=str(repo.path)))
    cache = sorted((repo.path / ".git" / "obsrepo").glob("*.marshal"))
    before = {f.name: f.read_bytes() for f in cache}
    repo.add(_obs(31, fields={"n": 31}, entity="company/c"))
    repo.commit("one more")
    monkeypatch.setattr(adding, "CACHE_BYTES_PER_DOCUMENT", 1)  # as if the cache held 100,000 documents
    result = api.index()
    assert (result.added, result.parsed, result.reused) == (1, 1, 0)
    assert {f.name: f.read_bytes() for f in cache} == before


def test_check_imports_neither_duckdb_nor_pyarrow_nor_watchdog(repo):
    repo.add(_obs(1))
    repo.commit("base")
    probe = ("import sys, obsrepo.cli\n"
             "from obsrepo.gate.check import CheckRequest, run_check\n"
             "run_check(CheckRequest(cwd='.'))\n"
             "print(sorted(m for m in ('duckdb', 'pyarrow', 'watchdog') if m in sys.modules))\n")
    assert repo.run(sys.executable, "-c", probe).stdout.strip() == "[]"

"""The write path: one new, checked file in one new commit on a proposal branch, made from git
objects; the work tree, git's index, HEAD and the checked-out branch stay byte-identical."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import PROPOSALS, Repo, check_branch, fingerprint, observation
from obsrepo.api import Repository
from obsrepo.errors import ObsrepoError

BRANCH = PROPOSALS
ACME = observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme", "phone": "1"},
                   tenant={"org": "north"})
BETA = observation("obs-20260213-102500-0002", entity="company/beta", fields={"name": "Beta"}, tenant={"org": "north"})
OTHER = observation("obs-20260213-102500-0003", entity="company/gamma", fields={"name": "Gamma"}, tenant={"org": "south"})


def branch_tip(repo: Repo) -> str | None:
    out = repo.run("git", "rev-parse", "-q", "--verify", f"refs/heads/{BRANCH}", check=False).stdout.strip()
    return out or None


@pytest.fixture
def based(make_repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A repository with three observations on main; in-process writers get the same pinned
    identity and configuration as the processes the tests start."""
    repo = make_repo()
    for key in [k for k in os.environ if k.startswith(("GIT_", "OBSREPO_"))]:
        monkeypatch.delenv(key)
    for key, value in repo.env.items():
        monkeypatch.setenv(key, value)
    repo.add(ACME, BETA, OTHER)
    repo.commit("base")
    return repo


def cli_json(repo: Repo, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    proc = repo.obsrepo(*args, "--format", "json", env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# --- accepted ----------------------------------------------------------------------------------

def test_new_commit_adds_one_file_in_one_commit_and_touches_nothing_else(based: Repo) -> None:
    before = fingerprint(based)
    code, out = cli_json(based, "new", "--source", "agent/crm", "--event", "Delta registered", "--entity",
                         "company/delta", "--field", "name=Delta", "--commit")
    assert code == 0, out
    assert fingerprint(based) == before
    assert out["branch"] == BRANCH and out["commit"] == branch_tip(based)
    assert based.git("rev-parse", f"{BRANCH}^") == based.sha("main")
    assert based.git("diff-tree", "-r", "--no-commit-id", "--name-status", BRANCH) == f"A\t{out['path']}"
    message = based.git("log", "-1", "--format=%an <%ae>%n%B", BRANCH)
    assert message.splitlines()[:2] == ["Test Author <author@example.com>", "Delta registered"]
    assert "Obsrepo-Tool: new" in message and f"Obsrepo-Observation: {out['id']}" in message
    text = based.git("show", f"{BRANCH}:{out['path']}")
    assert f"id: {out['id']}" in text and "entity: company/delta" in text
    # a second write goes on top of the first; OBSREPO_AUTHOR names the author
    code, second = cli_json(based, "new", "--source", "agent/crm", "--event", "Delta seen again", "--commit",
                            env={"OBSREPO_AUTHOR": "Crm Bot <bot@example.com>"})
    assert code == 0, second
    assert based.git("rev-parse", f"{BRANCH}^") == out["commit"]
    assert based.git("log", "-1", "--format=%an <%ae> %cn", BRANCH) == "Crm Bot <bot@example.com> Crm Bot"
    assert fingerprint(based) == before
    check_branch(based)


def test_each_statement_is_accepted_and_reads_back_on_the_branch(based: Repo) -> None:
    before = fingerprint(based)
    repo = Repository(str(based.path))
    corrected = repo.correct("company/acme", "phone", "+44 20", reason="typo")
    assert corrected["commit"] == branch_tip(based)
    relation = repo.relate("company/beta", "PART_OF", "company/acme")
    merged = repo.merge("company/gamma", "company/beta", reason="same company")
    retracted = repo.retract(BETA.id, reason="recorded twice")
    assert len({corrected["id"], relation["id"], merged["id"], retracted["id"]}) == 4
    assert fingerprint(based) == before
    check_branch(based)

    snap = repo.snapshot("company/acme", at=BRANCH)
    assert snap["snapshot"]["phone"] == "+44 20" and snap["provenance"]["phone"] == corrected["id"]
    doc = based.git("show", f"{BRANCH}:{corrected['path']}")
    assert f"corrects: [{ACME.id}]" in doc and "priority: 1000" in doc and "tenant:\n  org: north" in doc
    assert "Correct phone of company/acme: typo" in doc
    from obsrepo.read.query import QueryRequest

    ids = [o["id"] for o in repo.query(QueryRequest(entity="company/beta"), at=BRANCH)["observations"]]
    assert BETA.id not in ids and relation["id"] in ids
    # a correction of the correction names the correction: it is the winner on the branch now
    again = repo.correct("company/acme", "phone", "+44 20 7946", reason="full number")
    assert f"corrects: [{corrected['id']}]" in based.git("show", f"{BRANCH}:{again['path']}")
    check_branch(based)


def test_statements_write_into_the_work_tree_without_commit(based: Repo) -> None:
    head = based.sha()
    for args in (["correct", "company/acme", "phone", "+44 2", "--reason", "typo"],
                 ["retract", BETA.id, "--reason", "twice"],
                 ["relate", "company/beta", "REFERS_TO", "company/acme"],
                 ["merge", "company/gamma", "company/acme", "--reason", "same"]):
        code, out = cli_json(based, *args)
        assert code == 0, (args, out)
        assert set(out) == {"id", "path", "content_hash"} and (based.path / out["path"]).is_file()
    assert based.sha() == head and branch_tip(based) is None
    assert len(based.git("status", "--porcelain", "--untracked-files=all").splitlines()) == 4
    assert based.check().returncode == 0
    proc = based.obsrepo("relate", "company/beta", "PART_OF", "company/acme", "--branch", "x")
    assert proc.returncode == 2 and "--commit" in proc.stderr


# --- refused -----------------------------------------------------------------------------------

REFUSALS = [
    (["new", "--json", "-"], '{"source": "agent/x", "event": "bad", "colour": "red"}', 1, "VALIDATION_ERROR"),
    (["correct", "company/nobody", "name", "x", "--reason", "r"], None, 3, "ENTITY_NOT_FOUND"),
    (["correct", "company/acme", "nothing", "x", "--reason", "r"], None, 3, "FIELD_NOT_FOUND"),
    (["retract", "obs-20990101-000000-0001", "--reason", "r"], None, 3, "REF_NOT_FOUND"),
    (["retract", OTHER.id, "--reason", "r", "--tenant", "org=north"], None, 3, "REF_NOT_FOUND"),
    (["relate", "company/beta", "part_of", "company/acme"], None, 1, "INVALID_RELATIONSHIP_TYPE"),
    (["relate", "company/beta", "PART_OF", "company/nowhere"], None, 1, "ENTITY_NOT_FOUND"),
    (["relate", "company/acme", "PART_OF", "company/acme"], None, 1, "CYCLE_DETECTED"),
    (["relate", "company/beta", "PART_OF", "company/gamma", "--tenant", "org=north"], None, 1, "ENTITY_NOT_FOUND"),
    (["merge", "company/acme", "company/beta", "--reason", "r", "--branch", "main"], None, 2, "VALIDATION_ERROR"),
    (["merge", "company/acme", "company/beta", "--reason", "r", "--branch", "bad..name"], None, 2, "VALIDATION_ERROR"),
]


@pytest.mark.parametrize(("argv", "stdin", "exit_code", "code"), REFUSALS, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_refused_write_changes_nothing(based: Repo, argv: list[str], stdin: str | None, exit_code: int, code: str) -> None:
    Repository(str(based.path)).propose({"source": "agent/x", "event": "first proposal"})
    tip = branch_tip(based)
    before = fingerprint(based)
    proc = based.obsrepo(*argv, "--commit", "--format", "json", input=stdin)
    assert proc.returncode == exit_code, proc
    assert json.loads(proc.stdout)["error"]["code"] == code, proc.stdout
    assert fingerprint(based) == before and branch_tip(based) == tip


def test_cycles_second_merges_duplicates_and_tenants_are_refused_in_process(based: Repo) -> None:
    repo = Repository(str(based.path))
    repo.relate("company/beta", "PART_OF", "company/acme")
    repo.merge("company/gamma", "company/acme", reason="same")
    front = {"source": "agent/x", "event": "once", "timestamp": "2026-02-14T00:00:00Z"}
    repo.propose(front)
    tip = branch_tip(based)
    before = fingerprint(based)
    attempts = [
        (lambda: repo.relate("company/acme", "PART_OF", "company/beta"), "CYCLE_DETECTED"),
        (lambda: repo.merge("company/gamma", "company/beta", reason="again"), "ENTITY_ALREADY_MERGED"),
        (lambda: repo.merge("company/acme", "company/gamma", reason="back"), "CYCLE_DETECTED"),
        (lambda: repo.propose(front), "DUPLICATE_CONTENT"),
        (lambda: Repository(str(based.path), tenant={"org": "north"}).propose({**front, "tenant": {"org": "south"}}),
         "VALIDATION_ERROR"),
    ]
    for attempt, code in attempts:
        with pytest.raises(ObsrepoError) as caught:
            attempt()
        assert caught.value.code == code
    assert fingerprint(based) == before and branch_tip(based) == tip
    # a tenant-bound writer stamps its tenant
    bound = Repository(str(based.path), tenant={"org": "north"}).propose({"source": "agent/x", "event": "bound"})
    assert "tenant:\n  org: north" in based.git("show", f"{BRANCH}:{bound['path']}")
    check_branch(based)


def test_a_retraction_that_would_orphan_a_relation_is_refused(based: Repo) -> None:
    repo = Repository(str(based.path))
    repo.relate("company/beta", "REFERS_TO", "company/gamma")
    with pytest.raises(ObsrepoError) as caught:
        repo.retract(OTHER.id, reason="wrong")
    assert caught.value.code == "ENTITY_NOT_FOUND"
    check_branch(based)


def test_a_writer_whose_branch_moved_checks_again_on_the_new_tip(based: Repo) -> None:
    first, second = Repository(str(based.path)), Repository(str(based.path))
    first.propose({"source": "agent/x", "event": "warm up"})
    second.propose({"source": "agent/y", "event": "moves the branch"})  # first's state is behind now
    second.relate("company/beta", "PART_OF", "company/acme")
    with pytest.raises(ObsrepoError) as caught:
        first.relate("company/acme", "PART_OF", "company/beta")  # sees second's relation
    assert caught.value.code == "CYCLE_DETECTED"
    assert based.git("rev-list", "--count", f"main..{BRANCH}") == "3"


# --- concurrency -------------------------------------------------------------------------------

WRITER = """
import sys
from obsrepo.api import Repository
repo = Repository(".")
for n in range(int(sys.argv[2])):
    repo.propose({"source": f"agent/w{sys.argv[1]}", "event": f"writer {sys.argv[1]} write {n}",
                  "entity": f"task/w{sys.argv[1]}-{n}", "fields": {"n": n}})
"""


def test_concurrent_writers_lose_nothing(based: Repo) -> None:
    """4 processes x 25 writes at once on one branch (OBSREPO_TEST_WRITES changes the 25): ~3 s."""
    per_writer = int(os.environ.get("OBSREPO_TEST_WRITES", "25"))
    before = fingerprint(based)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(w), str(per_writer)], cwd=based.path, env=based.env,
                                stderr=subprocess.PIPE, text=True) for w in range(4)]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    total = 4 * per_writer
    assert based.git("rev-list", "--count", f"main..{BRANCH}") == str(total)
    added = based.git("diff", "--name-status", "main", BRANCH).splitlines()
    assert len(added) == total and all(line.startswith("A\t") for line in added)
    for sha in based.git("rev-list", f"main..{BRANCH}").splitlines():  # one file per commit
        assert len(based.git("diff-tree", "-r", "--no-commit-id", "--name-only", sha).splitlines()) == 1
    assert fingerprint(based) == before
    check_branch(based)


def test_new_commit_refuses_outside_a_repository(tmp_path: Path, make_repo) -> None:
    folder = make_repo("plain", init=False)
    proc = folder.obsrepo("new", "--source", "agent/x", "--event", "e", "--commit", "--format", "json")
    assert proc.returncode == 4 and json.loads(proc.stdout)["error"]["code"] == "GIT_ERROR"


def test_a_correction_outranks_the_correction_it_corrects_whatever_the_clock(based: Repo) -> None:
    """Corrections rank among themselves by timestamp: a correction of a correction dated in the
    future (or made within the same second) must still be the one that wins."""
    ahead = observation("obs-20990101-000000-0009", entity="company/acme", fields={"phone": "+1 555"},
                        priority=1000, corrects=[ACME.id], tenant={"org": "north"})
    based.add(ahead)
    based.commit("a correction dated 2099")
    repo = Repository(str(based.path))
    first = repo.correct("company/acme", "phone", "+44 20", reason="typo")
    again = repo.correct("company/acme", "phone", "+44 20 7946", reason="full number")  # within the same second
    snapshot = repo.snapshot("company/acme", at=BRANCH)
    assert snapshot["snapshot"]["phone"] == "+44 20 7946" and snapshot["provenance"]["phone"] == again["id"]
    texts = [based.git("show", f"{BRANCH}~{n}:{path}") for n, path in ((1, first["path"]), (0, again["path"]))]
    assert "timestamp: 2099-01-01T00:00:01Z" in texts[0] and "timestamp: 2099-01-01T00:00:02Z" in texts[1]

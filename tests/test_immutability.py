"""Immutability (docs/design.md §2, §7, §8): against a base revision an observation may only be added.

`check --base REV` checks every commit from the merge base of REV and HEAD to HEAD against its
parents, then the work tree against HEAD; `check --staged` compares git's index with HEAD.
Every test asserts the exit code and the exact issues
(code, rule, path) of the JSON report, in real repositories.
"""

from __future__ import annotations

import os
import re

import pytest
from helpers import Repo, comprehension, hermetic, obs_id, observation

IV = "IMMUTABLE_VIOLATION"
A, B, C, D = (observation(obs_id(n)) for n in (1, 2, 3, 4))


@pytest.fixture
def base(repo: Repo) -> Repo:
    """main holds A and B, committed."""
    repo.add(A, B)
    repo.commit("base: A and B")
    return repo


def on_branch(repo: Repo, name: str = "pr") -> Repo:
    repo.git("checkout", "-q", "-b", name)
    return repo


# --- --base: what a pull request may not do -------------------------------------------------

def test_modifying_observations_is_a_violation_committed_or_not(base: Repo) -> None:
    base_sha = base.sha()
    on_branch(base)
    base.write(A.path, A.replace("observed", "seen"))
    base.commit("edit A")
    base.write(B.path, B + "\nedited, not committed\n")  # the work tree counts too
    result = base.check("--base", base_sha)
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path), (IV, "modified", B.path)]


def test_deleting_an_observation_is_a_violation(base: Repo) -> None:
    on_branch(base)
    base.git("rm", "-q", A.path)
    base.commit("delete A")
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "deleted", A.path)]


def test_renaming_is_reported_for_the_old_path_not_detected_away(base: Repo) -> None:
    base.git("config", "diff.renames", "copies")  # a user's rename detection must not hide it either
    on_branch(base)
    moved = f"observations/elsewhere/{A.id}.md"  # any folder under observations/ is a valid place
    (base.path / moved).parent.mkdir(parents=True)
    base.git("mv", A.path, moved)
    base.commit("move A")
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "deleted", A.path)]


@pytest.mark.parametrize("committed", [
    True,
    False,
], ids=["committed", "work-tree"])
def test_chmod_is_a_mode_change(base: Repo, committed: bool) -> None:
    on_branch(base)
    os.chmod(base.path / A.path, 0o755)
    if committed:
        base.commit("chmod +x A")
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "mode-changed", A.path)]


def test_symlinks_under_observations_are_violations(base: Repo) -> None:
    on_branch(base)
    (base.path / A.path).unlink()
    os.symlink(os.path.basename(B.path), base.path / A.path)  # A now points at a valid observation
    new_link = f"observations/2026/02/13/{obs_id(9)}.md"
    os.symlink(os.path.basename(B.path), base.path / new_link)
    base.write("outside/README.md", "not an observation\n")
    os.symlink("../outside", base.path / "observations/linked")
    base.commit("symlinks")
    for path in (A.path, new_link, "observations/linked"):
        assert base.git("ls-tree", "HEAD", path).startswith("120000 "), path
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    replaced = [i for i in result.issues if i[2] == A.path]
    assert replaced and {(code, rule) for code, rule, _ in replaced} <= {(IV, "type-changed"), (IV, "symlink")}
    added = sorted([(IV, "symlink", "observations/linked"), (IV, "symlink", new_link)])
    assert sorted(set(result.issues) - set(replaced)) == added


def _gitlink(repo: Repo, path: str = "observations/sub") -> str:
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.sha()},{path}")
    return path


def test_staged_gitlink_under_observations_is_a_violation(base: Repo) -> None:
    path = _gitlink(base)
    result = base.check("--staged")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "submodule", path)]


def test_committed_gitlink_under_observations_is_a_violation(base: Repo) -> None:
    on_branch(base)
    path = _gitlink(base)
    base.git("commit", "-q", "-m", "add a gitlink")
    base.git("checkout", "-q", "main")
    base.git("checkout", "-q", "pr")  # as CI checks it out: an empty folder for the submodule
    assert (base.path / path).is_dir()
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "submodule", path)]


def test_checked_out_submodule_under_observations_is_a_violation(make_repo, base: Repo) -> None:
    other = make_repo("other")
    other.add(C)
    other.commit("other")
    on_branch(base)
    base.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", f"file://{other.path}", "observations/sub")
    base.commit("add a submodule")
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "submodule", "observations/sub")]


# --- --base: what is allowed, and the merge base ------------------------------------------

def test_adding_new_valid_observations_is_clean(base: Repo) -> None:
    on_branch(base)
    base.add(C)
    base.commit("add C")
    base.add(D)  # and one not committed yet
    result = base.check("--base", "main")
    assert result.returncode == 0, result
    assert result.data["ok"] is True and result.issues == []
    assert result.data["checked"] == 4


def test_main_moving_on_is_not_a_deletion_thanks_to_the_merge_base(base: Repo) -> None:
    on_branch(base)
    base.add(C)
    base.commit("pr adds C")
    base.git("checkout", "-q", "main")
    base.add(D)
    base.commit("main adds D meanwhile")
    base.git("checkout", "-q", "pr")
    assert not (base.path / D.path).exists()
    result = base.check("--base", "main")
    assert result.returncode == 0, result
    assert result.issues == []


def _merge_main_into_pr(repo: Repo) -> None:
    """pr adds C; main meanwhile adds D; pr merges main without committing yet."""
    on_branch(repo)
    repo.add(C)
    repo.commit("pr adds C")
    repo.git("checkout", "-q", "main")
    repo.add(D)
    repo.commit("main adds D")
    repo.git("checkout", "-q", "pr")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "main")


def _is_merge(repo: Repo) -> bool:
    return len(repo.git("rev-list", "--parents", "-n1", "HEAD").split()) == 3


def test_clean_merge_of_main_into_the_branch_is_clean(base: Repo) -> None:
    _merge_main_into_pr(base)
    base.git("commit", "-q", "--no-edit")
    assert _is_merge(base)
    result = base.check("--base", "main")
    assert result.returncode == 0, result
    assert result.issues == []


def test_merge_resolution_that_modifies_observations_is_a_violation(base: Repo) -> None:
    _merge_main_into_pr(base)
    for victim in (A, D):  # A was in the base; D came in with the merge
        base.write(victim.path, victim + "\nedited while resolving the merge\n")
        base.git("add", victim.path)
    base.git("commit", "-q", "--no-edit")
    assert _is_merge(base)
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path), (IV, "modified", D.path)]


# --- comprehension documents may evolve, under rules --------------------------------------

# id → (the document on main, the edit on the branch or None for a deletion, rules expected)
COMPREHENSION_EDITS = {
    "comp-raised": ([A.id, B.id], ([A.id, B.id, C.id], 2), []),
    "comp-kept-version": ([A.id, B.id], ([A.id, B.id], 1), ["comprehension-edit"]),
    "comp-dropped": ([A.id, B.id], ([A.id, C.id], 2), ["comprehension-edit"]),
    "comp-both": ([A.id, B.id], ([A.id], 1), ["comprehension-edit", "comprehension-edit"]),
    "comp-deleted": ([A.id, B.id], None, []),
}


def test_comprehension_edits_raise_version_and_keep_citations_deletion_allowed(base: Repo) -> None:
    for comp_id, (cited, _, _) in COMPREHENSION_EDITS.items():
        base.add(comprehension(comp_id, cited))
    base.commit("comprehensions citing A and B")
    on_branch(base)
    base.add(C)
    for comp_id, (_, edit, _) in COMPREHENSION_EDITS.items():
        if edit is None:
            base.git("rm", "-q", f"comprehension/{comp_id}.md")
        else:
            cited, version = edit
            base.add(comprehension(comp_id, cited, version=version, statement=f"revised {comp_id}"))
    base.commit("revise the comprehensions")
    result = base.check("--base", "main")
    expected = sorted(("VALIDATION_ERROR", rule, f"comprehension/{comp_id}.md")
                      for comp_id, (_, _, rules) in COMPREHENSION_EDITS.items() for rule in rules)
    assert result.returncode == 1, result
    assert result.issues == expected


# --- --staged (pre-commit) -----------------------------------------------------------------

def test_staged_modification_is_a_violation(base: Repo) -> None:
    base.write(A.path, A + "\nappended\n")
    base.git("add", A.path)
    result = base.check("--staged")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path)]


def test_staged_addition_is_clean_and_unstaged_edits_are_not_what_staged_checks(base: Repo) -> None:
    base.write(A.path, A + "\nnot staged\n")  # the work tree differs; the index does not
    base.add(C)
    base.git("add", C.path)
    result = base.check("--staged")
    assert result.returncode == 0, result
    assert result.issues == []
    assert result.data["checked"] == 3


def test_staged_rename_is_reported_even_when_only_the_new_path_is_named(base: Repo) -> None:
    moved = f"observations/elsewhere/{A.id}.md"
    (base.path / moved).parent.mkdir(parents=True)
    base.git("mv", A.path, moved)
    result = base.check("--staged", moved)  # pre-commit passes the files that exist, never the deleted ones
    assert result.returncode == 1, result
    assert result.issues == [(IV, "deleted", A.path)]


def test_staged_additions_in_a_repository_without_commits(repo: Repo) -> None:
    repo.add(A, B, comprehension("comp-first", [A.id, B.id]))
    repo.git("add", "-A")
    result = repo.check("--staged")
    assert result.returncode == 0, result
    assert result.issues == []
    assert result.data["checked"] == 3


# --- errors: never a silent pass -----------------------------------------------------------

def test_unknown_base_is_ref_not_found(base: Repo) -> None:
    result = base.check("--base", "doesnotexist")
    assert result.returncode == 3, result
    assert result.data["error"]["code"] == "REF_NOT_FOUND"
    assert "doesnotexist" in result.data["error"]["message"]


def test_shallow_clone_missing_the_base_is_a_git_error(base: Repo) -> None:
    old = base.sha()
    base.add(C)
    base.commit("second")
    shallow = base.clone("shallow", "--depth", "1")
    assert shallow.git("rev-parse", "--is-shallow-repository") == "true"
    shallow.write(A.path, A + "\nedited in the shallow clone\n")  # would be a violation
    result = shallow.check("--base", old)
    assert result.returncode == 4, result
    assert result.data["error"]["code"] == "GIT_ERROR"


def test_shallow_clone_without_a_common_history_is_a_git_error(base: Repo) -> None:
    on_branch(base)
    base.add(C)
    base.commit("pr adds C")
    base.git("checkout", "-q", "main")
    base.add(D)
    base.commit("main adds D")
    shallow = base.clone("shallow", "--depth", "1", "--no-single-branch", "--branch", "pr")
    shallow.git("rm", "-q", A.path)  # would be a violation
    result = shallow.check("--base", "origin/main")
    assert result.returncode == 4, result
    assert result.data["error"]["code"] == "GIT_ERROR"


def test_base_outside_a_git_repository_is_a_git_error(make_repo) -> None:
    plain = make_repo("plain", init=False)
    plain.add(A)
    result = plain.check("--base", "main")
    assert result.returncode == 4, result
    assert result.data["error"]["code"] == "GIT_ERROR"


def test_github_format_annotates_violations(base: Repo) -> None:
    on_branch(base)
    base.write(A.path, A + "\nedited\n")
    base.git("rm", "-q", B.path)
    base.commit("edit A, delete B")
    proc = base.obsrepo("check", "--base", "main", "--format", "github")
    assert proc.returncode == 1, proc
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, proc.stdout
    for line, path in zip(lines, sorted([A.path, B.path])):
        assert re.fullmatch(rf"::error file={re.escape(path)},line=1,col=1::IMMUTABLE_VIOLATION \S.*", line), line


# --- commit by commit: what the range did, not only where it ended ------------------------

def _issue(result, rule: str, path: str) -> dict:
    found = [i for i in result.data["issues"] if i["rule"] == rule and i["path"] == path]
    assert len(found) == 1, result
    return found[0]


def test_modify_then_revert_inside_the_range_is_refused_naming_the_commit(base: Repo) -> None:
    on_branch(base)
    base.write(A.path, A.replace("observed", "seen"))
    edited = base.commit("edit A")
    base.write(A.path, A)
    base.commit("put A back")
    base.add(C)
    base.commit("add C")
    assert base.git("diff", "main", "--stat", "--", A.path) == ""  # the end state equals the base
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path)]  # one problem: the first commit that made it
    issue = _issue(result, "modified", A.path)
    assert issue["details"] == {"commit": edited}
    assert edited[:12] in issue["message"]
    text = base.obsrepo("check", "--base", "main")
    assert text.returncode == 1 and f"commit {edited[:12]}" in text.stdout, text


def test_modification_on_a_merged_side_branch_is_refused(base: Repo) -> None:
    """The side branch edits A and puts it back; the pull request merges it (A is unchanged at
    every first-parent step, yet the edit lands on main's history)."""
    base.git("checkout", "-q", "-b", "side")
    base.write(A.path, A + "\nedited on the side\n")
    edited = base.commit("side edits A")
    base.write(B.path, B + "\nedited on the side too\n")
    base.write(A.path, A)
    base.commit("side restores A and edits B")
    base.write(B.path, B)
    base.commit("side restores B")
    base.git("checkout", "-q", "main")
    on_branch(base)
    base.add(C)
    base.commit("pr adds C")
    base.git("merge", "-q", "--no-ff", "--no-edit", "side")
    assert _is_merge(base)
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path), (IV, "modified", B.path)]
    assert _issue(result, "modified", A.path)["details"] == {"commit": edited}


def test_merge_of_an_unrelated_history_is_checked_from_its_root(base: Repo) -> None:
    on_branch(base)
    base.git("checkout", "-q", "--orphan", "other")
    base.git("rm", "-rq", "--cached", ".")
    for path in (A.path, B.path):
        (base.path / path).unlink()
    base.add(C)
    base.commit("an unrelated root adds C")
    base.git("checkout", "-q", "pr")
    base.git("merge", "-q", "--no-edit", "--allow-unrelated-histories", "other")
    assert base.check("--base", "main").returncode == 0
    base.write(D.path, observation(D.id))
    base.commit("add D")
    base.git("checkout", "-q", "other")
    base.write(C.path, C + "\nedited where C was born\n")
    edited = base.commit("edit C on the unrelated branch")
    base.git("checkout", "-q", "pr")
    base.git("merge", "-q", "--no-edit", "other")
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", C.path)]
    assert _issue(result, "modified", C.path)["details"] == {"commit": edited}


def test_an_observation_made_executable_and_edited_reports_both(base: Repo) -> None:
    on_branch(base)
    base.write(A.path, A + "\nedited\n")
    os.chmod(base.path / A.path, 0o755)
    base.commit("chmod and edit A")
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "mode-changed", A.path), (IV, "modified", A.path)]


@pytest.mark.parametrize("mode", ["base", "staged"])
def test_a_mode_change_does_not_hide_a_forbidden_comprehension_edit(base: Repo, mode: str) -> None:
    comp = comprehension("comp-belief", [A.id, B.id])
    base.add(comp)
    base.commit("a comprehension")
    on_branch(base)
    base.add(comprehension("comp-belief", [A.id], statement="rewritten without raising the version"))
    os.chmod(base.path / comp.path, 0o755)
    base.git("add", "-A")
    if mode == "base":
        base.commit("rewrite the comprehension, and make it executable")
    result = base.check("--base", "main") if mode == "base" else base.check("--staged")
    assert result.returncode == 1, result
    assert result.issues == [("VALIDATION_ERROR", "comprehension-edit", comp.path)] * 2  # version, dropped citation


def test_check_outside_a_git_repository_is_a_git_error(make_repo) -> None:
    plain = make_repo("plain", init=False)
    plain.add(A, B)
    result = plain.check()
    assert result.returncode == 4, result
    assert result.data["error"]["code"] == "GIT_ERROR"
    assert "not inside a git repository" in result.data["error"]["message"]
    text = plain.obsrepo("check")
    assert text.returncode == 4 and "GIT_ERROR" in text.stderr and "ok" not in text.stdout, text


# --- many documents: forked workers read and analyse their own chunks -------------------------

def test_the_parallel_analysis_equals_the_serial_one(base: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """With chunks of two documents, invalid documents, one blob at two paths and uncommitted
    edits, the work tree, staged and --base reports are those of the serial path."""
    from obsrepo.api import Repository
    from obsrepo.gate import analysis

    on_branch(base)
    base.add(C, D)
    base.write(f"observations/copies/{C.id}.md", C)  # the same blob as C, at a second path
    base.write("observations/2026/02/13/obs-20260213-102500-0091.md", b"---\nspec: observation/v1\nid: [\n---\n")
    base.write("observations/2026/02/13/obs-20260213-102500-0092.md", b"\xef\xbb\xbf---\n---\n")
    base.commit("more, some invalid")
    base.write(A.path, A + "\nedited, not committed\n")
    base.write(f"observations/2026/02/13/{obs_id(7)}.md", observation(obs_id(7)))
    base.git("add", f"observations/2026/02/13/{obs_id(7)}.md")

    def reports() -> list[dict]:
        with hermetic({**base.env, "OBSREPO_NO_CACHE": "1"}):
            repository = Repository(str(base.path))
            return [repository.check().as_dict(), repository.check(staged=True).as_dict(),
                    repository.check(base="main").as_dict()]

    serial = reports()
    assert any(not report["ok"] for report in serial)
    monkeypatch.setattr(analysis, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(analysis, "READ_CHUNK", 2)
    assert reports() == serial

"""Files are whole or absent (docs/design.md §8a): every work-tree write is a temporary file,
fsynced and renamed; a failure is WRITE_ERROR (exit 4) naming the path, and leaves nothing.

The size limit is real: the CLI runs under `ulimit -f` with SIGXFSZ ignored, so the kernel
fails the write with EFBIG once the file would pass the limit."""

from __future__ import annotations

import json
import os
import sys

from helpers import PROPOSALS, Doc, comprehension, observation

BIG_BODY = "A long account of what happened. " * 200  # ~6.6 KB: over a limit of 1 KiB


def limited(repo, kilobytes, *args):
    """`obsrepo ARGS` with files limited to `kilobytes` KiB (and SIGXFSZ ignored, so the write fails).
    No bytecode is written: under the limit Python would leave truncated caches for later runs."""
    script = f"trap '' XFSZ; ulimit -f {kilobytes}; PYTHONDONTWRITEBYTECODE=1 exec \"$0\" -m obsrepo \"$@\""
    return repo.run("bash", "-c", script, sys.executable, *args, check=False)


def error_of(proc):
    return json.loads(proc.stdout)["error"]


def leftovers(folder):
    """Every file under `folder` (temporary files included: their names start with a dot)."""
    return sorted(os.path.relpath(os.path.join(top, name), folder) for top, _, names in os.walk(folder) for name in names)


def test_a_new_observation_over_the_size_limit_leaves_no_file(repo):
    repo.add(observation("obs-20260101-090000-0001"))
    repo.commit("one")
    proc = limited(repo, 1, "new", "--source", "agent/x", "--event", "big", "--timestamp", "2026-02-01T00:00:00Z",
                   "--body", BIG_BODY, "--format", "json")
    assert proc.returncode == 4, proc
    error = error_of(proc)
    assert error["code"] == "WRITE_ERROR" and "File too large" in error["message"], error
    assert error["details"]["path"].endswith(".md") and "observations/2026/02/01/obs-20260201-000000-" in error["details"]["path"]
    assert leftovers(repo.path / "observations") == ["2026/01/01/obs-20260101-090000-0001.md"]
    assert repo.check().returncode == 0
    # the same write without the limit succeeds: the refusal was the limit's
    proc = repo.obsrepo("new", "--source", "agent/x", "--event", "big", "--timestamp", "2026-02-01T00:00:00Z",
                        "--body", BIG_BODY, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path"] == error["details"]["path"].split(os.sep + "repo" + os.sep, 1)[1]


def test_a_statement_over_the_size_limit_leaves_no_file(repo):
    """correct/retract/relate/… without --commit write through `new`: the same guarantee."""
    repo.add(observation("obs-20260101-090000-0001", entity="company/acme", fields={"name": "Acme"}))
    repo.commit("one")
    assert repo.obsrepo("index").returncode == 0  # `correct` reads the winner from the index
    proc = limited(repo, 1, "correct", "company/acme", "name", "Acme Corporation " * 100, "--reason", "renamed",
                   "--format", "json")
    assert proc.returncode == 4 and error_of(proc)["code"] == "WRITE_ERROR", proc
    assert leftovers(repo.path / "observations") == ["2026/01/01/obs-20260101-090000-0001.md"]


def test_a_belief_update_over_the_size_limit_keeps_the_old_version_whole(repo):
    first = observation("obs-20260201-090000-0001", type="payment.late")
    second = observation("obs-20260202-090000-0002", type="payment.late")
    short = comprehension("comp-acme-payments", [first.id], domain="customers/acme")
    belief = Doc(f"{short}\n{BIG_BODY}\n", path=short.path, id=short.id)
    repo.add(first, second, belief)
    repo.commit("belief")
    before = (repo.path / belief.path).read_bytes()
    assert len(before) > 4096
    proc = limited(repo, 4, "comprehend", "comp-acme-payments", "--observation", second.id, "--effect", "confirm",
                   "--format", "json")
    assert proc.returncode == 4, proc
    error = error_of(proc)
    assert error["code"] == "WRITE_ERROR" and error["details"]["path"].endswith(belief.path), error
    assert (repo.path / belief.path).read_bytes() == before
    assert leftovers(repo.path / "comprehension") == ["comp-acme-payments.md"]
    assert repo.check("--base", "HEAD").returncode == 0
    # without the limit the next version replaces the old one
    proc = repo.obsrepo("comprehend", "comp-acme-payments", "--observation", second.id, "--effect", "confirm")
    assert proc.returncode == 0, proc.stderr
    assert "version: 2" in repo.read(belief.path) and leftovers(repo.path / "comprehension") == ["comp-acme-payments.md"]


def test_a_file_where_the_date_folder_should_be_is_a_write_error_not_a_phantom_duplicate(repo):
    repo.add(observation("obs-20260101-090000-0001"))
    repo.commit("one")
    repo.write("observations/2026/02", "not a folder\n")
    args = ("new", "--source", "agent/x", "--event", "small", "--timestamp", "2026-02-01T00:00:00Z", "--format", "json")
    proc = repo.obsrepo(*args)
    assert proc.returncode == 4, proc
    error = error_of(proc)
    assert error["code"] == "WRITE_ERROR" and error["details"]["blocker"].endswith("observations/2026/02"), error
    assert "is a file, where a folder should be" in error["message"]
    # the work tree's stray file is not HEAD's: a proposal from HEAD has its folder
    proposed = repo.obsrepo(*args, "--commit")
    assert proposed.returncode == 0, proposed
    assert json.loads(proposed.stdout)["branch"] == PROPOSALS
    # once committed, the branch itself has no place for the date folder: said so, not DUPLICATE_CONTENT
    repo.commit("a stray file")
    again = repo.obsrepo(*args, "--commit", "--branch", "other")
    assert again.returncode == 4, again
    error = error_of(again)
    assert error["code"] == "WRITE_ERROR" and error["details"]["blocker"] == "observations/2026/02", error
    assert "observations/2026/02 is a file" in error["message"]


def test_new_outside_a_git_repository_is_a_git_error_and_writes_nothing(repo):
    outside = repo.path.parent / "plain"
    outside.mkdir()
    proc = repo.obsrepo("new", "--source", "agent/x", "--event", "seen", "--format", "json", cwd=outside)
    assert proc.returncode == 4, proc
    error = error_of(proc)
    assert error["code"] == "GIT_ERROR" and "not inside a git repository" in error["message"]
    assert leftovers(outside) == []


def test_export_into_a_folder_that_is_a_file_is_a_write_error(repo):
    repo.add(observation("obs-20260101-090000-0001"))
    repo.commit("one")
    repo.write("exports", "a file\n")
    for fmt, target in (("csv", "exports/all.csv"), ("markdown", "exports/all.md"), ("parquet", "exports/pq")):
        proc = repo.obsrepo("export", "--format", fmt, "--output", target)
        assert proc.returncode == 4, proc
        assert "WRITE_ERROR" in proc.stderr and "exports is a file, where a folder should be" in proc.stderr, proc
    assert repo.read("exports") == "a file\n"


def test_an_export_over_the_size_limit_leaves_nothing_and_an_old_export_whole(repo):
    repo.add(*(observation(f"obs-20260101-0900{n:02d}-00{n:02d}") for n in range(1, 21)))
    repo.commit("twenty")
    assert repo.obsrepo("index").returncode == 0
    repo.write("out/all.csv", "the previous export\n")
    for fmt, target in (("csv", "out/all.csv"), ("jsonl", "out/all.jsonl"), ("markdown", "out/all.md"),
                        ("parquet", "out/pq")):
        proc = limited(repo, 1, "export", "--format", fmt, "--output", target)
        assert proc.returncode == 4 and "WRITE_ERROR" in proc.stderr and target in proc.stderr, (fmt, proc)
    assert leftovers(repo.path / "out") == ["all.csv"] and not (repo.path / "out" / "pq").exists()
    assert repo.read("out/all.csv") == "the previous export\n"
    assert repo.obsrepo("export", "--format", "csv", "--output", "out/all.csv").returncode == 0
    assert repo.read("out/all.csv").startswith("id,agent,project,timestamp")


def test_the_diff_report_file_is_written_whole_or_is_a_write_error(repo):
    repo.add(observation("obs-20260101-090000-0001"))
    base = repo.commit("one")
    repo.add(observation("obs-20260102-090000-0002"))
    repo.commit("two")
    repo.write("reports", "a file\n")
    proc = repo.obsrepo("diff", base, "HEAD", "--output", "reports/diff.json")
    assert proc.returncode == 4 and "WRITE_ERROR" in proc.stderr and "reports is a file" in proc.stderr, proc
    proc = repo.obsrepo("diff", base, "HEAD", "--output", "out/diff.json")
    assert proc.returncode == 0, proc
    assert json.loads(repo.read("out/diff.json"))["valid"] is True and leftovers(repo.path / "out") == ["diff.json"]

"""What a newcomer reads is true: help texts state the real defaults, time options read alike,
every count agrees with its noun, and each summary says what it counted."""

from __future__ import annotations

import json
import re

from helpers import comprehension, observation


def test_new_help_states_the_models_default_classification(repo):
    from obsrepo.format.model import Observation

    text = " ".join(repo.obsrepo("new", "--help").stdout.split())
    stated = re.search(r"--classification \[[a-z|]+\] Who may read it \(default (\w+)\)", text)
    assert stated, text
    assert stated.group(1) == Observation.model_fields["classification"].default == "internal"


def test_new_timestamp_reads_a_date_like_every_time_option(repo):
    repo.add(observation("obs-20260213-102500-0001"))
    repo.commit("base")
    made = repo.obsrepo("new", "--source", "agent/x", "--event", "dated", "--timestamp", "2026-03-01", "--format", "json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["id"].startswith("obs-20260301-000000-")
    assert "timestamp: 2026-03-01T00:00:00Z" in repo.read(json.loads(made.stdout)["path"])
    bad = repo.obsrepo("new", "--source", "agent/x", "--event", "e", "--timestamp", "yesterday", "--format", "json")
    assert bad.returncode == 2
    assert json.loads(bad.stdout)["error"]["details"]["parameter"] == "--timestamp"
    assert "expects an ISO 8601 date or timestamp" in json.loads(bad.stdout)["error"]["message"]


def test_every_count_agrees_with_its_noun(repo):
    repo.add(observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"}))
    repo.commit("one")
    assert repo.obsrepo("check").stderr.strip() == "checked 1 document: ok"
    built = repo.obsrepo("index").stderr
    assert re.search(r"index built at \w+: 1 commit, 1 document version added, 0 removed$", built.strip()), built
    assert "(1 observation, last " in repo.obsrepo("snapshot", "company/acme", "--format", "text").stdout
    assert "(1 observation, last " in repo.obsrepo("entities", "--format", "text").stdout
    assert repo.obsrepo("sql", "SELECT 1 AS n").stdout.rstrip().endswith("(1 row)")


def test_check_counts_documents_and_index_counts_their_versions(repo):
    first = observation("obs-20260213-102500-0001")
    repo.add(first, comprehension("comp-x", [first.id]))
    repo.commit("first")
    repo.add(comprehension("comp-x", [first.id], version=2))  # an edit: the same document, a new version
    repo.commit("edit")
    assert repo.obsrepo("check").stderr.strip() == "checked 2 documents: ok"
    built = repo.obsrepo("index").stderr.strip()
    assert built.endswith(": 2 commits, 3 document versions added, 0 removed"), built


def test_a_staged_deletion_is_one_problem_and_never_no_documents_found(repo):
    gone = observation("obs-20260213-102500-0001")
    repo.add(gone)
    repo.commit("base")
    repo.git("rm", "-q", gone.path)
    for named in ((), (gone.path,)):  # what pre-commit runs: no file named, or the deleted one
        proc = repo.obsrepo("check", "--staged", *named)
        assert proc.returncode == 1, proc
        assert proc.stderr.strip() == "checked 0 documents: 1 problem", proc.stderr
        assert [line.split()[1] for line in proc.stdout.splitlines()] == ["IMMUTABLE_VIOLATION"], proc.stdout


def test_review_markdown_never_shows_a_backtick_inside_code(repo):
    target = observation("obs-20260213-102500-0001")
    repo.add(target)
    base = repo.commit("base")
    wrong = observation("obs-20260214-090000-0002", corrects="obs-20260101-000000-9999", priority=1000,
                        event="a `quoted` event", entity="company/a", fields={"name": "A`B"})
    repo.add(wrong)
    repo.commit("a correction of nothing")
    proc = repo.obsrepo("diff", base, "HEAD", "--format", "markdown")
    assert proc.returncode == 1, proc.stderr
    problem = next(line for line in proc.stdout.splitlines() if "REF_NOT_FOUND" in line)
    assert "<code>corrects</code> names" in problem, problem
    assert not re.search(r"<code>[^<]*`[^<]*</code>", problem), problem
    assert "`" not in problem.split("|")[3], problem  # the message cell: every span became <code>

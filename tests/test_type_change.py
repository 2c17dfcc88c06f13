"""Types never drift silently (docs/design.md §8a): a correction whose value has another JSON
type than the field's current value is refused (rule `type-change`, exit 1, nothing written)
unless its caller allows the change; `null` clears a field and always passes. Date options take
unix milliseconds as digits too, read by the one time parser. Through the command line and the
library, in a real repository."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import yaml
from helpers import PROPOSALS, Repo, fingerprint, observation
from obsrepo.api import Repository
from obsrepo.errors import InputError

ACME = observation("obs-20260213-102500-0001", entity="company/acme",
                   fields={"employee_count": 332, "name": "Acme", "ratio": 0.5, "active": True, "tags": ["a"],
                           "hq": {"city": "Leeds"}})


@pytest.fixture
def based(make_repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """One company with a field of every JSON type, committed; in-process writers get the same
    pinned identity as the processes the tests start."""
    repo = make_repo()
    for key in [k for k in os.environ if k.startswith(("GIT_", "OBSREPO_"))]:
        monkeypatch.delenv(key)
    for key, value in repo.env.items():
        monkeypatch.setenv(key, value)
    repo.add(ACME)
    repo.commit("base")
    return repo


def run_json(repo: Repo, *args: str) -> tuple[int, Any]:
    proc = repo.obsrepo(*args, "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def proposal_tip(repo: Repo) -> str:
    return repo.run("git", "rev-parse", "-q", "--verify", PROPOSALS, check=False).stdout.strip()


def committed_fields(repo: Repo, result: dict[str, Any]) -> dict[str, Any]:
    """The `fields` of the document a --commit answer names, as YAML reads them back."""
    text = repo.git("show", f"{result['commit']}:{result['path']}")
    front = text.removeprefix("---\n").split("\n---")[0]
    return yaml.safe_load(front)["fields"]


def test_a_string_over_a_number_is_refused_and_nothing_is_written(based: Repo) -> None:
    before = fingerprint(based, PROPOSALS)
    code, out = run_json(based, "correct", "company/acme", "employee_count", '"333"', "--reason", "typed", "--commit")
    assert code == 1, out
    error = out["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert [(i["code"], i["rule"]) for i in error["details"]["issues"]] == [("VALIDATION_ERROR", "type-change")]
    for word in ("employee_count", "a number", "a string", "--allow-type-change", "allow_type_change"):
        assert word in error["message"], (word, error["message"])
    # the text mode says the same, and the work tree mode writes nothing either
    proc = based.obsrepo("correct", "company/acme", "employee_count", '"333"', "--reason", "typed")
    assert proc.returncode == 1 and "[type-change]" in proc.stderr and "Traceback" not in proc.stderr
    assert fingerprint(based, PROPOSALS) == before and proposal_tip(based) == ""
    assert based.git("status", "--porcelain", "--untracked-files=all") == ""


def test_allow_type_change_accepts_the_new_type(based: Repo) -> None:
    code, out = run_json(based, "correct", "company/acme", "employee_count", '"333"', "--reason", "text now",
                         "--commit", "--allow-type-change")
    assert code == 0, out
    assert committed_fields(based, out) == {"employee_count": "333"}
    assert proposal_tip(based) == out["commit"]


def test_null_and_the_same_type_pass_without_the_flag(based: Repo) -> None:
    # integers and decimals are both numbers; null clears and is never a type change
    for field, value, expected in (("employee_count", "333", 333), ("employee_count", "332.5", 332.5),
                                   ("ratio", "1", 1), ("name", "Acme Ltd", "Acme Ltd"), ("active", "false", False),
                                   ("tags", '["b"]', ["b"]), ("hq", '{"city": "York"}', {"city": "York"}),
                                   ("name", "null", None)):
        code, out = run_json(based, "correct", "company/acme", field, value, "--reason", "fix", "--commit")
        assert code == 0, (field, value, out)
        assert committed_fields(based, out) == {field: expected}


@pytest.mark.parametrize(("field", "value", "now", "given"), [
    ("employee_count", "333", "number", "string"),
    ("employee_count", True, "number", "boolean"),
    ("name", 5, "string", "number"),
    ("name", ["Acme"], "string", "array"),
    ("active", "yes", "boolean", "string"),
    ("tags", "a", "array", "string"),
    ("hq", ["Leeds"], "object", "array"),
    ("ratio", {"v": 0.5}, "number", "object"),
])
def test_the_library_refuses_each_change_of_json_type(based: Repo, field: str, value: Any, now: str, given: str) -> None:
    writer = Repository(str(based.path))
    with pytest.raises(InputError) as refused:
        writer.correct("company/acme", field, value, reason="drift")
    envelope = refused.value.envelope()["error"]
    assert refused.value.exit_code == 1
    assert [i["rule"] for i in envelope["details"]["issues"]] == ["type-change"]
    assert f"is {'an' if now[0] in 'ao' else 'a'} {now}" in envelope["message"] and given in envelope["message"]
    assert proposal_tip(based) == ""
    allowed = writer.correct("company/acme", field, value, reason="drift", allow_type_change=True)
    assert committed_fields(based, allowed) == {field: value}


def test_time_options_take_unix_milliseconds_as_digits(based: Repo) -> None:
    later = observation("obs-20260213-163000-0002", entity="company/acme", fields={"name": "Acme 2"})
    based.add(later)
    based.commit("later")
    ms = "1771000000000"  # 2026-02-13T16:26:40Z: between the two observations
    for command in (("query",), ("timeline",)):
        by_digits = run_json(based, *command, "--after", ms)
        assert by_digits == run_json(based, *command, "--after", "2026-02-13T16:26:40Z"), command
        assert by_digits[0] == 0
    assert [o["id"] for o in run_json(based, "query", "--after", ms)[1]["observations"]] == [later.id]
    assert run_json(based, "snapshot", "company/acme", "--as-of", ms)[1]["snapshot"]["name"] == "Acme"
    for bad in (f"{ms}x", "1771000000000.5", "１７７１", "253402300800000", "9" * 5000):
        code, out = run_json(based, "timeline", "--after", bad)
        assert code == 2 and out["error"]["code"] == "VALIDATION_ERROR", (bad, out)
        assert out["error"]["details"]["parameter"] == "--after", bad
    code, out = run_json(based, "timeline", "--before", "253402300799999")  # the last millisecond of 9999
    assert code == 0, out


def test_digits_that_read_as_a_year_or_a_date_are_refused_not_taken_for_1970(based: Repo) -> None:
    """`--after 2026` or `--after 20260213` would otherwise mean a moment of 1970-01-01."""
    for ambiguous in ("2026", "202602", "20260213"):
        code, out = run_json(based, "query", "--after", ambiguous)
        assert code == 2 and out["error"]["details"]["parameter"] == "--after", (ambiguous, out)
        assert "2026-02-13" in out["error"]["message"]
    code, out = run_json(based, "query", "--after", "100000000")  # 1970-01-02T03:46:40Z: nine digits are milliseconds
    assert code == 0, out

"""`obsrepo new`: valid documents from flags or JSON, the same codes as `check` on refusal."""

import json
import os
from datetime import datetime, timezone

import pytest
from helpers import in_process, observation
from hypothesis import given, settings
from hypothesis import strategies as st
from obsrepo import ops
from obsrepo.errors import ObsrepoError
from obsrepo.format import emit
from obsrepo.format.document import read_document
from obsrepo.gitstore import Git


def run(cwd, *args, input=None):
    return in_process(args, cwd=cwd, env=dict(os.environ), input=input)


def test_new_from_flags_writes_a_document_that_checks(repo):
    tmp_path = repo.path  # a git repository: `check` checks one
    proc = run(tmp_path, "new", "--source", "agent/crm", "--event", "Acme registered",
               "--entity", "company/acme", "--field", "name=Acme Corp", "--field", "country=NO",
               "--field", "employees=120", "--field", "zip=0755", "--tenant", "org=northwind,project=finance",
               "--timestamp", "2026-02-01T10:00:00+01:00", "--body", "# Acme\nRegistered.", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    created = json.loads(proc.stdout)
    assert created["path"] == f"observations/2026/02/01/{created['id']}.md"
    assert created["id"].startswith("obs-20260201-090000-")
    assert created["id"].endswith(created["content_hash"][:8])
    doc = read_document(created["path"], (tmp_path / created["path"]).read_bytes())
    assert doc.issues == []
    assert doc.front["fields"] == {"name": "Acme Corp", "country": "NO", "employees": 120, "zip": "0755"}
    assert doc.front["timestamp"] == "2026-02-01T09:00:00Z"
    assert doc.front["tenant"] == {"org": "northwind", "project": "finance"}
    checked = repo.obsrepo("check")
    assert checked.returncode == 0, checked.stderr


def test_same_content_twice_is_refused_and_nothing_is_written(repo):
    tmp_path = repo.path  # `new` writes into a git repository only
    payload = json.dumps({"source": "agent:x", "event": "task 42 done", "timestamp": "2026-03-01T00:00:00Z",
                          "scope": ["task/42"], "body": "Done."})
    first = run(tmp_path, "new", "--json", "-", input=payload)
    assert first.returncode == 0, first.stderr
    second = run(tmp_path, "new", "--json", "-", "--format", "json", input=payload)
    assert second.returncode == 1
    assert json.loads(second.stdout)["error"]["code"] == "DUPLICATE_CONTENT"
    assert len(list(tmp_path.rglob("*.md"))) == 1


def test_invalid_input_is_refused_with_codes_and_locations(repo):
    tmp_path = repo.path  # `new` writes into a git repository only
    payload = json.dumps({"source": "agent x", "event": "two\nlines", "priority": "5", "fields": {"a": 1}})
    proc = run(tmp_path, "new", "--json", "-", "--format", "json", input=payload)
    assert proc.returncode == 1
    issues = json.loads(proc.stdout)["error"]["details"]["issues"]
    assert {i["rule"] for i in issues} >= {"invalid-format", "event-one-line", "wrong-type"}
    assert all(i["line"] >= 1 and i["col"] >= 1 for i in issues)
    assert not list(tmp_path.rglob("*.md"))


def test_new_refuses_an_id_and_a_correction_of_nothing(repo):
    tmp_path = repo.path  # `new` writes into a git repository only
    proc = run(tmp_path, "new", "--json", "-", "--format", "json",
               input=json.dumps({"id": "obs-1", "source": "a", "event": "e"}))
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["details"]["parameter"] == "id"
    proc = run(tmp_path, "new", "--source", "human/alice", "--event", "fix", "--corrects", "obs-missing",
               "--format", "json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == "REF_NOT_FOUND"


def test_bad_json_and_missing_flags_are_usage_or_input_errors(tmp_path):
    proc = run(tmp_path, "new", "--json", "-", "--format", "json", input="{not json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == "VALIDATION_ERROR"
    proc = run(tmp_path, "new", "--event", "x", "--format", "json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["details"]["parameter"] == "--source"
    proc = run(tmp_path, "new", "--source", "a", "--event", "x", "--priority", "high")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


text_without_nul = st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")  # NUL is refused in any key or value
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(text_without_nul, max_size=30))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(text_without_nul, min_size=1, max_size=10), inner, max_size=4)),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), json_value, max_size=6))
def test_emitted_yaml_reads_back_to_the_same_values(fields):
    text = emit.document({"spec": "observation/v1", "data": fields}, "body")
    doc = read_document("x.md", text.encode("utf-8", "surrogatepass"))
    if any(isinstance(c, str) and any(0xD800 <= ord(ch) <= 0xDFFF for ch in c) for c in [text]):
        return
    assert [i for i in doc.issues if i.rule != "encoding-utf8"] == []
    if not doc.issues:
        assert doc.front["data"] == fields


def test_a_timestamp_that_is_not_text_is_refused_by_name_and_nothing_is_written(repo) -> None:
    """A library caller may hand in a datetime or a number: refused naming the field (a datetime
    was a TypeError from the emitter)."""
    for stamp in (datetime(2026, 2, 1, tzinfo=timezone.utc), 1769904000):
        with pytest.raises(ObsrepoError) as refused:
            ops.run(ops.Session(str(repo.path)), ops.New({"source": "agent/x", "event": "e", "timestamp": stamp}, "", ops.WorkTree()))
        assert (refused.value.code, refused.value.details["parameter"]) == ("VALIDATION_ERROR", "timestamp")
    assert not (repo.path / "observations").exists()


def _checked(repo) -> tuple[int, str]:
    """(documents the check read and analysed, its stderr): OBSREPO_DEBUG has it say how many."""
    import re

    done = repo.obsrepo("check", env={"OBSREPO_DEBUG": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    return int(re.search(r"read (\d+) of", done.stderr).group(1)), done.stderr


def test_check_finds_the_document_new_wrote_analysed_and_folds_it_into_its_cache(repo) -> None:
    from obsrepo.gate import cache

    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    assert _checked(repo)[0] == 1  # the cache warm
    written = repo.path / ".git" / "obsrepo" / "check-cache.written.marshal"
    for n in range(3):
        done = repo.obsrepo("new", "--source", "agent/x", "--event", f"seen {n}", "--entity", f"task/{n}", "--field", "n=1")
        assert done.returncode == 0, done.stderr
        assert _checked(repo)[0] == 0  # new analysed it: check reads nothing again
    assert written.exists()  # the large cache was not rewritten for them
    repo.add(observation("obs-20260102-090000-0002", "2026-01-02T09:00:00Z"))
    assert _checked(repo)[0] == 1  # a document check analyses: the cache is rewritten, the written ones folded in
    assert not written.exists()
    assert _checked(repo)[0] == 0
    store = cache.AnalysisCache.open(Git(str(repo.path)))
    assert len(store.entries) == 5 and not store.written


def test_a_damaged_file_of_written_analyses_is_ignored(repo) -> None:
    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    done = repo.obsrepo("new", "--source", "agent/x", "--event", "seen", "--entity", "task/1", "--field", "n=1")
    assert done.returncode == 0, done.stderr
    written = repo.path / ".git" / "obsrepo" / "check-cache.written.marshal"
    written.write_bytes(written.read_bytes()[:-9])
    assert _checked(repo)[0] == 2  # nothing in the cache yet: both read, none from the damaged file

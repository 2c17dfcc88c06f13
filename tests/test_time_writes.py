"""The period of valid time on the write path (docs/design.md §19): `new` and `correct` take
`--valid-from`/`--valid-until`, the MCP write tools `valid_from`/`valid_until`; what they write
is `valid: {from, until}` in UTC and passes `check`."""

from __future__ import annotations

import json

from helpers import Repo, observation
from obsrepo.format.document import read_document
from obsrepo.mcp.tools import all_tools
from obsrepo.ops import Session


def _front(repo: Repo, path: str) -> dict:
    return read_document(path, (repo.path / path).read_bytes()).front


def _base(repo: Repo) -> None:
    repo.add(observation("obs-20260101-000000-0001", entity="contract/c1", fields={"price": 100}))
    repo.commit("base")


def test_new_writes_the_period_in_utc_and_it_checks(repo: Repo) -> None:
    _base(repo)
    proc = repo.obsrepo("new", "--source", "agent/crm", "--event", "Price for March", "--entity", "contract/c1",
                        "--field", "price=120", "--valid-from", "2026-03-01T00:00:00+01:00",
                        "--valid-until", "2026-04-01", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    assert _front(repo, written["path"])["valid"] == {"from": "2026-02-28T23:00:00Z", "until": "2026-04-01T00:00:00Z"}
    assert repo.obsrepo("check").returncode == 0


def test_new_refuses_a_period_that_ends_before_it_starts(repo: Repo) -> None:
    _base(repo)
    proc = repo.obsrepo("new", "--source", "agent/crm", "--event", "Backwards", "--entity", "contract/c1",
                        "--field", "price=1", "--valid-from", "2026-04-01", "--valid-until", "2026-03-01",
                        "--format", "json")
    assert proc.returncode == 1
    assert "valid-range" in proc.stdout + proc.stderr
    assert not list((repo.path / "observations").rglob("*.md"))[1:]  # nothing written beside the base


def test_new_refuses_a_period_given_twice(repo: Repo) -> None:
    _base(repo)
    given = json.dumps({"source": "agent/x", "event": "Twice", "valid": {"from": "2026-03-01T00:00:00Z"}})
    tools = all_tools()
    failure = None
    try:
        tools["record_observation"].call(Session(str(repo.path)), {"observation": json.loads(given),
                                                                   "valid_until": "2026-04-01T00:00:00Z"})
    except Exception as exc:  # noqa: BLE001 - the tool's refusal, whatever its class
        failure = exc
    assert failure is not None and "given twice" in str(failure)


def test_correct_takes_a_period(repo: Repo) -> None:
    _base(repo)
    proc = repo.obsrepo("correct", "contract/c1", "price", "110", "--reason", "March was discounted",
                        "--valid-from", "2026-03-01T00:00:00Z", "--valid-until", "2026-04-01T00:00:00Z",
                        "--format", "json")
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    front = _front(repo, written["path"])
    assert front["valid"] == {"from": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"}
    assert front["priority"] == 1000


def test_mcp_record_observation_and_correct_field_take_valid_from_and_until(repo: Repo) -> None:
    _base(repo)
    tools = all_tools()
    for name in ("record_observation", "correct_field"):
        schema = tools[name].input_schema
        assert {"valid_from", "valid_until"} <= set(schema["properties"]), name
    session = Session(str(repo.path))
    answer = tools["record_observation"].call(session, {
        "observation": {"source": "agent/x", "event": "April price", "entity": "contract/c1", "fields": {"price": 130}},
        "valid_from": "2026-04-01T00:00:00Z"})
    result = answer if isinstance(answer, dict) else json.loads(str(answer))
    text = repo.git("show", f"{result['commit']}:{result['path']}")
    assert read_document(result["path"], text.encode()).front["valid"] == {"from": "2026-04-01T00:00:00Z"}
    corrected = tools["correct_field"].call(session, {"entity_id": "contract/c1", "field": "price", "value": 99,
                                                      "reason": "Typo", "valid_until": "2026-05-01T00:00:00Z"})
    result = corrected if isinstance(corrected, dict) else json.loads(str(corrected))
    text = repo.git("show", f"{result['commit']}:{result['path']}")
    assert read_document(result["path"], text.encode()).front["valid"] == {"until": "2026-05-01T00:00:00Z"}

"""Valid time and identity under hostile input (docs/design.md §19, §20, §8b): every view of the
identity queue reduces the same snapshots as every other read, a bound caller learns nothing of
another tenant, and values at the edges of every range are located problems, never crashes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, observation

NORTHWIND = {"org": "northwind"}

PERIODS = [
    # person/a was "Carol Jones" until 2026; person/b still is
    observation("obs-20250101-000000-0001", entity="person/a", fields={"name": "Carol Jones"},
                valid={"until": "2026-01-01T00:00:00Z"}, tenant=NORTHWIND),
    observation("obs-20250101-000000-0002", entity="person/b", fields={"name": "Carol Jones"}, tenant=NORTHWIND),
    observation("obs-20260101-000000-0003", entity="person/a", fields={"name": "Zygmunt Brzeczyszczykiewicz"},
                tenant=NORTHWIND),
    # person/c was "Eve Old" in 2019 only (recorded in 2026); person/d is "Eve Old" now
    observation("obs-20260101-000000-0004", entity="person/c", fields={"name": "Eve Old"},
                valid={"from": "2019-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"}, tenant=NORTHWIND),
    observation("obs-20260101-000000-0005", entity="person/d", fields={"name": "Eve Old"}, tenant=NORTHWIND),
]


@pytest.fixture(scope="module")
def periods(make_module_repo: Callable[..., Repo]) -> Repo:
    made = make_module_repo()
    made.add(*PERIODS)
    made.commit("people with periods")
    return made


def _json(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _pairs(repo: Repo, *args: str) -> list[list[str]]:
    return [c["entities"] for c in _json(repo, "identities", "--format", "json", *args)["candidates"]]


def test_a_bound_identity_queue_counts_periods_as_the_unbound_one_does(periods: Repo) -> None:
    # at the commit's time, c's 2019 name has ended: neither view pairs it with d
    assert _json(periods, "snapshot", "person/c", "--format", "json")["snapshot"] == {}
    assert _pairs(periods) == []
    assert _pairs(periods, "--tenant", "org=northwind") == []


@pytest.mark.parametrize(("moment", "expected"), [
    ("2025-06-01", [["person/a", "person/b"]]),  # a was Carol Jones then
    ("2019-06-01", []),  # c was Eve Old, d was not yet observed
    ("2026-06-01", []),  # c's period has ended; a is Zygmunt
])
def test_identities_as_of_counts_the_observations_whose_period_holds_it(periods: Repo, moment: str,
                                                                         expected: list[list[str]]) -> None:
    assert _pairs(periods, "--as-of", moment) == expected
    names = {e: _json(periods, "snapshot", f"person/{e}", "--as-of", moment)["snapshot"].get("name") for e in "abcd"}
    for first, second in expected:  # the pair's evidence is what snapshot --as-of says
        assert names[first.split("/")[1]] == names[second.split("/")[1]] is not None


GLOBEX = {"org": "globex"}
PEOPLE = [
    observation("obs-20260203-000000-0007", entity="person/alice", fields={"name": "Alice Smith"}, tenant=NORTHWIND),
    observation("obs-20260203-000000-0008", entity="person/alice2", fields={"name": "Alice Smyth"}, tenant=GLOBEX),
]


@pytest.fixture
def two_tenants(make_repo: Callable[..., Repo]) -> Repo:
    made = make_repo()
    made.add(*PEOPLE)
    made.commit("two tenants")
    return made


def test_a_bound_writer_cannot_declare_distinct_an_entity_it_cannot_see_on_either_side(two_tenants: Repo) -> None:
    repo = two_tenants
    before = repo.git("for-each-ref")
    said: dict[str, list[str]] = {}
    for other in ("person/alice2", "person/nobody"):  # another tenant's entity reads as a missing one
        for pair in ((other, "person/alice"), ("person/alice", other)):
            proc = repo.obsrepo("distinct", *pair, "--reason", "not the same", "--tenant", "org=northwind",
                                "--commit", "--format", "json")
            assert proc.returncode == 1, proc.stdout + proc.stderr
            error = json.loads(proc.stdout)["error"]
            assert error["code"] == "ENTITY_NOT_FOUND" and error["details"]["issues"][0]["rule"] == "relation-target"
            said.setdefault(other, []).append(error["message"].replace(other, "OTHER"))
    assert said["person/alice2"] == said["person/nobody"]
    assert repo.git("for-each-ref") == before  # nothing written


def test_a_pull_request_declaring_distinct_from_another_tenants_entity_is_refused(two_tenants: Repo) -> None:
    repo = two_tenants
    base = repo.sha()
    hostile = observation("obs-20260301-000000-0009", entity="person/alice2", tenant=NORTHWIND,
                          relations=[{"type": "DISTINCT_FROM", "target": "person/alice"}])
    repo.add(hostile)
    repo.commit("declare another tenant's entity distinct")
    result = repo.check("--base", base)
    assert result.returncode == 1, result
    assert result.issues == [("ENTITY_NOT_FOUND", "relation-target", hostile.path)]
    assert result.data["issues"][0]["line"] == 7  # the entity key


@pytest.mark.parametrize("key", ["c\u001b]0;owned\u0007", "c\u009b2J", "c\u007f", "al\u200bice", "\u202eecila",
                                 "a\u2066b", "\ufeffalice"])
def test_an_entity_id_with_a_control_character_or_an_invisible_mark_is_a_located_problem(repo: Repo, key: str) -> None:
    # a terminal obeys the one (text answers print entity ids as they are); the other makes two
    # different ids look the same to the steward who merges them
    about = observation("obs-20260213-102500-0001", entity=f"person/{key}", fields={"name": "x"})
    pointing = observation("obs-20260213-102500-0002", entity="person/bob",
                           relations=[{"type": "DISTINCT_FROM", "target": f"person/{key}"}])
    for doc in (about, pointing):  # escaped, as YAML takes them: a raw C1 or DEL is a YAML error already
        repo.write(doc.path, doc.replace(key, "".join(c if " " < c < "\x7f" else f"\\u{ord(c):04x}" for c in key)))
    result = repo.check()
    assert result.returncode == 1, result
    assert ("VALIDATION_ERROR", "invalid-format", about.path) in result.issues
    assert ("VALIDATION_ERROR", "invalid-format", pointing.path) in result.issues
    lines = {i["path"]: i["line"] for i in result.data["issues"] if i["rule"] == "invalid-format"}
    assert lines == {about.path: 7, pointing.path: 8}  # the entity key; the relations


def test_a_readable_key_in_any_script_stays_valid(repo: Repo) -> None:
    repo.add(observation("obs-20260213-102500-0001", entity="person/josé-日本:x@y", fields={"name": "x"}))
    assert repo.check().returncode == 0


@pytest.mark.parametrize(("date", "valid_at"), [
    ("@99999999999999 +0000", "9999-12-31T23:59:59Z"),  # year 3170843: the range's end
    ("@253402300800 +0000", "9999-12-31T23:59:59Z"),  # the first second of year 10000
    ("@1700000000 +9959", "2023-11-14T22:13:20Z"),  # an offset of four days: the instant stands
    ("@1700000000 -9959", "2023-11-14T22:13:20Z"),
])
def test_a_commit_dated_outside_the_range_stops_no_read(repo: Repo, date: str, valid_at: str) -> None:
    # git records any committer time and offset; the commit's time is the valid time of every
    # read without --as-of (§19), so a pushed commit must not turn every read into exit 5
    repo.add(*PERIODS)
    repo.env = {**repo.env, "GIT_COMMITTER_DATE": date}
    repo.commit("a commit from far away")
    assert repo.obsrepo("index").returncode == 0
    assert _json(repo, "snapshot", "person/a")["valid_at"] == valid_at
    assert _json(repo, "contested")["valid_at"] == valid_at
    assert _json(repo, "intervals", "person/a")["at_commit"] == repo.sha()
    assert _json(repo, "identities", "--format", "json", "--tenant", "org=northwind")["at_commit"] == repo.sha()
    assert _json(repo, "history", "person/a", "--format", "json")["changes"]


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_blank_reason_is_refused_on_the_command_line_as_over_mcp(two_tenants: Repo, reason: str) -> None:
    repo = two_tenants
    for args in (["distinct", "person/alice", "person/bob"], ["merge", "person/alice2", "person/alice"],
                 ["retract", "obs-20260203-000000-0007"]):
        proc = repo.obsrepo(*args, "--reason", reason, "--format", "json")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["error"]["details"] == {"parameter": "--reason"}
    assert repo.git("status", "--porcelain") == ""  # nothing written


@pytest.mark.parametrize("args", [["contested", "--type", "contract\x00"], ["contested", "--type", "x'\x00", "--window", "2d"],
                                  ["contested", "--entity", "contract/c\x00"], ["query", "--scope", "deal/d\x00"],
                                  ["identities", "--type", "person\x00", "--format", "json"]],
                         ids=["contested-type", "contested-type-computed", "contested-entity", "query-scope", "identities-type"])
def test_a_nul_in_a_filter_is_a_value_that_matches_nothing(periods: Repo, args: list[str]) -> None:
    proc = periods.obsrepo(*args, "--format", "json") if "--format" not in args else periods.obsrepo(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer = json.loads(proc.stdout)
    assert answer.get("total", 0) == 0 and not answer.get("contests") and not answer.get("observations")


def test_a_period_finer_than_microseconds_is_refused_not_cut(repo: Repo) -> None:
    repo.add(*PERIODS)
    repo.commit("people")
    proc = repo.obsrepo("new", "--source", "agent/x", "--event", "priced", "--entity", "contract/c9", "--field", "price=1",
                        "--valid-from", "2026-03-01T00:00:00.123456789Z", "--format", "json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error"]["details"] == {"parameter": "--valid-from"}
    assert repo.git("status", "--porcelain") == ""  # nothing written
    assert repo.obsrepo("contested", "--as-of", "2026-03-01T00:00:00.1234567+01:00").returncode == 2
    six = _json(repo, "snapshot", "person/b", "--as-of", "2026-03-01T00:00:00.123456+01:00")
    assert six["valid_at"] == "2026-02-28T23:00:00.123456Z"


def test_huge_values_do_not_hold_the_identity_queue(repo: Repo) -> None:
    # an edit distance takes time in the product of the lengths: three pairs of 40 kB codes held
    # every index build for a quarter of a minute; values are compared on their first characters
    import random
    import time

    rng = random.Random(7)
    repo.write("schemas/entities/thing.yaml", "spec: entity-schema/v1\ntype: thing\nidentity:\n  compare:\n"
                                              "    label: {method: name}\n    code: {method: code}\n")
    code = "".join(rng.choice("abcdefghij") for _ in range(40_000))
    repo.add(*(observation(f"obs-20260213-102500-000{n}", entity=f"thing/t{n}", fields={"label": "Same", "code": code + str(n)})
               for n in range(1, 4)))
    repo.commit("three things with huge codes")
    started = time.monotonic()
    assert repo.obsrepo("index").returncode == 0
    assert time.monotonic() - started < 8
    pairs = _json(repo, "identities", "--format", "json")["candidates"]
    assert len(pairs) == 3 and all(p["score"] == 1.0 for p in pairs)  # the same first characters, the same label


def test_a_declaration_of_distinctness_has_no_period(two_tenants: Repo) -> None:
    # the queue drops a declared pair for good and check bars its merge for good: a period on it
    # would say what no reader does
    repo = two_tenants
    repo.add(observation("obs-20260203-000000-0009", entity="person/bob", fields={"name": "Bob"}, tenant=NORTHWIND))
    repo.commit("bob")
    bounded = observation("obs-20260301-000000-0010", entity="person/alice", tenant=NORTHWIND,
                          relations=[{"type": "DISTINCT_FROM", "target": "person/bob"}],
                          valid={"from": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"})
    repo.add(bounded)
    result = repo.check()
    assert result.returncode == 1, result
    assert result.issues == [("VALIDATION_ERROR", "valid-on-merge", bounded.path)]

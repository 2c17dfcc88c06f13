"""Contested values (docs/design.md §19) as a pure function: each sentence of the definition, and
properties that must hold for every input."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obsrepo.format.contested import entity_contests, field_contest, parse_window, same_json
from obsrepo.format.reduce import Obs, reduce_entity

E = "contract/c1"


def obs(id, ts, fields, source="agent/a", priority=100, specificity=0.0, entity=E, **kw):
    return Obs(id=id, timestamp=ts, entity=entity, fields=fields, priority=priority, specificity=specificity,
               source=source, **kw)


CRM = obs("obs-a", "2026-03-01T09:00:00Z", {"price": 100}, source="agent/crm")
SALES = obs("obs-b", "2026-03-01T15:00:00Z", {"price": 120}, source="agent/sales")


def contested(observations, policies=None, window=86400, **kw):
    return {c["field"]: c for c in entity_contests(E, observations, policies, window, **kw)}


def test_two_sources_on_the_same_day_contest_and_the_timestamp_decided():
    [contest] = entity_contests(E, [CRM, SALES])
    assert contest["entity_id"] == E and contest["field"] == "price" and contest["policy"] == "highest_priority"
    assert contest["decided_by"] == "timestamp"
    assert contest["winner"] == {"observation_id": "obs-b", "value": 120, "source": "agent/sales",
                                 "from": "2026-03-01T15:00:00Z", "priority": 100, "specificity": 0.0}
    assert [c["observation_id"] for c in contest["challengers"]] == ["obs-a"]


def test_decided_by_names_the_first_rank_key_that_differs():
    sharper = obs("obs-c", "2026-03-01T09:00:00Z", {"price": 90}, source="agent/x", specificity=0.5)
    assert contested([CRM, sharper])["price"]["decided_by"] == "specificity"
    twin = obs("obs-0", "2026-03-01T09:00:00Z", {"price": 90}, source="agent/x")
    assert contested([CRM, twin])["price"]["decided_by"] == "id"
    assert contested([CRM, SALES], {"price": "last_write"})["price"]["decided_by"] == "timestamp"


@pytest.mark.parametrize("settler", [
    obs("obs-fix", "2026-03-02T00:00:00Z", {"price": 110}, source="human/alice", priority=1000),  # a correction
    obs("obs-late", "2026-03-09T00:00:00Z", {"price": 130}, source="agent/crm"),  # later, outside the window
])
def test_a_correction_or_a_later_observation_settles(settler):
    assert contested([CRM, SALES, settler]) == {}


def test_a_retraction_and_an_ended_period_settle():
    retraction = obs("obs-r", "2026-03-02T00:00:00Z", {}, source="agent/crm", entity=None, retracts=("obs-a",))
    assert contested([CRM, SALES, retraction]) == {}
    ended = obs("obs-a", "2026-03-01T09:00:00Z", {"price": 100}, source="agent/crm", valid_until="2026-03-05T00:00:00Z")
    assert "price" in contested([ended, SALES], valid_at="2026-03-04T00:00:00Z")
    assert contested([ended, SALES], valid_at="2026-03-06T00:00:00Z") == {}
    assert contested([ended, SALES], as_of="2026-03-06T00:00:00Z") == {}


def test_same_source_equal_values_other_priorities_and_merged_arrays_never_contest():
    assert contested([CRM, obs("obs-b", SALES.timestamp, {"price": 120}, source="agent/crm")]) == {}
    assert contested([CRM, obs("obs-b", SALES.timestamp, {"price": 100.0}, source="agent/sales")]) == {}
    assert contested([CRM, obs("obs-b", SALES.timestamp, {"price": 120}, source="agent/sales", priority=0)]) == {}
    assert contested([CRM, SALES], {"price": "merge_array"}) == {}


def test_the_window():
    far = obs("obs-b", "2026-03-03T09:00:00Z", {"price": 120}, source="agent/sales")
    assert contested([CRM, far]) == {}
    assert "price" in contested([CRM, far], window=2 * 86400)
    assert contested([CRM, SALES], window=0) == {}
    same = obs("obs-b", "2026-03-01T10:00:00Z", {"price": 120}, source="agent/sales", valid_from="2026-03-01T09:00:00Z")
    assert "price" in contested([CRM, same], window=0)  # the effective from, not the timestamp
    assert [parse_window(w) for w in ("0", "30s", "5m", "2h", "1d")] == [0, 30, 300, 7200, 86400]
    for bad in ("", "1", "1w", "-1d", "1.5h", "d"):
        with pytest.raises(ValueError):
            parse_window(bad)


def test_a_deleted_entity_has_no_contest_and_json_equality():
    gone = obs("obs-d", "2026-03-02T00:00:00Z", {"_deleted": True}, source="agent/crm")
    assert contested([CRM, SALES, gone]) == {}
    assert same_json({"a": 1, "b": [1.0]}, {"b": [1], "a": 1}) and not same_json(True, 1) and not same_json(None, 0)


# --- properties -------------------------------------------------------------------------------

day = st.integers(0, 6).map(lambda d: f"2026-01-0{d + 1}T{d * 3:02d}:00:00Z")
value = st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["a", "b"]), st.booleans())
observation = st.builds(
    lambda n, ts, fields, priority, specificity, source: obs(f"obs-{n}", ts, fields, source, priority, specificity),
    st.integers(0, 40), day, st.dictionaries(st.sampled_from(["a", "b", "tags"]), value, min_size=1, max_size=2),
    st.sampled_from([0, 100, 100, 100]), st.sampled_from([0.0, 0.0, 0.5]), st.sampled_from(["s1", "s2", "s3"]))
observations = st.lists(observation, max_size=10, unique_by=lambda o: o.id)
policy = st.sampled_from(["highest_priority", "last_write", "most_specific", "merge_array"])
window = st.sampled_from([0, 3600, 86400, 3 * 86400])


@settings(max_examples=200, deadline=None)
@given(observations, policy, window, st.randoms(use_true_random=False))
def test_permuting_the_inputs_gives_the_same_contests(items, chosen, width, rnd):
    policies = {"a": chosen}
    first = json.dumps(entity_contests(E, items, policies, width))
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert json.dumps(entity_contests(E, shuffled, policies, width)) == first


@settings(max_examples=200, deadline=None)
@given(observations, policy, window)
def test_the_reducer_still_decides(items, chosen, width):
    policies = {"a": chosen}
    snap = reduce_entity(E, items, policies)
    for contest in entity_contests(E, items, policies, width):
        field = contest["field"]
        assert contest["winner"]["observation_id"] == snap["provenance"].get(field, contest["winner"]["observation_id"])
        assert all(c["source"] != contest["winner"]["source"] for c in contest["challengers"])
        assert all(c["priority"] == contest["winner"]["priority"] for c in contest["challengers"])
        assert all(not same_json(c["value"], contest["winner"]["value"]) for c in contest["challengers"])


@settings(max_examples=200, deadline=None)
@given(observations, policy, window, st.sampled_from(["a", "b"]))
def test_adding_a_correction_always_settles(items, chosen, width, field):
    fix = obs("obs-fix", "2026-01-09T00:00:00Z", {field: 7}, "s9", priority=1000)
    assert field not in contested(items + [fix], {"a": chosen}, width)


@settings(max_examples=200, deadline=None)
@given(observations, policy, window)
def test_one_source_never_contests(items, chosen, width):
    alone = [Obs(**{**o.__dict__, "source": "s1"}) for o in items]
    assert entity_contests(E, alone, {"a": chosen}, width) == []


@settings(max_examples=200, deadline=None)
@given(observations, policy, window)
def test_retracting_the_challengers_settles_and_a_wider_window_only_adds(items, chosen, width):
    policies = {"a": chosen}
    found = contested(items, policies, width)
    wider = contested(items, policies, width + 86400)
    assert set(found) <= set(wider)
    for field, contest in found.items():
        withdrawn = [obs(f"obs-r{i}", "2026-01-09T00:00:00Z", {}, "s1", entity=None, retracts=(c["observation_id"],))
                     for i, c in enumerate(contest["challengers"])]
        assert field not in contested(items + withdrawn, policies, width)


def test_field_contest_over_candidates_directly():
    assert field_contest("price", "highest_priority", [], 86400) is None
    shuffled = [CRM, SALES]
    random.Random(3).shuffle(shuffled)
    assert field_contest("price", "highest_priority", shuffled, 86400)["winner"]["observation_id"] == "obs-b"


# --- the SQL path equals the definition ---------------------------------------------------------

def _epoch(instant):
    from datetime import datetime

    return None if instant is None else int(datetime.fromisoformat(instant.replace("Z", "+00:00")).timestamp() * 1_000_000)


def _sql_contests(items, policies, width, as_of=None, valid_at=None):
    import duckdb
    from obsrepo.index.engine import load_fts  # noqa: F401 - same DuckDB build as the index
    from obsrepo.index.sqlcontest import contests_all

    con = duckdb.connect()
    con.execute("CREATE TABLE c (id VARCHAR, entity VARCHAR, priority INTEGER, specificity DOUBLE, epoch BIGINT, "
                "ts VARCHAR, fields JSON, vfrom BIGINT, vuntil BIGINT, source VARCHAR, vfrom_ts VARCHAR)")
    rows = [(o.id, o.entity, o.priority, o.specificity, _epoch(o.timestamp), o.timestamp, json.dumps(o.fields),
             _epoch(o.valid_from), _epoch(o.valid_until), o.source, o.valid_from) for o in items]
    if rows:
        con.executemany("INSERT INTO c VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    table_policies = {("contract", field): policy for field, policy in policies.items()}
    return contests_all(con, "c", [], list(items), table_policies, width, as_of=as_of, valid_at=valid_at)


special = st.one_of(
    st.builds(lambda i, ts: obs(f"obs-m{i}", ts, {}, entity="contract/dup", relations=(("DUPLICATE_OF", E),)),
              st.integers(0, 2), day),
    st.builds(lambda i, ts, target: obs(f"obs-r{i}", ts, {}, entity=None, retracts=(f"obs-{target}",)),
              st.integers(0, 3), day, st.integers(0, 40)),
    st.builds(lambda i, ts, gone: obs(f"obs-d{i}", ts, {"_deleted": gone}, priority=100), st.integers(0, 2), day,
              st.booleans()),
)


@st.composite
def with_period(draw, base):
    o = draw(base)
    kind = draw(st.sampled_from(["none", "none", "from", "until", "both"]))
    start, end = sorted(draw(st.lists(st.integers(0, 7), min_size=2, max_size=2, unique=True)))
    when = "2026-01-0{}T00:00:00Z".format
    entity = draw(st.sampled_from([E, E, "contract/dup", "contract/c2"]))
    return Obs(**{**o.__dict__, "entity": entity,
                  "valid_from": when(start + 1) if kind in ("from", "both") else None,
                  "valid_until": when(end + 1) if kind in ("until", "both") else None})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(with_period(observation), special), max_size=12, unique_by=lambda o: o.id), policy, window,
       st.one_of(st.none(), day), st.one_of(st.none(), day))
def test_the_sql_path_equals_the_definition(items, chosen, width, as_of, valid_at):
    policies = {"a": chosen}
    expected = sorted((c for entity in sorted({o.entity for o in items if o.entity} | {E})
                       for c in entity_contests(entity, items, policies, width, as_of=as_of, valid_at=valid_at)
                       if c["entity_id"] == entity), key=lambda c: (c["entity_id"], c["field"]))
    assert _sql_contests(items, policies, width, as_of, valid_at) == expected

"""The reducer of docs/design.md §4: each rule, and order independence for all inputs."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from obsrepo.format.reduce import Obs, reduce_entity


def obs(id, ts, fields, priority=100, specificity=0.0, entity="company/acme", **kw):
    return Obs(id=id, timestamp=ts, entity=entity, fields=fields, priority=priority, specificity=specificity, **kw)


def test_priority_then_specificity_then_timestamp_then_id():
    a = obs("obs-a", "2026-01-01T00:00:00Z", {"phone": "A"}, priority=0, specificity=1.0)
    b = obs("obs-b", "2026-01-01T00:00:00Z", {"phone": "B"}, priority=100, specificity=0.1)
    c = obs("obs-c", "2026-01-02T00:00:00Z", {"phone": "C"}, priority=100, specificity=0.1)
    d = obs("obs-d", "2026-01-02T00:00:00Z", {"phone": "D"}, priority=100, specificity=0.1)
    snap = reduce_entity("company/acme", [a, b, c, d])
    assert snap["snapshot"] == {"phone": "C"}  # c and d tie on everything but id: ASC wins
    assert snap["provenance"] == {"phone": "obs-c"}
    assert snap["observation_count"] == 4 and snap["last_observation_at"] == "2026-01-02T00:00:00Z"
    assert snap["computed_at"] == snap["last_observation_at"]


def test_correction_beats_everything_under_every_policy_and_null_clears():
    base = obs("obs-a", "2026-03-01T00:00:00Z", {"tags": ["x"], "name": "Late"}, priority=5000 - 4001)
    newer = obs("obs-b", "2026-04-01T00:00:00Z", {"tags": ["y"], "name": "Newer"}, priority=100, specificity=1.0)
    fix = obs("obs-c", "2026-01-01T00:00:00Z", {"tags": [], "name": "Fixed"}, priority=1000)
    policies = {"tags": "merge_array", "name": "last_write"}
    snap = reduce_entity("company/acme", [base, newer, fix], policies)
    assert snap["snapshot"] == {"tags": [], "name": "Fixed"}
    cleared = obs("obs-d", "2026-05-01T00:00:00Z", {"name": None}, priority=100)
    assert "name" not in reduce_entity("company/acme", [newer, cleared], {"name": "last_write"})["snapshot"]


def test_policies():
    a = obs("obs-a", "2026-01-01T00:00:00Z", {"f": "a", "tags": ["x", "y"]}, priority=100, specificity=0.9)
    b = obs("obs-b", "2026-02-01T00:00:00Z", {"f": "b", "tags": ["y", "z"]}, priority=100, specificity=0.1)
    c = obs("obs-c", "2026-03-01T00:00:00Z", {"f": "c", "tags": ["w"]}, priority=0, specificity=1.0)
    def run(policy):
        return reduce_entity("company/acme", [a, b, c], {"f": policy, "tags": "merge_array"})
    assert run("highest_priority")["snapshot"]["f"] == "a"
    assert run("last_write")["snapshot"]["f"] == "c"
    assert run("most_specific")["snapshot"]["f"] == "c"
    merged = run("highest_priority")
    assert merged["snapshot"]["tags"] == ["x", "y", "z"]  # priority 100 only, winner order, no repeats
    assert merged["provenance"]["tags"] == ["obs-a", "obs-b"]


def test_deletion_gate_and_restore():
    made = obs("obs-a", "2026-01-01T00:00:00Z", {"status": "open"})
    gone = obs("obs-b", "2026-02-01T00:00:00Z", {"_deleted": True}, priority=1000)
    later = obs("obs-c", "2026-03-01T00:00:00Z", {"status": "paid"}, priority=1000)
    snap = reduce_entity("invoice/1", [made, gone, later])
    assert snap["deleted"] is False  # the entity is invoice/1; these are about company/acme
    snap = reduce_entity("company/acme", [made, gone, later])
    assert snap["deleted"] is True and snap["snapshot"] == {} and snap["provenance"] == {}
    back = obs("obs-d", "2026-04-01T00:00:00Z", {"_deleted": False}, priority=1000)
    restored = reduce_entity("company/acme", [made, gone, later, back])
    assert restored["deleted"] is False and restored["snapshot"] == {"status": "paid"}
    assert "_deleted" not in restored["snapshot"]


def test_retraction_merge_and_as_of():
    a = obs("obs-a", "2026-01-01T00:00:00Z", {"phone": "1"}, entity="company/dup")
    merge = obs("obs-m", "2026-01-05T00:00:00Z", {}, entity="company/dup", relations=(("DUPLICATE_OF", "company/acme"),))
    b = obs("obs-b", "2026-02-01T00:00:00Z", {"phone": "2"})
    wrong = obs("obs-w", "2026-03-01T00:00:00Z", {"phone": "3"})
    withdraw = obs("obs-r", "2026-03-02T00:00:00Z", {}, entity=None, retracts=("obs-w",))
    every = [a, merge, b, wrong, withdraw]
    snap = reduce_entity("company/dup", every)
    assert snap["entity_id"] == "company/acme" and snap["merged_from"] == "company/dup"
    assert snap["snapshot"] == {"phone": "2"}
    assert reduce_entity("company/acme", every, as_of="2026-01-31T00:00:00Z")["snapshot"] == {"phone": "1"}
    empty = reduce_entity("company/acme", every, as_of="2025-01-01T00:00:00Z")
    assert empty["observation_count"] == 0 and empty["snapshot"] == {} and empty["last_observation_at"] is None


stamp = st.integers(0, 5).map(lambda d: f"2026-01-0{d + 1}T00:00:0{d % 3}Z")
value = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b"]), st.lists(st.sampled_from("xyz"), max_size=3))
observation = st.builds(
    lambda i, ts, fields, p, s, e: obs(f"obs-{i}", ts, fields, priority=p, specificity=s, entity=e),
    st.integers(0, 10**6), stamp,
    st.dictionaries(st.sampled_from(["a", "b", "tags", "_deleted"]), value, max_size=3).map(
        lambda f: {k: (v if k != "_deleted" else bool(v)) for k, v in f.items()}),
    st.sampled_from([0, 100, 1000, 1001]), st.sampled_from([0.0, 0.5, 1.0]),
    st.sampled_from(["company/acme", "company/dup"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(observation, max_size=12, unique_by=lambda o: o.id), st.randoms(use_true_random=False),
       st.sampled_from(["highest_priority", "last_write", "most_specific", "merge_array"]))
def test_any_order_gives_byte_identical_json(observations, rnd, policy):
    policies = {"a": policy, "tags": "merge_array"}
    first = json.dumps(reduce_entity("company/acme", observations, policies, explain=True), sort_keys=False)
    shuffled = list(observations)
    rnd.shuffle(shuffled)
    assert json.dumps(reduce_entity("company/acme", shuffled, policies, explain=True), sort_keys=False) == first


# --- the SQL reducer equals the Python reference -------------------------------------------

def _epoch(instant):
    from datetime import datetime

    return None if instant is None else int(datetime.fromisoformat(instant.replace("Z", "+00:00")).timestamp() * 1_000_000)


def _sql_snapshots(observations, policies, as_of=None, valid_at=None):
    import duckdb
    from obsrepo.index.engine import load_fts  # noqa: F401 - same DuckDB build as the index
    from obsrepo.index.sqlreduce import reduce_all

    con = duckdb.connect()
    con.execute("CREATE TABLE c (id VARCHAR, entity VARCHAR, priority INTEGER, specificity DOUBLE, epoch BIGINT, "
                "ts VARCHAR, fields JSON, vfrom BIGINT, vuntil BIGINT)")
    rows = [(o.id, o.entity, o.priority, o.specificity, _epoch(o.timestamp), o.timestamp,
             json.dumps(o.fields), _epoch(o.valid_from), _epoch(o.valid_until)) for o in observations]
    if rows:
        con.executemany("INSERT INTO c VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    table_policies = {("company", field): policy for field, policy in policies.items()}
    return reduce_all(con, "c", [], list(observations), table_policies, as_of=as_of, valid_at=valid_at)


merge_or_retract = st.one_of(
    st.builds(lambda i, ts: obs(f"obs-m{i}", ts, {}, entity="company/dup", relations=(("DUPLICATE_OF", "company/acme"),)),
              st.integers(0, 3), stamp),
    st.builds(lambda i, ts, target: obs(f"obs-r{i}", ts, {}, entity=None, retracts=(f"obs-{target}",)),
              st.integers(0, 3), stamp, st.integers(0, 50)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(observation.map(lambda o: Obs(**{**o.__dict__, "id": f"obs-{int(o.id[4:]) % 51}"})),
                          merge_or_retract), max_size=14, unique_by=lambda o: o.id),
       st.sampled_from(["highest_priority", "last_write", "most_specific", "merge_array"]))
def test_sql_reducer_equals_the_python_reference(observations, policy):
    policies = {"a": policy, "tags": "merge_array"}
    in_sql = _sql_snapshots(observations, policies)
    entities = {o.entity for o in observations if o.entity}
    for entity in sorted(entities):
        reference = reduce_entity(entity, observations, policies)
        if reference.get("merged_from") or reference["observation_count"] == 0:
            assert entity not in in_sql or reference["observation_count"] == 0
            continue
        assert json.dumps(in_sql[entity]) == json.dumps(reference), entity


def test_deletion_gate_ignores_specificity():
    keep = obs("obs-1", "2026-01-01T00:00:00Z", {"_deleted": False}, specificity=0.5)
    drop = obs("obs-0", "2026-01-01T00:00:00Z", {"_deleted": True}, specificity=0.0)
    assert reduce_entity("company/acme", [keep, drop])["deleted"] is True  # id ASC breaks the tie


# --- valid time (docs/design.md §19): both reducers choose the same candidates -------------------

instant = st.integers(0, 7).map(lambda d: f"2026-01-0{d + 1}T00:00:00Z")


@st.composite
def with_period(draw, base):
    """An observation with a random period: none, from only, until only, or both (until after from)."""
    o = draw(base)
    kind = draw(st.sampled_from(["none", "none", "from", "until", "both"]))
    start, end = sorted(draw(st.lists(st.integers(0, 7), min_size=2, max_size=2, unique=True)))
    day = "2026-01-0{}T00:00:00Z".format
    return Obs(**{**o.__dict__, "valid_from": day(start + 1) if kind in ("from", "both") else None,
                  "valid_until": day(end + 1) if kind in ("until", "both") else None})


@settings(max_examples=200, deadline=None)
@given(st.lists(with_period(observation.map(lambda o: Obs(**{**o.__dict__, "id": f"obs-{int(o.id[4:]) % 51}"}))),
                max_size=14, unique_by=lambda o: o.id),
       st.sampled_from(["highest_priority", "last_write", "most_specific", "merge_array"]),
       st.one_of(st.none(), instant), instant)
def test_sql_reducer_equals_the_python_reference_with_periods(observations, policy, as_of, valid_at):
    policies = {"a": policy, "tags": "merge_array"}
    in_sql = _sql_snapshots(observations, policies, as_of=as_of, valid_at=valid_at)
    for entity in sorted({o.entity for o in observations if o.entity}):
        reference = reduce_entity(entity, observations, policies, as_of=as_of, valid_at=valid_at)
        if reference["observation_count"] == 0:
            assert entity not in in_sql
            continue
        assert json.dumps(in_sql[entity]) == json.dumps(reference), entity


def test_periods_decide_which_observations_count():
    always = obs("obs-a", "2026-01-01T00:00:00Z", {"price": 100})
    march = obs("obs-b", "2026-02-01T00:00:00Z", {"price": 120}, valid_from="2026-03-01T00:00:00Z",
                valid_until="2026-04-01T00:00:00Z")
    every = [always, march]
    assert reduce_entity("company/acme", every, as_of="2026-03-15T00:00:00Z")["snapshot"] == {"price": 120}
    assert reduce_entity("company/acme", every, as_of="2026-04-01T00:00:00Z")["snapshot"] == {"price": 100}  # until excluded
    assert reduce_entity("company/acme", every, as_of="2026-02-15T00:00:00Z")["snapshot"] == {"price": 100}
    # without as_of: the commit's time decides only for observations that wrote a period
    at_march = reduce_entity("company/acme", every, valid_at="2026-03-02T00:00:00Z")
    assert at_march["snapshot"] == {"price": 120} and at_march["valid_at"] == "2026-03-02T00:00:00Z"
    assert reduce_entity("company/acme", every, valid_at="2026-05-01T00:00:00Z")["snapshot"] == {"price": 100}
    future = obs("obs-c", "2027-01-01T00:00:00Z", {"price": 999})
    assert reduce_entity("company/acme", [always, future], valid_at="2026-05-01T00:00:00Z")["snapshot"] == {"price": 999}


def test_a_bounded_delete_hides_the_entity_for_its_period_only():
    made = obs("obs-a", "2026-01-01T00:00:00Z", {"status": "open"})
    paused = obs("obs-b", "2026-01-02T00:00:00Z", {"_deleted": True}, priority=1000,
                 valid_from="2026-02-01T00:00:00Z", valid_until="2026-03-01T00:00:00Z")
    assert reduce_entity("company/acme", [made, paused], as_of="2026-02-10T00:00:00Z")["deleted"] is True
    assert reduce_entity("company/acme", [made, paused], as_of="2026-03-10T00:00:00Z")["snapshot"] == {"status": "open"}


# --- field intervals (docs/design.md §19): the snapshot as of T is the interval holding T -------

@settings(max_examples=300, deadline=None)
@given(st.lists(with_period(observation.map(lambda o: Obs(**{**o.__dict__, "id": f"obs-{int(o.id[4:]) % 51}"}))),
                max_size=14, unique_by=lambda o: o.id),
       st.sampled_from(["highest_priority", "last_write", "most_specific", "merge_array"]))
def test_every_instant_reads_the_value_of_the_interval_holding_it(observations, policy):
    from obsrepo.format.intervals import field_intervals
    from obsrepo.format.reduce import _instant

    policies = {"a": policy, "tags": "merge_array"}
    days = [f"2026-01-0{d}T00:00:00Z" for d in range(1, 10)]
    moments = sorted({*days, *(f"2026-01-0{d}T00:00:01Z" for d in range(1, 9)), "2025-12-31T00:00:00Z",
                      *(f"2026-01-0{d + 1}T00:00:0{d % 3}Z" for d in range(6))})
    for entity in sorted({o.entity for o in observations if o.entity}):
        answer = field_intervals(entity, observations, policies)
        by_field = {f["field"]: f["intervals"] for f in answer["fields"]}
        for f in answer["fields"]:  # by `from`, never overlapping, equal neighbours joined
            spans = f["intervals"]
            assert [_instant(s["from"]) for s in spans] == sorted(_instant(s["from"]) for s in spans)
            for before, after in zip(spans, spans[1:]):
                assert before["until"] is not None and _instant(before["until"]) <= _instant(after["from"])
                if before["until"] == after["from"]:
                    assert before["value"] != after["value"]
            for span in spans:  # where an interval starts, its provenance is the snapshot's
                snap = reduce_entity(entity, observations, policies, as_of=span["from"])
                assert snap["provenance"].get(f["field"]) == span["observation_id"], (entity, f["field"], span)
        for moment in moments:
            snap = reduce_entity(entity, observations, policies, as_of=moment)
            for name in set(snap["snapshot"]) | set(by_field):
                holding = [s for s in by_field.get(name, ()) if _instant(s["from"]) <= _instant(moment)
                           and (s["until"] is None or _instant(s["until"]) > _instant(moment))]
                assert len(holding) <= 1
                if name in snap["snapshot"]:
                    assert holding and holding[0]["value"] == snap["snapshot"][name], (entity, name, moment)
                else:
                    assert not holding, (entity, name, moment, holding)


def test_intervals_of_a_price_with_a_march_discount():
    from obsrepo.format.intervals import field_intervals

    always = obs("obs-a", "2026-01-01T00:00:00Z", {"price": 100})
    march = obs("obs-b", "2026-02-01T00:00:00Z", {"price": 80}, valid_from="2026-03-01T00:00:00Z",
                valid_until="2026-04-01T00:00:00Z")
    answer = field_intervals("company/acme", [march, always])
    assert answer["fields"] == [{"field": "price", "intervals": [
        {"from": "2026-01-01T00:00:00Z", "until": "2026-03-01T00:00:00Z", "value": 100, "observation_id": "obs-a",
         "rule": "highest_priority"},
        {"from": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z", "value": 80, "observation_id": "obs-b",
         "rule": "highest_priority"},
        {"from": "2026-04-01T00:00:00Z", "until": None, "value": 100, "observation_id": "obs-a",
         "rule": "highest_priority"}]}]

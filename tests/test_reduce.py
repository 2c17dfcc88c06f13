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

def _sql_snapshots(observations, policies):
    import duckdb
    from obsrepo.index.engine import load_fts  # noqa: F401 - same DuckDB build as the index
    from obsrepo.index.sqlreduce import reduce_all

    con = duckdb.connect()
    con.execute("CREATE TABLE c (id VARCHAR, entity VARCHAR, priority INTEGER, specificity DOUBLE, epoch BIGINT, "
                "ts VARCHAR, fields JSON)")
    from datetime import datetime

    rows = [(o.id, o.entity, o.priority, o.specificity,
             int(datetime.fromisoformat(o.timestamp.replace("Z", "+00:00")).timestamp() * 1_000_000), o.timestamp,
             json.dumps(o.fields)) for o in observations]
    if rows:
        con.executemany("INSERT INTO c VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    table_policies = {("company", field): policy for field, policy in policies.items()}
    return reduce_all(con, "c", [], list(observations), table_policies)


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

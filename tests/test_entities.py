"""Entity snapshots, provenance and the entity questions, over a real index of a real repository."""

import json

import pytest
from helpers import observation
from obsrepo import errors
from obsrepo.api import Repository

T1, T2, T3, T4 = "2026-01-10T09:00:00Z", "2026-02-10T09:00:00Z", "2026-03-10T09:00:00Z", "2026-04-10T09:00:00Z"
ORG = {"tenant": {"org": "northwind"}}


@pytest.fixture
def story(repo):
    crm = observation("obs-20260110-090000-0001", T1, entity="company/acme", priority=100, specificity=0.8,
                      fields={"name": "Acme", "phone": "111", "zip": "6560", "founded_on": "2001-05-04", "tags": ["a"]}, **ORG)
    ai = observation("obs-20260110-090000-0002", T1, entity="company/acme", priority=0, specificity=1.0,
                     fields={"phone": "999", "employees": 250, "tags": ["b"]}, **ORG)
    repo.add(crm, ai)
    first = repo.commit("crm and extraction")
    dup = observation("obs-20260210-090000-0003", T2, entity="company/acme-ltd", fields={"vat": "GB1"}, **ORG)
    wrong = observation("obs-20260210-090000-0004", T2, entity="company/acme", fields={"employees": 9000}, **ORG)
    inv = observation("obs-20260210-090000-0005", T2, entity="invoice/1", fields={"invoice_date": "2026-02-01", "total": 10},
                      relations=[{"type": "PART_OF", "target": "company/acme"}], **ORG)
    repo.add(dup, wrong, inv)
    second = repo.commit("february")
    fix = observation("obs-20260310-090000-0006", T3, source="human/alice", entity="company/acme",
                      corrects="obs-20260110-090000-0001", fields={"phone": "222"}, **ORG)
    retract = observation("obs-20260310-090000-0007", T3, source="human/alice", retracts="obs-20260210-090000-0004", **ORG)
    merge = observation("obs-20260310-090000-0008", T3, entity="company/acme-ltd",
                        relations=[{"type": "DUPLICATE_OF", "target": "company/acme"}], **ORG)
    other = observation("obs-20260410-090000-0009", T4, entity="company/acme", fields={"phone": "555"}, priority=1000,
                        tenant={"org": "globex"})
    repo.add(fix, retract, merge, other)
    third = repo.commit("corrections, retraction, merge")
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields:\n  tags: {policy: merge_array}\n")
    fourth = repo.commit("company schema")
    assert repo.check().returncode == 0, repo.check()
    return repo, (first, second, third, fourth)


def test_snapshot_rules_provenance_and_tenant(story):
    repo, (first, second, third, fourth) = story
    api = Repository(str(repo.path), tenant={"org": "northwind"})
    snap = api.snapshot("company/acme")
    assert snap["snapshot"] == {"employees": 250, "founded_on": "2001-05-04", "name": "Acme", "phone": "222",
                                "tags": ["a"], "vat": "GB1", "zip": "6560"}
    assert snap["provenance"]["phone"] == "obs-20260310-090000-0006"  # the correction; globex's 1000 is invisible
    assert snap["provenance"]["tags"] == ["obs-20260110-090000-0001"]  # merge_array at the highest priority only
    assert snap["at_commit"] == fourth and snap["deleted"] is False
    assert snap["observation_count"] == 5  # 4 about acme (one retracted away) + the merged acme-ltd ones
    assert json.dumps(api.snapshot("company/acme")) == json.dumps(snap)
    # before the corrections: the AI's 999 loses to the CRM's 100 priority; 9000 not yet retracted
    old = api.snapshot("company/acme", at=second)
    assert old["snapshot"]["phone"] == "111" and old["snapshot"]["employees"] == 9000
    assert old["snapshot"]["tags"] == ["a"] and "vat" not in old["snapshot"]
    merged = api.snapshot("company/acme-ltd")
    assert merged["entity_id"] == "company/acme" and merged["merged_from"] == "company/acme-ltd"
    assert api.snapshot("company/acme", as_of="2026-01-31")["snapshot"]["phone"] == "111"
    explained = api.snapshot("company/acme", explain=True)["explain"]["phone"]
    assert [c["observation_id"] for c in explained if c["won"]] == ["obs-20260310-090000-0006"]
    globex = Repository(str(repo.path), tenant={"org": "globex"}).snapshot("company/acme")
    assert globex["snapshot"] == {"phone": "555"} and globex["observation_count"] == 1

    prov = api.provenance("company/acme", "phone")
    assert prov["observation_id"] == "obs-20260310-090000-0006" and prov["commit"] == third
    assert prov["path"] == "observations/2026/03/10/obs-20260310-090000-0006.md" and prov["author"] == "Test Author"
    with pytest.raises(errors.NotFoundError) as missing:
        api.provenance("company/acme", "fax")
    assert missing.value.code == "FIELD_NOT_FOUND"
    with pytest.raises(errors.NotFoundError) as unknown:
        api.snapshot("company/nobody")
    assert unknown.value.code == "ENTITY_NOT_FOUND"


def test_cli_snapshot_errors(story):
    repo, _ = story
    out = repo.obsrepo("snapshot", "company/nobody", "--format", "json")
    assert out.returncode == 3 and json.loads(out.stdout)["error"]["code"] == "ENTITY_NOT_FOUND"
    out = repo.obsrepo("snapshot", "company/acme", "--as-of", "yesterday", "--format", "json")
    assert out.returncode == 2 and json.loads(out.stdout)["error"]["details"]["parameter"] == "--as-of"
    out = repo.obsrepo("snapshot", "company/acme", "--at", "nope", "--format", "json")
    assert out.returncode == 3 and json.loads(out.stdout)["error"]["code"] == "REF_NOT_FOUND"


def test_entities_find_observations_relations_timeline_history(story):
    repo, (first, second, third, fourth) = story
    api = Repository(str(repo.path), tenant={"org": "northwind"})
    listed = api.entities()
    assert [e["entity_id"] for e in listed["entities"]] == ["company/acme", "invoice/1"]  # acme-ltd merged away
    assert api.entities("invoice")["total"] == 1
    assert [e["entity_id"] for e in api.find(" ACME ")["entities"]] == ["company/acme"]
    assert [e["entity_id"] for e in api.find("acme-LTD")["entities"]] == ["company/acme"]
    page = api.observations("company/acme", limit=2)
    assert page["total"] == 6 and [o["id"] for o in page["observations"]] == [
        "obs-20260310-090000-0008", "obs-20260310-090000-0006"]
    rels = api.relationships("company/acme", direction="in")
    assert {(r["type"], r["source_entity_id"]) for r in rels["relationships"]} == {
        ("PART_OF", "invoice/1"), ("DUPLICATE_OF", "company/acme-ltd")}
    assert api.relationships("company/acme", direction="out")["total"] == 0
    near = api.related("invoice/1", hops=3)
    assert [e["entity_id"] for e in near["entities"]] == ["company/acme"]  # acme-ltd only through its survivor
    assert near["hops_traversed"] == 1
    assert [(r["type"], r["source_entity_id"], r["target_entity_id"]) for r in near["relationships"]] == [
        ("PART_OF", "invoice/1", "company/acme")]
    events = api.timeline(entity="company/acme")["events"]
    fields = {e["field"] for e in events if e["field"]}
    assert fields == {"founded_on"}  # zip "6560" is no date
    assert api.timeline(entity="invoice/1", event_type="InvoiceIssued")["events"][0]["event_timestamp"] == "2026-02-01T00:00:00Z"
    changes = api.history("company/acme")["changes"]
    phone = [(c["commit"], c["old"], c["new"]) for c in changes if c["field"] == "phone"]
    assert phone == [(first, None, "111"), (third, "111", "222")]
    employees = [(c["commit"], c["new"]) for c in changes if c["field"] == "employees"]
    assert employees == [(first, 250), (second, 9000), (third, 250)]


def test_related_terminates_on_cycles(repo):
    a = observation("obs-20260110-090000-0001", T1, entity="doc/a", relations=[{"type": "REFERS_TO", "target": "doc/b"}])
    b = observation("obs-20260110-090000-0002", T1, entity="doc/b", relations=[{"type": "REFERS_TO", "target": "doc/a"}])
    repo.add(a, b)
    repo.commit("a cycle of references")
    near = Repository(str(repo.path)).related("doc/a", hops=10)
    assert [e["entity_id"] for e in near["entities"]] == ["doc/b"] and near["hops_traversed"] == 1
    assert near["total_relationships"] == 2


def test_history_skips_only_commits_that_cannot_change_the_entity(story, monkeypatch):
    """History replays the commits that can matter; the answer equals a replay of every commit,
    whatever commits unrelated to the entity, or schema-only commits, lie between."""
    from obsrepo.read import entities

    repo, _ = story
    repo.add(observation("obs-20260411-090000-0010", T4, entity="company/acme", fields={"size": "small"}, priority=100, **ORG),
             observation("obs-20260412-090000-0011", "2026-04-12T09:00:00Z", entity="company/acme", fields={"size": "large"}, priority=0,
                         **ORG))
    repo.commit("two sizes")
    repo.add(observation("obs-20260415-090000-0012", T4, entity="invoice/2", fields={"total": 3}, **ORG))
    repo.commit("unrelated")
    repo.write("schemas/entities/company.yaml",
               "spec: entity-schema/v1\ntype: company\nfields:\n  tags: {policy: merge_array}\n  size: {policy: last_write}\n")
    repo.commit("company size becomes last_write")
    api = Repository(str(repo.path), tenant={"org": "northwind"})
    pruned = {e: api.history(e) for e in ("company/acme", "company/acme-ltd", "invoice/1", "invoice/2")}
    monkeypatch.setattr(entities, "_commits_that_matter", lambda *args: {c[0] for c in args[-1]})
    assert {e: api.history(e) for e in pruned} == pruned
    size = [(c["commit"], c["old"], c["new"]) for c in pruned["company/acme"]["changes"] if c["field"] == "size"]
    assert size == [(repo.sha("HEAD~2"), None, "small"), (repo.sha(), "small", "large")]  # the schema alone changed it


def _snapshots_table(index) -> list:
    import duckdb

    con = duckdb.connect(str(index), read_only=True)
    try:
        return con.execute("SELECT * FROM entity_snapshots ORDER BY entity_id").fetchall()
    finally:
        con.close()


def test_the_snapshots_table_follows_every_update_and_equals_the_snapshot_command(story, tmp_path):
    """`snapshots`/`entities` (SQL) hold what `snapshot` answers for an unbound caller; updated
    commit by commit (plain additions, an observation of a merged-away entity, a deletion, a
    retraction, a schema change, a rewind) they equal a full build."""
    repo, commits = story
    repo.add(observation("obs-20260420-090000-0010", "2026-04-20T09:00:00Z", entity="company/acme-ltd",
                         fields={"vat": "GB2"}, priority=500, **ORG))
    repo.add(observation("obs-20260420-090000-0011", "2026-04-20T09:00:00Z", entity="invoice/1", fields={"total": 11},
                         priority=500, **ORG))
    fifth = repo.commit("through the merged-away entity, and the invoice")
    repo.git("rm", "-q", "observations/2026/02/10/obs-20260210-090000-0005.md")
    sixth = repo.commit("the first invoice observation deleted")
    repo.add(observation("obs-20260421-090000-0012", "2026-04-21T09:00:00Z", source="human/alice",
                         retracts="obs-20260420-090000-0011", **ORG))
    seventh = repo.commit("a retraction")
    incremental = Repository(str(repo.path), index=str(tmp_path / "incremental.duckdb"))
    for rev in [*commits, fifth, sixth, seventh, commits[1], seventh]:
        incremental.index(rev)
        full = Repository(str(repo.path), index=str(tmp_path / f"full-{rev[:8]}.duckdb"))
        full.index(rev, full=True)
        assert _snapshots_table(tmp_path / "incremental.duckdb") == _snapshots_table(tmp_path / f"full-{rev[:8]}.duckdb"), rev
    table = _snapshots_table(tmp_path / "incremental.duckdb")
    # acme-ltd lives on in acme; invoice/1 has nothing left (one observation deleted, one retracted)
    assert [row[0] for row in table] == ["company/acme"]
    api = Repository(str(repo.path), index=str(tmp_path / "incremental.duckdb"))
    for entity_id, _entity_type, snapshot, provenance, count, last, deleted in table:
        answer = api.snapshot(entity_id)
        assert (json.loads(snapshot), json.loads(provenance), count, deleted) == (
            answer["snapshot"], answer["provenance"], answer["observation_count"], answer["deleted"])
        assert last.isoformat() + "Z" == answer["last_observation_at"].replace("+00:00", "Z")
    assert json.loads(table[0][2])["vat"] == "GB2"
    assert Repository(str(repo.path), index=str(tmp_path / "incremental.duckdb")).snapshot("invoice/1")["observation_count"] == 0
    # an unbound caller at the indexed commit is answered from the table: exactly what reducing gives (an as_of
    # reduces), a merged-away entity, one with nothing left, a deleted one and microseconds included
    repo.add(observation("obs-20260422-090000-0013", "2026-04-22T09:00:00.123456Z", entity="company/acme",
                         fields={"phone": "777"}, **ORG),
             observation("obs-20260422-090000-0014", "2026-04-22T09:00:00Z", entity="company/gone", fields={"name": "G"}, **ORG),
             observation("obs-20260423-090000-0015", "2026-04-23T09:00:00Z", entity="company/gone",
                         fields={"_deleted": True}, **ORG))
    repo.commit("microseconds, and a deletion")
    for entity_id in ("company/acme", "company/acme-ltd", "invoice/1", "company/gone"):
        stored, reduced = api.snapshot(entity_id), api.snapshot(entity_id, as_of="9999-12-31T00:00:00Z")
        assert reduced.pop("valid_at") == "9999-12-31T00:00:00Z"  # the instant each answer used (§19)
        assert stored.pop("valid_at") == "2026-02-13T12:00:00Z", entity_id
        assert stored == reduced, entity_id
    assert api.snapshot("company/gone")["deleted"]
    assert api.snapshot("company/acme")["last_observation_at"] == "2026-04-22T09:00:00.123456Z"


def test_related_goes_100_hops_and_more_and_stops_where_the_graph_ends(repo):
    chain = [observation(f"obs-20260110-090000-{n:04d}", T1, entity=f"step/{n}",
                         relations=[{"type": "DEPENDS_ON", "target": f"step/{n + 1}"}] if n < 120 else [])
             for n in range(121)]
    repo.add(*chain)
    repo.commit("a chain of 121 steps")
    api = Repository(str(repo.path))
    near = api.related("step/0", hops=100, direction="out")
    assert near["total_entities"] == 100 and near["hops_traversed"] == 100
    assert {e["entity_id"] for e in near["entities"]} == {f"step/{n}" for n in range(1, 101)}
    far = api.related("step/0", hops=1_000_000)
    assert far["total_entities"] == 120 and far["hops_traversed"] == 120
    proc = repo.obsrepo("related", "step/60", "--hops", "100", "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["total_entities"] == 120, proc
    proc = repo.obsrepo("related", "step/0", "--hops", "0", "--format", "json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["details"]["parameter"] == "--hops"
    # --limit lists (and reduces) only the first entities by id; the totals still count every one
    proc = repo.obsrepo("related", "step/60", "--hops", "100", "--limit", "3", "--format", "json")
    limited = json.loads(proc.stdout)
    assert [e["entity_id"] for e in limited["entities"]] == ["step/0", "step/1", "step/10"], proc
    assert limited["total_entities"] == 120 and limited["total_relationships"] == 120
    proc = repo.obsrepo("related", "step/0", "--limit", "0", "--format", "json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["details"]["parameter"] == "--limit"


def test_related_lists_a_merged_away_entity_only_through_its_survivor(repo):
    a = observation("obs-20260110-090000-0001", T1, entity="company/acme", fields={"name": "Acme"})
    old = observation("obs-20260110-090000-0002", T1, entity="company/acme-old", fields={"name": "ACME"})
    task = observation("obs-20260110-090000-0003", T1, entity="task/1", relations=[{"type": "PART_OF", "target": "company/acme-old"}])
    person = observation("obs-20260110-090000-0004", T1, entity="person/bo", relations=[{"type": "PART_OF", "target": "company/acme"}])
    merge = observation("obs-20260210-090000-0005", T2, entity="company/acme-old",
                        relations=[{"type": "DUPLICATE_OF", "target": "company/acme"}])
    repo.add(a, old, task, person, merge)
    repo.commit("a merge")
    api = Repository(str(repo.path))
    for start in ("task/1", "person/bo"):
        near = api.related(start, hops=5)
        ids = [e["entity_id"] for e in near["entities"]]
        assert "company/acme-old" not in ids and "company/acme" in ids, (start, ids)
        assert all("company/acme-old" not in (r["source_entity_id"], r["target_entity_id"]) for r in near["relationships"])
    assert [e["entity_id"] for e in api.related("task/1", hops=5)["entities"]] == ["company/acme", "person/bo"]
    from_old = api.related("company/acme-old", hops=1)  # the merged-away start answers as its survivor
    assert [e["entity_id"] for e in from_old["entities"]] == ["person/bo", "task/1"]


def test_related_equals_a_plain_walk_over_the_listed_relationships(repo):
    """The walk (which gathers a busy neighbourhood's thousands of relationships by their place
    in the kept graph) gives what a plain breadth-first walk over `relationships` gives, on a
    graph with relationships stated twice, relations to oneself, three types, both ways."""
    import random

    chance = random.Random(7)
    names = [f"node/{n:02d}" for n in range(24)]
    kinds = ("DEPENDS_ON", "PART_OF", "REFERS_TO")
    docs = [observation(f"obs-20260109-090000-{n:04d}", T1, entity=name, fields={"name": name}) for n, name in enumerate(names)]
    for n in range(60):
        source = chance.choice(names)
        relations = []
        for _ in range(chance.randint(1, 3)):  # DEPENDS_ON and PART_OF only onward: no cycle of them
            kind, later = chance.choice(kinds), names[names.index(source) + 1:]
            kind = kind if later else "REFERS_TO"
            relations.append({"type": kind, "target": chance.choice(names if kind == "REFERS_TO" else later)})
        if n % 7 == 0:
            relations.append(dict(relations[0]))  # the same relationship twice
        if n % 11 == 0:
            relations.append({"type": "REFERS_TO", "target": source})  # to itself
        docs.append(observation(f"obs-20260110-090000-{n:04d}", T1, entity=source, fields={"n": n}, relations=relations))
    repo.add(*docs)
    repo.commit("a tangle")
    assert repo.check().returncode == 0, repo.check()
    api = Repository(str(repo.path))
    api.keep_open()
    edges = {(r["observation_id"], r["type"], r["source_entity_id"], r["target_entity_id"]): r
             for name in names for r in api.relationships(name)["relationships"]}

    def walk(start, hops, direction, types):
        """Distances by relaxation; the relationships used are those leaving an entity nearer than `hops`."""
        steps = [(key, here, end) for key in edges if key[2] != key[3] and (not types or key[1] in types)
                 for here, end, way in ((key[2], key[3], "out"), (key[3], key[2], "in")) if direction in (way, "both")]
        distance = {start: 0}
        for _ in range(hops):
            distance.update({end: distance[here] + 1 for _, here, end in steps
                             if here in distance and end not in distance and distance[here] < hops})
        used = {key for key, here, _ in steps if distance.get(here, hops) < hops}
        ordered = sorted(used, key=lambda k: (k[1], k[2], k[3], k[0]))
        return sorted(set(distance) - {start}), [edges[k] for k in ordered], max(distance.values())

    for start in names[::3]:
        for hops in (1, 2, 3):
            for direction in ("both", "out", "in"):
                for types in ((), ("PART_OF",), ("DEPENDS_ON", "REFERS_TO")):
                    near = api.related(start, hops=hops, direction=direction, types=types)
                    others, rels, deepest = walk(start, hops, direction, types)
                    assert [e["entity_id"] for e in near["entities"]] == others, (start, hops, direction, types)
                    assert near["relationships"] == rels and near["total_relationships"] == len(rels)
                    assert near["hops_traversed"] == deepest
    api.close()


def test_timeline_pages_through_observations_that_share_a_time_as_the_whole_list_orders_them(repo):
    """Events of one time are ordered by event id; a page that cuts through them (only the rows
    that can reach a page are ranked and hashed) is the same slice of the whole list."""
    docs = [observation(f"obs-20260110-090000-{n:04d}", T1 if n < 6 else T2, entity="task/tie", fields={"n": n})
            for n in range(8)]
    repo.add(*docs)
    repo.commit("six at one time, two later")
    api = Repository(str(repo.path))
    api.keep_open()
    whole = api.timeline(entity="task/tie", event_type="Observed")
    assert whole["total"] == 8 and [e["event_timestamp"] for e in whole["events"]][:2] == [T2, T2]
    ties = [e["id"] for e in whole["events"][2:]]
    assert ties == sorted(ties)
    for limit in (1, 2, 3, 5):
        for offset in range(0, 9):
            page = api.timeline(entity="task/tie", event_type="Observed", limit=limit, offset=offset)
            assert page["events"] == whole["events"][offset:offset + limit] and page["total"] == 8, (limit, offset)
    api.close()

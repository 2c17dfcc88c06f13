"""Properties of the write path: the rules for one added document agree with the full repository
rules, and whatever writes are accepted, `check --base` on the proposal branch stays clean."""

from __future__ import annotations

import os
import sqlite3

import pytest
from helpers import comprehension, observation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obsrepo.api import Repository
from obsrepo.errors import ObsrepoError
from obsrepo.format.analyze import analyze
from obsrepo.gate import graph
from obsrepo.gate import lookup as lookups
from obsrepo.gate.check import CheckRequest, run_check
from obsrepo.gate.facts import FactsStore
from obsrepo.gate.near import NearState

ENTITIES = ["company/a", "company/b", "company/c", "task/d"]
TENANTS = [None, {"org": "x"}, {"org": "y"}, {"org": "x", "project": "p"}]
TYPES = ["PART_OF", "DEPENDS_ON", "DUPLICATE_OF", "REFERS_TO"]

document = st.fixed_dictionaries({
    "entity": st.sampled_from(ENTITIES),
    "tenant": st.sampled_from(range(len(TENANTS))),
    "relations": st.lists(st.tuples(st.sampled_from(TYPES), st.sampled_from(ENTITIES)), max_size=2),
    "retracts": st.lists(st.integers(0, 30), max_size=1),
    "corrects": st.lists(st.integers(0, 30), max_size=1),
    "feedback": st.lists(st.integers(0, 30), max_size=1),
    "reclassify": st.lists(st.integers(0, 30), max_size=2),
    "event": st.sampled_from(["same", "other", None]),
    "second": st.integers(0, 3),
})


@settings(max_examples=int(os.environ.get("OBSREPO_TEST_RULE_EXAMPLES", "400")), deadline=None)
@given(st.lists(document, min_size=1, max_size=14))
def test_one_added_document_is_judged_as_the_full_repository_rules_judge_it(specs) -> None:
    """The state keeps part of the tree in a lookup store (made again every few documents) and
    the rest as added: its answers are those of the full rules, word for word."""
    accepted: dict = {}
    state = _state({}, {})
    for n, spec in enumerate(specs, 1):
        doc, analysis = _document(n, spec, [a.facts["id"] for a in accepted.values()])
        if analysis.facts is None:  # a shape the per-document rules refuse: not this property's concern
            continue
        full = graph.repository_rules({**accepted, doc.path: analysis}, added={doc.path}, change={doc.path})
        mine = state.problems(doc.path, analysis.facts)
        assert mine == [i for i in full if i.path == doc.path]
        if not full:
            accepted[doc.path] = analysis
            state.add(doc.path, analysis.facts)
        if n % 4 == 0:
            state = _state(accepted, {})


def _state(tree: dict, binding: dict) -> NearState:
    """A state whose lookup store (in memory) holds `tree`, with nothing added yet."""
    db = sqlite3.connect(":memory:")
    store = FactsStore(None)
    lookups._fill(db, ((p, store.compact(tree[p].facts)) for p in sorted(tree)), ([], set(), 0), "test")
    return NearState({}, lookups.BaseLookup(db, frozenset(), 0), binding, tree.__contains__)


@settings(max_examples=int(os.environ.get("OBSREPO_TEST_RULE_EXAMPLES", "400")), deadline=None)
@given(st.lists(document, min_size=1, max_size=14))
def test_a_bound_writer_is_judged_as_the_full_rules_judge_what_its_tenant_sees(specs) -> None:
    """Other tenants' documents enter the tree unjudged (whatever they clash with): the state of
    a writer bound to org=x answers as the full rules over the documents org=x can see."""
    binding = {"org": "x"}
    tree: dict = {}
    state = _state({}, binding)
    for n, spec in enumerate(specs, 1):
        doc, analysis = _document(n, spec, [a.facts["id"] for a in tree.values()])
        if analysis.facts is None:
            continue
        if graph.in_sight(analysis.facts, binding):
            full = graph.repository_rules({**graph.in_view(tree, binding), doc.path: analysis}, added={doc.path},
                                          change={doc.path})
            mine = state.problems(doc.path, analysis.facts)
            assert mine == [i for i in full if i.path == doc.path]
            if full:
                continue
        tree[doc.path] = analysis
        state.add(doc.path, analysis.facts)
        if n % 4 == 0:
            state = _state(tree, binding)
        assert state.taken(analysis.facts["id"], "elsewhere") and state.taken("obs-x", doc.path)
        seen = state.by_id.get(analysis.facts["id"])  # what statements read of a target: only what the binding sees
        assert (seen is not None) == graph.in_sight(analysis.facts, binding)
        if seen is not None:
            assert (seen["hash"], seen["tenant"]) == (analysis.facts["hash"], analysis.facts["tenant"])
            assert tree[state.hashes[seen["hash"]]].facts["hash"] == seen["hash"]


def _document(n: int, spec: dict, ids: list[str]) -> tuple:
    """The `n`-th document of `spec`, naming earlier documents among `ids`, and its analysis."""
    front = {"entity": spec["entity"], "fields": {"n": 1}}
    if TENANTS[spec["tenant"]]:
        front["tenant"] = TENANTS[spec["tenant"]]
    if spec["relations"]:
        front["relations"] = [{"type": t, "target": target} for t, target in spec["relations"]]
    if spec["retracts"] and ids:
        front["retracts"] = [ids[spec["retracts"][0] % len(ids)]]
    if spec["corrects"] and ids:
        front["corrects"] = [ids[spec["corrects"][0] % len(ids)]]
        front["priority"] = 1000
    if spec["feedback"] and ids:  # feedback and reclassify targets: visible / same tenant
        front["feedback"] = {"target": ids[spec["feedback"][0] % len(ids)], "outcome": "misleading"}
    if spec["reclassify"] and ids:
        front["reclassify"] = {"targets": sorted({ids[i % len(ids)] for i in spec["reclassify"]}),
                               "classification": "restricted"}
    doc = observation(f"obs-20260213-1025{spec['second']:02d}-{n:04d}", event=spec["event"] or f"event {n}",
                      body="", **front)
    return doc, analyze(doc.path, doc.encode())


# --- through git --------------------------------------------------------------------------------

write = st.one_of(
    st.tuples(st.just("new"), st.sampled_from(ENTITIES), st.sampled_from(["v1", "v2"])),
    st.tuples(st.just("correct"), st.sampled_from(ENTITIES), st.sampled_from(["name", "phone"])),
    st.tuples(st.just("retract"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("relate"), st.sampled_from(ENTITIES), st.sampled_from(TYPES[:2] + ["part_of"])),
    st.tuples(st.just("merge"), st.sampled_from(ENTITIES), st.sampled_from(ENTITIES)),
    st.tuples(st.just("feedback"), st.integers(0, 20), st.sampled_from(["accepted", "misleading"])),
    st.tuples(st.just("comprehend"), st.integers(0, 20), st.sampled_from(["confirm", "contradict", "neutral"])),
)


@settings(max_examples=int(os.environ.get("OBSREPO_TEST_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(write, st.sampled_from(ENTITIES)), min_size=1, max_size=8))
def test_whatever_writes_are_accepted_the_branch_checks_clean(make_repo, monkeypatch, ops) -> None:
    repo = make_repo(f"repo-{abs(hash(repr(ops)))}")
    for key, value in repo.env.items():
        monkeypatch.setenv(key, value)
    for n, entity in enumerate(ENTITIES[:3], 1):
        repo.add(observation(f"obs-20260213-102500-{n:04d}", entity=entity, fields={"name": entity, "phone": str(n)}))
    repo.add(comprehension("comp-base", ["obs-20260213-102500-0003"]))
    repo.commit("base")
    writer = Repository(str(repo.path))
    written: list[str] = ["obs-20260213-102500-0001", "obs-20260213-102500-0002"]
    accepted = 0
    for n, ((kind, first, second), other) in enumerate(ops):
        try:
            if kind == "new":
                result = writer.propose({"source": "agent/p", "event": f"{first} {second} {n}", "entity": first,
                                         "fields": {"name": second}, "timestamp": "2026-02-14T00:00:00Z"})
            elif kind == "correct":
                result = writer.correct(first, second, f"fixed {n}", reason=f"r{n}")
            elif kind == "retract":
                result = writer.retract(written[first % len(written)], reason=f"r{n}")
            elif kind == "relate":
                result = writer.relate(first, second, other)
            elif kind == "feedback":
                result = writer.feedback(written[first % len(written)], second)
            elif kind == "comprehend":
                result = writer.comprehend("comp-base", written[first % len(written)], second, statement=f"s{n}")
                if result["commit"] is None:  # already cited: nothing written
                    continue
                accepted += 1
                continue
            else:
                result = writer.merge(first, second, reason=f"r{n}")
        except ObsrepoError as exc:
            assert exc.exit_code in (1, 3), exc.envelope()
            continue
        written.append(result["id"])
        accepted += 1
    if not accepted:
        return
    where = repo.path.parent / f"{repo.path.name}-wt"
    repo.git("worktree", "add", "-q", "--detach", str(where), "obsrepo/proposals")
    report = run_check(CheckRequest(str(where), base="main"))
    assert report.ok and not report.issues, [i.as_dict() for i in report.issues]
    assert repo.git("rev-list", "--count", "main..obsrepo/proposals") == str(accepted)


@pytest.mark.parametrize("binding", [{"org": "x"}])
def test_a_bound_writer_cannot_name_another_tenants_observation(make_repo, monkeypatch, binding) -> None:
    repo = make_repo()
    for key, value in repo.env.items():
        monkeypatch.setenv(key, value)
    repo.add(observation("obs-20260213-102500-0001", entity="company/a", fields={"name": "A"}, tenant={"org": "y"}))
    repo.commit("base")
    with pytest.raises(ObsrepoError) as caught:
        Repository(str(repo.path), tenant=binding).retract("obs-20260213-102500-0001", reason="not mine")
    assert caught.value.code == "REF_NOT_FOUND"
    with pytest.raises(ObsrepoError) as caught:
        Repository(str(repo.path), tenant=binding).correct("company/a", "name", "B", reason="not mine")
    assert caught.value.code == "ENTITY_NOT_FOUND"

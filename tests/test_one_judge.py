"""One judge (gate/judge.py, gate/graph.py): a hostile document is refused for the same rules,
in the same words, whoever asks: `check` on the work tree, `check_document`, the write path,
the watcher's drafts and the review of a change (`diff`)."""

from __future__ import annotations

import json

import pytest
from helpers import observation
from obsrepo.errors import ObsrepoError
from obsrepo.ops import CheckDocument, New, ProposalBranch, Session, run
from obsrepo.ops.live import LiveTree

pytest.importorskip("duckdb")

X, Y = {"org": "x"}, {"org": "y"}
COMMITTED = observation("obs-20260213-102500-0001", entity="company/a", tenant=X, source="agent/a",
                        event="the committed one")
# a small graph of org x: b PART_OF c, d merged into c; and an entity of org y
GRAPH = [
    observation("obs-20260213-102500-0011", entity="company/b", tenant=X, relations=[{"type": "PART_OF", "target": "company/c"}]),
    observation("obs-20260213-102500-0012", entity="company/c", tenant=X),
    observation("obs-20260213-102500-0013", entity="company/d", tenant=X,
                relations=[{"type": "DUPLICATE_OF", "target": "company/c"}]),
    observation("obs-20260213-102500-0014", entity="company/y", tenant=Y),
    # e and i merged into f; g declared distinct from f
    observation("obs-20260213-102500-0015", entity="company/e", tenant=X,
                relations=[{"type": "DUPLICATE_OF", "target": "company/f"}]),
    observation("obs-20260213-102500-0016", entity="company/f", tenant=X),
    observation("obs-20260213-102500-0017", entity="company/g", tenant=X,
                relations=[{"type": "DISTINCT_FROM", "target": "company/f"}]),
    observation("obs-20260213-102500-0019", entity="company/g", tenant=X),  # both ends of a declaration exist
    observation("obs-20260213-102500-0018", entity="company/i", tenant=X,
                relations=[{"type": "DUPLICATE_OF", "target": "company/f"}]),
]
# each hostile document on its own (newer than every committed one), and the (code, rule) every
# judge must find in it, with the message for the rules of the graph (the lookup rules say in
# each state's own words where a clash is: a path, the branch, the committed document)
HOSTILE = {
    "same content": (observation("obs-20260213-102500-0002", entity="company/a", tenant=X,
                                 source="agent/a", event="the committed one",
                                 body="Details of obs-20260213-102500-0001."),
                     {("DUPLICATE_CONTENT", "duplicate-content")}),
    "corrects nothing": (observation("obs-20260213-102500-0003", entity="company/a", tenant=X,
                                     corrects=["obs-20260213-102500-0099"]),
                         {("REF_NOT_FOUND", "corrects-target")}),
    "retracts another tenant's": (observation("obs-20260213-102500-0004", entity="company/a", tenant=Y,
                                              retracts=["obs-20260213-102500-0001"]),
                                  {("REF_NOT_FOUND", "retracts-target")}),
    "a cycle through the new document": (
        observation("obs-20260213-102600-0021", entity="company/c", tenant=X,
                    relations=[{"type": "PART_OF", "target": "company/b"}]),
        {("CYCLE_DETECTED", "relation-cycle", "PART_OF company/c → company/b closes a cycle among company/b, company/c")}),
    "a relation to a missing entity": (
        observation("obs-20260213-102600-0022", entity="company/a", tenant=X,
                    relations=[{"type": "REFERS_TO", "target": "company/zz"}]),
        {("ENTITY_NOT_FOUND", "relation-target", "REFERS_TO target 'company/zz' is not the entity of any observation in this tenant")}),
    "a relation to another tenant's entity": (
        observation("obs-20260213-102600-0023", entity="company/a", tenant=X,
                    relations=[{"type": "DEPENDS_ON", "target": "company/y"}]),
        {("ENTITY_NOT_FOUND", "relation-target", "DEPENDS_ON target 'company/y' is not the entity of any observation in this tenant")}),
    "a merge of a merged entity": (
        observation("obs-20260213-102600-0024", entity="company/d", tenant=X,
                    relations=[{"type": "DUPLICATE_OF", "target": "company/b"}]),
        {("ENTITY_ALREADY_MERGED", "merged-twice", "company/d was already merged into company/c by obs-20260213-102500-0013")}),
    "a merge that closes a merge cycle": (
        observation("obs-20260213-102600-0025", entity="company/c", tenant=X,
                    relations=[{"type": "DUPLICATE_OF", "target": "company/d"}]),
        {("CYCLE_DETECTED", "relation-cycle", "DUPLICATE_OF company/c → company/d closes a cycle among company/c, company/d")}),
    "a merge of entities declared distinct, through a merge chain": (
        observation("obs-20260213-102600-0027", entity="company/g", tenant=X,
                    relations=[{"type": "DUPLICATE_OF", "target": "company/e"}]),
        {("IDENTITY_CONFLICT", "identity-conflict",
          "merging company/g into company/e makes one entity of company/g and company/f, declared distinct by "
          "obs-20260213-102500-0017 (merges: company/g → company/e, company/e → company/f)")}),
    "a declaration of distinct entities already merged through a chain": (
        observation("obs-20260213-102600-0028", entity="company/i", tenant=X,
                    relations=[{"type": "DISTINCT_FROM", "target": "company/e"}]),
        {("IDENTITY_CONFLICT", "identity-conflict",
          "company/i and company/e are already one entity (merged: company/i → company/f, company/e → company/f)")}),
    "a retraction that orphans a relation": (
        observation("obs-20260213-102600-0026", entity="company/a", tenant=X, retracts=["obs-20260213-102500-0012"]),
        {("ENTITY_NOT_FOUND", "relation-target",
          "retracting would leave the relation of obs-20260213-102500-0011 to 'company/c' without a target in its tenant")}),
}
# `check` judges the whole tree, not a change: the relations a retraction orphans are
# reported at their own documents, in the words of any relation without a target
ORPHANS_AS_CHECK_SEES_THEM = {
    ("ENTITY_NOT_FOUND", "relation-target", "PART_OF target 'company/c' is not the entity of any observation in this tenant"),
    ("ENTITY_NOT_FOUND", "relation-target", "DUPLICATE_OF target 'company/c' is not the entity of any observation in this tenant"),
}


def _front(text: str) -> tuple[dict, str]:
    """A document's front matter (without spec and id) and body, as a writer hands them in."""
    import yaml

    _, head, body = text.split("---\n", 2)
    front = yaml.safe_load(head)
    front.pop("spec"), front.pop("id")
    front["timestamp"] = front["timestamp"].strftime("%Y-%m-%dT%H:%M:%SZ")  # as written, not as YAML reads it
    return front, body.strip()


@pytest.fixture(scope="module")
def judged(make_module_repo, tmp_path_factory):
    """One repository for every case (each hostile document is taken out again), its index
    built once at the base commit for the watcher."""
    repo = make_module_repo()
    repo.add(COMMITTED, *GRAPH)
    base = repo.commit("the committed ones")
    session = Session(str(repo.path), index=str(tmp_path_factory.mktemp("index") / "index.duckdb"))
    live = LiveTree(session)
    live.index(base)
    return repo, base, session, live


def _issue(item: dict, messages: bool) -> tuple[str, ...]:
    return (item["code"], item["rule"], item["message"]) if messages else (item["code"], item["rule"])


@pytest.mark.parametrize("name", list(HOSTILE))
def test_every_caller_refuses_a_hostile_document_for_the_same_rules_in_the_same_words(judged, name) -> None:
    repo, base, session, live = judged
    doc, expected = HOSTILE[name]
    messages = len(next(iter(expected))) == 3
    found: dict[str, set[tuple[str, ...]]] = {}

    found["check_document"] = {_issue(i, messages) for i in run(session, CheckDocument(str(doc))).to_json()["issues"]}

    front, body = _front(str(doc))
    with pytest.raises(ObsrepoError) as refused:
        run(session, New(front, body, ProposalBranch()))
    found["write path"] = {_issue(i, messages) for i in refused.value.details["issues"]}

    repo.write(doc.path, str(doc))
    try:
        issues = repo.check().data["issues"]
        found["check"] = {_issue(i, messages) for i in issues if i["path"] == doc.path}
        elsewhere = {_issue(i, messages) for i in issues if i["path"] != doc.path}
        live.refresh(set(), everything=True)
        valid, problems = live.judge()
        assert not valid
        found["watcher"] = {_issue({"code": i.code, "rule": i.rule, "message": i.message}, messages) for i in problems[doc.path]}

        repo.git("add", doc.path)
        head = repo.commit("the hostile one")
        review = json.loads(repo.obsrepo("diff", base, head, "--format", "json").stdout)
        found["diff"] = {_issue(p, messages) for p in review["problems"]}
        # a pull request's check: the change read, the rest judged by its compact facts
        found["check --base"] = {_issue(i, messages) for i in repo.check("--base", base).data["issues"]}
    finally:
        repo.git("reset", "-q", "--hard", base)
        (repo.path / doc.path).unlink(missing_ok=True)

    if name == "a retraction that orphans a relation":
        assert found.pop("check") == set() and elsewhere == ORPHANS_AS_CHECK_SEES_THEM, elsewhere
    else:
        assert not elsewhere, elsewhere
    assert found == dict.fromkeys(found, expected), found

"""One judge (gate/judge.py): a hostile document is refused for the same rules whoever asks,
`check` on the work tree, `check_document`, the write path, the watcher's drafts and the
review of a change (`diff`)."""

from __future__ import annotations

import json

import pytest
from helpers import observation
from obsrepo.errors import ObsrepoError
from obsrepo.ops import CheckDocument, New, ProposalBranch, Session, run
from obsrepo.ops.live import LiveTree

pytest.importorskip("duckdb")

COMMITTED = observation("obs-20260213-102500-0001", entity="company/a", tenant={"org": "x"}, source="agent/a",
                        event="the committed one")
# each hostile document on its own, and the (code, rule) every judge must find in it
HOSTILE = {
    "same content": (observation("obs-20260213-102500-0002", entity="company/a", tenant={"org": "x"},
                                 source="agent/a", event="the committed one",
                                 body="Details of obs-20260213-102500-0001."),
                     {("DUPLICATE_CONTENT", "duplicate-content")}),
    "corrects nothing": (observation("obs-20260213-102500-0003", entity="company/a", tenant={"org": "x"},
                                     corrects=["obs-20260213-102500-0099"]),
                         {("REF_NOT_FOUND", "corrects-target")}),
    "retracts another tenant's": (observation("obs-20260213-102500-0004", entity="company/a", tenant={"org": "y"},
                                              retracts=["obs-20260213-102500-0001"]),
                                  {("REF_NOT_FOUND", "retracts-target")}),
}


def _front(text: str) -> tuple[dict, str]:
    """A document's front matter (without spec and id) and body, as a writer hands them in."""
    import yaml

    _, head, body = text.split("---\n", 2)
    front = yaml.safe_load(head)
    front.pop("spec"), front.pop("id")
    front["timestamp"] = front["timestamp"].strftime("%Y-%m-%dT%H:%M:%SZ")  # as written, not as YAML reads it
    return front, body.strip()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_caller_refuses_a_hostile_document_for_the_same_rules(make_repo, tmp_path, name) -> None:
    doc, expected = HOSTILE[name]
    repo = make_repo()
    repo.add(COMMITTED)
    base = repo.commit("the committed one")
    session = Session(str(repo.path), index=str(tmp_path / "index.duckdb"))
    found: dict[str, set[tuple[str, str]]] = {}

    found["check_document"] = {(i["code"], i["rule"]) for i in run(session, CheckDocument(str(doc))).to_json()["issues"]}

    front, body = _front(str(doc))
    with pytest.raises(ObsrepoError) as refused:
        run(session, New(front, body, ProposalBranch()))
    found["write path"] = {(i["code"], i["rule"]) for i in refused.value.details["issues"]}

    repo.write(doc.path, str(doc))
    found["check"] = {(code, rule) for code, rule, path in repo.check().issues if path == doc.path}

    live = LiveTree(session)
    live.index(base)
    live.refresh(set(), everything=True)
    valid, problems = live.judge()
    assert not valid
    found["watcher"] = {(i.code, i.rule) for i in problems[doc.path]}

    repo.add(doc)
    head = repo.commit("the hostile one")
    review = json.loads(repo.obsrepo("diff", base, head, "--format", "json").stdout)
    found["diff"] = {(p["code"], p["rule"]) for p in review["problems"]}

    assert found == dict.fromkeys(found, expected), found

"""Several reads over one read scope (`Session.together`, docs/design.md §17): the inspector's
entity page asks four questions and the static preview every page of a change at its HEAD, each
set up once and each entity reduced once. What a read answers must not change: every question
asked inside a block equals the same question asked alone, at the indexed tip, at an older
commit of the chain, at a commit off it (an overlay from `git diff`), narrowed to a tenant, and
after a read that walks the chain (`history`) and moves the scope."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import observation
from obsrepo.ops import (
    Entities,
    History,
    Query,
    Related,
    Relations,
    Session,
    Show,
    Snapshot,
    Timeline,
    run,
)
from obsrepo.ops.values import Binding

ACME = "company/acme"
ORG = {"tenant": {"org": "northwind"}}


@pytest.fixture(scope="module")
def told(make_module_repo) -> tuple[Any, dict[str, str | None]]:
    """An entity corrected, with a duplicate merged into it, a relation, a retraction and
    another tenant's claim, over three commits; and a fourth commit off the chain."""
    repo = make_module_repo()
    repo.add(observation("obs-20260110-090000-0001", "2026-01-10T09:00:00Z", entity=ACME, priority=100,
                         fields={"name": "Acme", "phone": "111", "founded_on": "2001-05-04"}, **ORG),
             observation("obs-20260110-090000-0002", "2026-01-10T09:00:00Z", entity="company/acme-ltd", fields={"vat": "GB1"},
                         **ORG))
    first = repo.commit("first")
    repo.add(observation("obs-20260210-090000-0003", "2026-02-10T09:00:00Z", entity="company/acme-ltd",
                         relations=[{"type": "DUPLICATE_OF", "target": ACME}], **ORG),
             observation("obs-20260210-090000-0004", "2026-02-10T09:00:00Z", entity="invoice/1",
                         fields={"invoice_date": "2026-02-01"}, relations=[{"type": "PART_OF", "target": ACME}], **ORG),
             observation("obs-20260210-090000-0005", "2026-02-10T09:00:00Z", entity=ACME, fields={"employees": 9000}, **ORG))
    repo.commit("merge, invoice")
    repo.add(observation("obs-20260310-090000-0006", "2026-03-10T09:00:00Z", source="human/alice", entity=ACME,
                         corrects="obs-20260110-090000-0001", fields={"phone": "222"}, **ORG),
             observation("obs-20260310-090000-0007", "2026-03-10T09:00:00Z", source="human/alice",
                         retracts="obs-20260210-090000-0005", **ORG),
             observation("obs-20260410-090000-0008", "2026-04-10T09:00:00Z", entity=ACME, fields={"phone": "555"},
                         priority=1000, tenant={"org": "globex"}))
    tip = repo.commit("correction, retraction, another tenant")
    assert repo.check().returncode == 0, repo.check()
    repo.add(observation("obs-20260510-090000-0009", "2026-05-10T09:00:00Z", entity=ACME, fields={"phone": "777"},
                         priority=2000, **ORG))
    side = repo.commit("a change not checked out")
    repo.git("branch", "side")
    repo.git("reset", "-q", "--hard", tip)  # HEAD back: `side` is off the indexed chain
    return repo, {"tip": None, "older": first, "side": side}


def questions(at: str | None) -> list[Any]:
    return [Snapshot(ACME, at, explain=True), Snapshot("company/acme-ltd", at), Snapshot(ACME, at),
            Relations(ACME, at=at), Related(ACME, hops=2, at=at, limit=24), Timeline(entity=ACME, limit=100, at=at),
            Show("obs-20260110-090000-0001", at), History(ACME), Snapshot(ACME, at, explain=True), Snapshot(ACME, at),
            Query(org="globex", at=at), Query(limit=10, at=at), Entities(at=at)]


def answers(session: Session, asked: list[Any]) -> list[Any]:
    found = []
    for request in asked:
        try:
            found.append(run(session, request).to_json())
        except Exception as exc:  # noqa: BLE001 - a refusal is an answer too, and must be the same one
            found.append((type(exc).__name__, str(exc)))
    return found


@pytest.mark.parametrize(("where", "kept_open", "tenant"), [("tip", False, None), ("older", True, {"org": "northwind"}),
                                                          ("side", False, {"org": "northwind"}), ("side", True, None)])
def test_every_question_asked_together_answers_what_it_answers_alone(told, where, kept_open, tenant) -> None:
    repo, commits = told
    session = Session(str(repo.path), binding=Binding.of(tenant))
    if kept_open:
        session.keep_open()
    asked = questions(commits[where])
    alone = answers(session, asked)
    with session.together():
        together = answers(session, asked)
    session.close()
    assert together == alone
    phone = {"tip": "222" if tenant else "555", "older": "111", "side": "777"}[where]  # the commit asked, the binding
    assert alone[0]["snapshot"]["phone"] == phone and alone[-3]["total"] == (0 if tenant or where == "older" else 1)


def test_a_block_shares_one_scope_per_commit_and_binding_and_closes_them(told) -> None:
    repo, commits = told
    session = Session(str(repo.path))
    side = session.rev(commits["side"], "at")
    with session.together():
        first = session.read(lambda scope: scope)
        with session.together():  # a block inside a block is the outer one
            again = session.read(lambda scope: scope)
        elsewhere = session.read(lambda scope: scope, side)
        narrowed = session.read(lambda scope: scope, binding=Binding.of({"org": "globex"}))
        assert again is first and session.read(lambda scope: scope, side) is elsewhere
        assert len({id(first), id(elsewhere), id(narrowed)}) == 3
        assert first.one("SELECT 1") == (1,)
    with pytest.raises(Exception, match="(?i)closed"):
        first.one("SELECT 1")
    assert session.read(lambda scope: scope) is not first  # outside a block, each read its own


def test_reads_of_one_index_overlapping_in_one_process_answer_as_they_do_alone(told) -> None:
    """A library user's threads, or a block kept open while another Session reads the same file:
    DuckDB gives one process one database per file, and the first sandboxed reader locks its
    configuration, so a second reader's sandbox (or its fts extension) could not be set and the
    read failed as an INTERNAL_ERROR."""
    import threading

    repo, _ = told
    asked = [request for request in questions(None) if not isinstance(request, History)]  # History: the dearest, no other path
    alone = answers(Session(str(repo.path)), asked)
    bound = Session(str(repo.path), binding=Binding.of({"org": "northwind"}))
    bound_alone = answers(bound, asked)
    first = Session(str(repo.path))
    with first.together():
        assert answers(first, asked[:1]) == alone[:1]  # this block's connection is open and locked
        assert answers(Session(str(repo.path)), asked) == alone
        assert answers(bound, asked) == bound_alone
    found: dict[int, list[Any]] = {}

    def reader(number: int) -> None:
        session = Session(str(repo.path), binding=Binding.of({"org": "northwind"} if number % 2 else None))
        found[number] = [answers(session, asked)]

    threads = [threading.Thread(target=reader, args=(number,)) for number in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for number, runs in found.items():
        assert runs == [bound_alone if number % 2 else alone], number

"""What a kept-open reader keeps between text questions (docs/design/15-recall.md, "Kept
rows"): its read scopes, each visible row's place in the default order, timestamp and
entity, its latest records, the filters' rows and neighbours. All of it is kept per index generation and view (commit,
binding, ceiling, retention), so two tenants' questions interleaved in one scope, over one
session, are answered as whole commands answer each alone: no row, score or count of the
other tenant's ever shows."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, observation
from test_recall_ranking import CHAT, OTHER, TURNS, doc, wordllama_model  # noqa: F401 - a fixture

MORE = [  # acme and globex turns interleaved in the same thread, a day later
    ("obs-20260302-090000-0011", "The hiking club meets at the ridge on Sunday.", "acme"),
    ("obs-20260302-090010-0012", "The museum club meets on Sunday too.", "globex"),
    ("obs-20260302-090020-0013", "Bring water and maps.", "acme"),
    ("obs-20260302-090030-0014", "Bring the old coast maps.", "globex"),
]
TEXTS = ["hiking last weekend", "museum maps", "Sunday club", "what did Sam bring on 2 March 2026",
         "sister in March 2026", "zebra"]


@pytest.fixture(scope="module")
def mixed(make_module_repo) -> Repo:
    repo = make_module_repo("mixed")
    repo.add(*(doc(*turn) for turn in TURNS), doc(*OTHER, scope=["chat/shop"]),
             *(observation(i, event=e, body="", scope=CHAT, tenant={"org": t}, entity="person/sam") for i, e, t in MORE))
    repo.commit("two tenants in one thread")
    return repo


def whole(repo: Repo, text: str, args: list[str], env: dict[str, str]) -> dict:
    proc = repo.obsrepo("query", "--text", text, "--format", "json", "--limit", "50", *args, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def shown(page: dict) -> dict:
    """What a caller learns from a page: the ids, scores, counts and coverage."""
    return {"rows": [(o["id"], o["score"], o.get("scores"), o.get("weight")) for o in page["observations"]],
            "total": page["total"], "coverage": page.get("semantic_coverage")}


@pytest.mark.parametrize("match", ["lexical", "hybrid"])
def test_two_tenants_interleaved_over_one_kept_session_see_only_their_own(mixed, wordllama_model, match):  # noqa: F811
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query

    embedder = f"model2vec:{wordllama_model}"
    env = {"OBSREPO_EMBEDDER": embedder}
    assert mixed.obsrepo("index", env=env).returncode == 0
    tenants = {"acme": {t[0] for t in TURNS + MORE + [OTHER] if t[2] == "acme"},
               "globex": {t[0] for t in TURNS + MORE if t[2] == "globex"}}
    expected = {}
    for text in TEXTS:
        for org in ("acme", "globex", None):
            for scopes, order in (((), "desc"), (tuple(CHAT), "desc"), (tuple(CHAT), "asc")):
                args = ["--match", match, "--order", order, *(["--tenant", f"org={org}"] if org else []),
                        *[a for s in scopes for a in ("--scope", s)]]
                expected[(text, org, scopes, order)] = shown(whole(mixed, text, args, env))
    session = Session(str(mixed.path), embedder=embedder)
    session.keep_open()
    try:
        for _ in range(2):  # the second round answers from what the first left kept
            for text in TEXTS:
                for scopes, order in (((), "desc"), (tuple(CHAT), "desc"), (tuple(CHAT), "asc")):
                    for org in ("acme", "globex", None, "globex", "acme"):  # each tenant right after the other
                        asked = Query(text=text, scopes=scopes, org=org, match=match, limit=50, order=order)
                        got = shown(run(session, asked).to_json())
                        assert got == expected[(text, org, scopes, order)], (text, org, scopes, order)
                        if org:
                            assert {row[0] for row in got["rows"]} <= tenants[org], (text, org)
    finally:
        session.close()


def test_a_new_commit_is_read_through_fresh_kept_structures(make_repo):
    """The kept scope, places and records belong to a generation: a commit the session sees
    next brings its row into the page, with the place and record of the new generation."""
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query

    repo = make_repo("moving")
    repo.add(doc(*TURNS[0]))
    repo.commit("one turn")
    session = Session(str(repo.path))
    session.keep_open()
    try:
        ask = Query(text="hiking club ridge", org="acme", limit=10)
        assert [o["id"] for o in run(session, ask).to_json()["observations"]] == [TURNS[0][0]]
        repo.add(doc(*MORE[0]), doc(*MORE[1]))
        repo.commit("the club")
        got = run(session, ask).to_json()
        assert [o["id"] for o in got["observations"]] == [MORE[0][0], TURNS[0][0]]
        assert got["observations"][0]["event"] == MORE[0][1]
    finally:
        session.close()


def test_an_ascii_text_is_split_and_stemmed_as_the_index_tokenizes(mixed):
    """A question in ASCII is split in Python (the index's Unicode pattern costs DuckDB ~2 ms
    to compile per statement): the same tokens and stems as the index's own statement, for
    letters, digits, underscores, punctuation and spacing of every kind."""
    import string

    from hypothesis import given, settings
    from hypothesis import strategies as st
    from obsrepo.index.rows import TOKENS
    from obsrepo.ops import Session
    from obsrepo.read.bm25 import _stemmed

    sql = f"SELECT t, stem(t, 'porter') FROM (SELECT unnest({TOKENS.format('?')}) AS t) WHERE t <> ''"
    fixed = ["When did Caroline go to the LGBTQ support-group?", "  __x_y__ 42nd\tRUNNING\nruns;ran...", "", "!!!",
             "e-mail's O'Neil 3.14 x86_64 ABC123def"]

    def check(scope) -> None:
        @settings(max_examples=150, deadline=None)
        @given(st.lists(st.one_of(st.text(string.printable, max_size=12), st.sampled_from(fixed)), max_size=4))
        def same(parts: list[str]) -> None:
            text = " ".join(parts)
            assert _stemmed(scope, text) == scope.rows(sql, [text]), text

        same()

    for keep in (False, True):  # a command's (no kept stems) and a kept-open reader's
        session = Session(str(mixed.path))
        if keep:
            session.keep_open()
        try:
            session.read(check)
        finally:
            session.close()

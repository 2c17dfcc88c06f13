"""Hints in the question (docs/recall.md, "Hints in the question"): a text naming a date, a
month or a year with its year ranks the observations of that period higher (`--time-hint
auto`, the default), one naming an entity by a word of its key ranks the observations about it
higher (`--entity-hint auto`); `off` ranks by the words alone; the command line, the library
and MCP take the same request fields; the same page whatever order the files came in."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import anyio
import pytest
from helpers import Repo, observation
from test_mcp import call, stdio_session
from test_recall_ranking import page, wordllama_model  # noqa: F401 - a fixture

HIKES = [  # the same words in three months; the newest is not the one asked about
    ("obs-20260412-090000-0001", "2026-04-12T09:00:00Z", "We went hiking up the ridge trail."),
    ("obs-20260510-090000-0002", "2026-05-10T09:00:00Z", "We went hiking up the ridge trail."),
    ("obs-20260607-090000-0003", "2026-06-07T09:00:00Z", "We went hiking up the ridge trail."),
    ("obs-20260510-093000-0004", "2026-05-10T09:30:00Z", "The weather held all day."),
]


def doc(obs_id: str, timestamp: str, event: str) -> object:
    return observation(obs_id, timestamp, event=event, body="", scope=[f"chat/{obs_id[-4:]}"])  # no neighbours


@pytest.fixture(scope="module")
def hikes(make_module_repo) -> Repo:
    repo = make_module_repo("hikes")
    repo.add(*(doc(*hike) for hike in HIKES))
    repo.commit("three hikes")
    return repo


def day(text: str) -> tuple[str, str]:
    from obsrepo.read.when import periods

    (period,) = periods(text)
    return period[0].date().isoformat(), period[1].date().isoformat()


def test_the_periods_a_text_names():
    from obsrepo.read.when import periods

    assert day("What dish did Nate make on 9 November, 2022?") == ("2022-11-09", "2022-11-10")
    assert day("on October 6, 2022") == day("on 6th of October 2022") == day("2022-10-06") == ("2022-10-06", "2022-10-07")
    assert day("What did Joanna share in August 2022?") == day("in Aug. 2022") == ("2022-08-01", "2022-09-01")
    assert day("in December 2023") == ("2023-12-01", "2024-01-01")
    assert day("an ankle injury in 2023") == ("2023-01-01", "2024-01-01")
    assert periods("in December, last week, yesterday, May I ask?") == []  # no year, or no moment to count from
    assert periods("on 31 November 2022") == [(datetime(2022, 11, 1, tzinfo=timezone.utc),
                                                datetime(2022, 12, 1, tzinfo=timezone.utc))]  # no such day: the month
    assert len(periods("between 2022-08 and 9 November, 2022 (2022-08 again)")) == 2


def test_a_named_month_ranks_its_rows_first_and_off_ranks_by_the_words(hikes):
    may, april, june = HIKES[1][0], HIKES[0][0], HIKES[2][0]
    hinted = page(hikes, "where did we go hiking in May 2026")
    plain = page(hikes, "where did we go hiking in May 2026", "--time-hint", "off")
    assert [row for row, _ in plain] == [june, may, april]  # equal scores: newest first
    assert [row for row, _ in hinted] == [may, june, april]
    assert dict(hinted)[may] == round(2 * dict(plain)[may], 6) and dict(hinted)[june] == dict(plain)[june]
    # a period alone raises nothing: the row must match the words (or a neighbour's)
    assert HIKES[3][0] not in dict(hinted)
    # a day, a year: the same rule
    assert page(hikes, "hiking on 7 June 2026")[0][0] == june
    assert page(hikes, "hiking in 2025") == page(hikes, "hiking in 2025", "--time-hint", "off")


def test_the_library_and_mcp_take_the_same_field(hikes):
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query

    session = Session(str(hikes.path))
    session.keep_open()
    try:
        for hint in ("auto", "off"):
            got = run(session, Query(text="hiking in May 2026", time_hint=hint, entity_hint=hint)).to_json()
            assert [(o["id"], o["score"]) for o in got["observations"]] == page(
                hikes, "hiking in May 2026", "--time-hint", hint, "--entity-hint", hint)
    finally:
        session.close()

    async def scenario() -> None:
        async with stdio_session(hikes) as client:
            for hint in ("auto", "off"):
                answer = await call(client, "observation_query", mode="json", text="hiking in May 2026", timeHint=hint,
                                    entityHint=hint)
                assert [(o["id"], o["score"]) for o in answer["observations"]] == page(
                    hikes, "hiking in May 2026", "--time-hint", hint, "--entity-hint", hint)

    anyio.run(scenario)


def test_a_bad_hint_is_refused_naming_the_option(hikes):
    proc = hikes.obsrepo("query", "--text", "hiking", "--time-hint", "maybe")
    assert proc.returncode == 2 and "--time-hint" in proc.stdout + proc.stderr


def test_hybrid_with_a_real_model_takes_the_hint_whatever_order_the_files_came_in(hikes, make_repo,
                                                                                  wordllama_model):  # noqa: F811
    env = {"OBSREPO_EMBEDDER": f"model2vec:{wordllama_model}"}
    permuted = make_repo("hikes-permuted")
    for hike in reversed(HIKES):
        permuted.add(doc(*hike))
        permuted.commit(f"hike {hike[0]}")
    for repo in (hikes, permuted):
        assert repo.obsrepo("index", env=env).returncode == 0
    text = "where did we go hiking in May 2026"
    pages = [page(repo, text, "--match", "hybrid", env=env) for repo in (hikes, permuted)]
    assert pages[0] == pages[1]
    assert pages[0][0][0] == HIKES[1][0]
    # ranked by meaning, the hint multiplies the fused score, and the record says by how much
    proc = hikes.obsrepo("query", "--text", text, "--match", "hybrid", "--format", "json", env=env)
    first = json.loads(proc.stdout)["observations"][0]
    scores = first["scores"]
    assert scores["hint"] == 2.0 and first["score"] == round(
        round(round(0.3 * scores["semantic"] + 0.7 * scores["lexical"], 6) * 2.0, 6) * scores["weight"], 6)
    # the hints are computed for the rows that may reach the page only: every page is a slice of
    # the whole ranking, whatever its size and offset
    for match in ("lexical", "hybrid"):
        whole = page(permuted, text, "--match", match, env=env)
        for limit, offset in ((1, 0), (1, 1), (2, 1), (3, 0)):
            assert page(permuted, text, "--match", match, "--limit", str(limit), "--offset", str(offset),
                          env=env) == whole[offset:offset + limit], (match, limit, offset)
    off = page(hikes, text, "--match", "hybrid", "--time-hint", "off", env=env)
    assert off[0][0] == HIKES[2][0]


def test_a_named_entity_ranks_its_rows_first_and_off_ranks_by_the_words(make_repo):
    repo = make_repo("speakers")
    adopted = observation("obs-20260301-100000-0001", event="We adopted a puppy from the shelter.", body="",
                          entity="person/mary-ann", scope=["chat/a"])
    told = observation("obs-20260301-100010-0002", event="Mary Ann told me the shelter has a puppy.", body="",
                       entity="person/bob", scope=["chat/b"])
    aside = observation("obs-20260301-100020-0003", event="Mary Ann is away.", body="", entity="person/mary-ann",
                        scope=["chat/c"])
    repo.add(adopted, told, aside)
    repo.commit("speakers")
    text = "Where did Mary Ann adopt the puppy?"
    hinted, plain = dict(page(repo, text)), dict(page(repo, text, "--entity-hint", "off"))
    assert page(repo, text)[0][0] == adopted.id
    assert hinted[adopted.id] == round(2 * plain[adopted.id], 6) and hinted[told.id] == plain[told.id]
    assert hinted[aside.id] == round(2 * plain[aside.id], 6)  # its own words reached it: the hint orders it
    assert set(hinted) == set(plain), "a hint never finds a row the words did not"
    # function words name nothing: "the" in a key is no hint
    assert page(repo, "the puppy", "--entity-hint", "off") == page(repo, "the puppy")
    proc = repo.obsrepo("query", "--text", "puppy", "--entity-hint", "sometimes")
    assert proc.returncode == 2 and "--entity-hint" in proc.stdout + proc.stderr

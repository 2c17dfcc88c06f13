"""How text ranks (docs/recall.md, "How text ranks"): the question's function words dropped, a
reply found through the turn before it (context from neighbours), never through another
tenant's row, the same page whatever the order the files came in; lexical and hybrid with a
real static model (a few-MB subset of the `wordllama` package's token table, converted as
`obsrepo embed pull wordllama:…` converts it)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, observation

CHAT = ["chat/hike"]
TURNS = [  # (id, event, tenant)
    ("obs-20260301-100000-0001", "Where did you go hiking last weekend?", "acme"),
    ("obs-20260301-100010-0002", "I kept it a secret, but the museum downtown reopened.", "globex"),
    ("obs-20260301-100020-0003", "Up the ridge trail with my sister.", "acme"),
    ("obs-20260301-100030-0004", "What did the museum show?", "globex"),
    ("obs-20260301-100040-0005", "Old maps of the coast.", "globex"),
    ("obs-20260301-100050-0006", "Nice, the weather held all day.", "acme"),
]
OTHER = ("obs-20260301-100015-0007", "Hiking boots were on sale at the mall.", "acme")  # another thread, between


def doc(obs_id: str, event: str, tenant: str, scope: list[str] = CHAT) -> Any:
    return observation(obs_id, event=event, body="", scope=scope, tenant={"org": tenant})


def page(repo: Repo, text: str, *args: str, env: dict[str, str] | None = None) -> list[tuple[str, float]]:
    proc = repo.obsrepo("query", "--text", text, "--format", "json", *args, env=env or {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [(o["id"], o["score"]) for o in json.loads(proc.stdout)["observations"]]


@pytest.fixture(scope="module")
def chat(make_module_repo) -> Repo:
    repo = make_module_repo("chat")
    repo.add(*(doc(*turn) for turn in TURNS), doc(*OTHER, scope=["chat/shop"]))
    repo.commit("a chat")
    return repo


def test_a_reply_is_found_through_the_turn_before_it_and_not_across_threads(chat):
    found = dict(page(chat, "hiking last weekend", "--tenant", "org=acme"))
    question, reply, after, boots = TURNS[0][0], TURNS[2][0], TURNS[5][0], OTHER[0]
    # the reply shares no word with the text: it scores 0.4 of the question before it in its thread
    assert set(found) == {question, reply, boots}
    assert found[reply] == round(0.4 * (found[question]), 6) or abs(found[reply] - 0.4 * found[question]) < 2e-6
    assert after not in found, "the reply scored nothing of its own: the turn after it gains nothing"
    # the boots' row lies between them in time, in another thread: it is no neighbour of either
    assert found[question] > found[reply]


def test_the_questions_function_words_are_dropped_unless_nothing_else_is_left(chat):
    asked = page(chat, "What did the museum show when it reopened?", "--tenant", "org=globex")
    assert asked[0][0] in (TURNS[1][0], TURNS[3][0]) and TURNS[4][0] in dict(asked)  # the museum, then the reply
    # "what did" alone: nothing else is left, so those words are the text
    only = dict(page(chat, "what did", "--tenant", "org=globex"))
    assert TURNS[3][0] in only


def test_another_tenants_neighbour_never_changes_a_bound_callers_score_or_order(chat, make_repo):
    """Two tenants' turns interleaved in one scope: acme's page, bound, is the page of a
    repository holding only acme's rows (its neighbours are its own previous and next rows)."""
    alone = make_repo("alone")
    alone.add(*(doc(*turn) for turn in TURNS if turn[2] == "acme"), doc(*OTHER, scope=["chat/shop"]))
    alone.commit("acme only")
    for text in ("hiking last weekend", "sister ridge", "museum secret weekend", "weather"):
        assert page(chat, text, "--tenant", "org=acme") == page(alone, text), text


def test_the_page_is_the_same_whatever_order_the_files_came_in(make_repo, chat):
    permuted = make_repo("permuted")
    for turn in reversed(TURNS):  # one commit each, last first
        permuted.add(doc(*turn))
        permuted.commit(f"add {turn[0]}")
    permuted.add(doc(*OTHER, scope=["chat/shop"]))
    permuted.commit("the other thread")
    for text in ("hiking last weekend", "museum", "what did the museum show"):
        assert page(permuted, text) == page(chat, text), text


def test_the_library_and_the_command_line_give_the_same_page(chat):
    from obsrepo.api import Repository
    from obsrepo.read.query import QueryRequest

    api = Repository(str(chat.path), tenant={"org": "acme"})
    answer = api.query(QueryRequest(text="hiking last weekend", limit=10))
    assert [(o["id"], o["score"]) for o in answer["observations"]] == page(chat, "hiking last weekend",
                                                                           "--tenant", "org=acme")
    # a kept-open reader (the MCP server's) looks the terms up in the postings it keeps, and keeps
    # each filter's neighbours: the same pages, asked twice
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query

    session = Session(str(chat.path))
    session.keep_open()
    try:
        for text in ("hiking last weekend", "museum secret weekend", "what did the museum show", "sister", "zebra"):
            for scopes in ((), ("chat/hike",)):
                expected = page(chat, text, *[a for s in scopes for a in ("--scope", s)])
                for _ in range(2):
                    got = run(session, Query(text=text, scopes=scopes, limit=50)).to_json()
                    assert [(o["id"], o["score"]) for o in got["observations"]] == expected, (text, scopes)
    finally:
        session.close()


# -- a real static model -------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordllama_model(tmp_path_factory) -> Path:
    """A few-MB model: the installed wordllama's tokenizer and the first 32 columns of its rows."""
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("the wordllama package is not installed (pip install 'obsrepo[wordllama]')")
    from obsrepo.embed import wordllama
    from obsrepo.embed.static import read_safetensors

    folder = tmp_path_factory.mktemp("wordllama") / "l2_supercat_32"
    source = wordllama.installed_package()
    assert source is not None
    wordllama.convert(source, "l2_supercat_256", str(folder))
    rows = read_safetensors(str(folder / "model.safetensors"))["embeddings"][:, :32].copy()
    wordllama._write_safetensors(str(folder / "model.safetensors"), {"embeddings": rows})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(dict(config, hidden_dim=32)))
    return folder


def test_hybrid_with_a_real_model_folds_context_in_and_holds_the_tenant_line(chat, make_repo, wordllama_model):
    env = {"OBSREPO_EMBEDDER": f"model2vec:{wordllama_model}"}
    alone = make_repo("alone-hybrid")
    alone.add(*(doc(*turn) for turn in TURNS if turn[2] == "acme"), doc(*OTHER, scope=["chat/shop"]))
    alone.commit("acme only")
    # an index built before the embedder was configured holds no vector: the query still answers
    # (by its lexical half; it used to fail on the empty vector table), and `index` embeds them
    proc = chat.obsrepo("query", "--text", "hiking", "--match", "hybrid", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["semantic_coverage"]["with_vectors"] == 0
    assert chat.obsrepo("index", env=env).returncode == 0
    for text in ("hiking last weekend", "a walk in the hills", "what did the museum show"):
        bound = page(chat, text, "--tenant", "org=acme", "--match", "hybrid", env=env)
        assert bound == page(alone, text, "--match", "hybrid", env=env), text
    ranked = dict(page(chat, "hiking last weekend", "--tenant", "org=acme", "--match", "hybrid", env=env))
    assert TURNS[2][0] in ranked  # the reply, through the question before it
    # the library's kept-open session answers as the command does, byte for byte
    from obsrepo.ops import Session, run
    from obsrepo.ops.reads import Query
    from obsrepo.ops.values import Binding

    session = Session(str(chat.path), embedder=env["OBSREPO_EMBEDDER"], binding=Binding.of({"org": "acme"}))
    session.keep_open()
    try:
        for _ in range(2):
            got = run(session, Query(text="hiking last weekend", match="hybrid", limit=50)).to_json()
            assert [(o["id"], o["score"]) for o in got["observations"]] == list(ranked.items())
    finally:
        session.close()


def test_a_converted_model_gives_the_librarys_vectors(wordllama_model):
    if importlib.util.find_spec("model2vec") is None:
        pytest.skip("model2vec is not installed")
    import numpy as np
    from model2vec import StaticModel
    from obsrepo.embed.static import StaticTable

    texts = ["Where did you go hiking last weekend?", "I kept it a secret"]
    assert np.allclose(StaticModel.from_pretrained(str(wordllama_model)).encode(texts),
                       StaticTable(str(wordllama_model)).encode(texts), atol=1e-6)
    assert shutil.which("git")


def test_embed_pull_converts_the_installed_wordllama_without_a_network(repo, tmp_path):
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("the wordllama package is not installed (pip install 'obsrepo[wordllama]')")
    env = {"HF_HUB_OFFLINE": "1", "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}
    proc = repo.obsrepo("embed", "pull", "wordllama:l2_supercat_256", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pulled = json.loads(proc.stdout)
    assert pulled["folder"] == str((repo.path / ".obsrepo" / "models" / "wordllama--l2_supercat_256").resolve())
    assert pulled["dimension"] == 256 and pulled["embedder"] == f"model2vec:{pulled['folder']}"
    info = repo.obsrepo("embed", "info", "I kept it a secret", "--format", "json",
                        env={"OBSREPO_EMBEDDER": pulled["embedder"]})
    assert info.returncode == 0 and len(json.loads(info.stdout)["vectors"][0]) == 256, info.stderr
    again = repo.obsrepo("embed", "pull", "wordllama:l2_supercat_256", "--format", "json", env=env)
    assert json.loads(again.stdout)["fingerprint"] == pulled["fingerprint"], "the same package, the same model"
    wrong = repo.obsrepo("embed", "pull", "wordllama:l3_giant_7", "--format", "json")
    assert wrong.returncode == 2 and "l2_supercat_<dims>" in wrong.stdout, wrong.stdout

"""The inspector's identity review page (docs/design.md §20), asked in process: both snapshots
side by side, the evidence, the two commands that decide; its JSON twin is the command line's
answers; the home page links to it; a bound server shows only pairs its tenant sees whole."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from helpers import Repo, obs_id, observation
from inspector_asgi import get, get_json, inspector
from obsrepo.ops import Binding, Session
from test_identity import PEOPLE, PERSON_SCHEMA, person_docs

pytest.importorskip("starlette")


@pytest.fixture(scope="module")
def people(make_module_repo: Callable[..., Repo]) -> Repo:
    repo = make_module_repo("review")
    repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
    repo.add(*person_docs(PEOPLE, tenant={"org": "a"}))
    repo.add(observation(obs_id(80), entity="person/p06-dup", tenant={"org": "b"}, fields=PEOPLE["p06"]))
    repo.commit("people")
    return repo


def test_the_review_page_shows_both_snapshots_the_evidence_and_the_commands(people: Repo) -> None:
    app = inspector(Session(str(people.path)))
    twin = get_json(app, "/identities.json?limit=50")
    assert twin["identities"] == json.loads(people.obsrepo("identities", "--limit", "50", "--format", "json").stdout)
    for name, snapshot in twin["snapshots"].items():
        assert snapshot == json.loads(people.obsrepo("snapshot", name, "--format", "json").stdout)
    status, _, page = get(app, "/identities?limit=50")
    assert status == 200
    assert "obsrepo merge person/p01-dup person/p01 --reason" in page
    assert "obsrepo distinct person/p01 person/p01-dup --reason" in page
    block = page[page.index('href="/entity/person/p01"'):]
    block = block[:block.index("</section>")]
    assert "conaghty" in block and "conaghtey" in block and "jaro_winkler" in block  # side by side, with evidence
    assert re.search(r'href="/observation/obs-', block)
    home = get(app, "/")[2]
    assert 'href="/identities"' in home


def test_paging_and_filters_are_kept(people: Repo) -> None:
    app = inspector(Session(str(people.path)))
    first = get_json(app, "/identities.json?limit=1&min=0.5&type=person")
    assert first["identities"]["total"] > 1 and len(first["identities"]["candidates"]) == 1
    page = get(app, "/identities?limit=1&min=0.5&type=person")[2]
    assert 'href="/identities?type=person&amp;min=0.5&amp;offset=1"' in page
    assert get(app, "/identities?min=lots")[0] == 400
    assert get(app, "/identities?type=nobody")[0] == 200


def test_a_bound_server_shows_only_pairs_its_tenant_sees_whole(people: Repo) -> None:
    unbound = get_json(inspector(Session(str(people.path))), "/identities.json?limit=100")
    assert ["person/p06", "person/p06-dup"] in [c["entities"] for c in unbound["identities"]["candidates"]]
    bound = get_json(inspector(Session(str(people.path), binding=Binding.of({"org": "a"}))), "/identities.json?limit=100")
    assert bound["identities"]["total"] > 0
    assert all("p06-dup" not in name for name in bound["snapshots"])
    assert all("person/p06-dup" not in c["entities"] for c in bound["identities"]["candidates"])

"""The inspector's trust (docs/design.md §8b, §17), asked in process (tests/inspector_asgi.py):
a bound server's home page and belief history hold nothing of another tenant's, the entity page
says the rule that decided each field in words, an observation page links what corrects and
what retracts it, and the home page says what it counts and which commits it shows.

Two tenants share one repository: `org=b` wrote a belief `comp-x` citing its own observation,
then deleted it; `org=a` later wrote its own `comp-x`.
"""

from __future__ import annotations

import re

import pytest
from helpers import comprehension, hermetic, obs_id, observation
from inspector_asgi import get, get_json, inspector

pytest.importorskip("starlette")

ACME = "company/acme"
B_STATEMENT = "Globex hides a merger"


class Story:
    def __init__(self, repo) -> None:
        self.repo = repo
        a = {"org": "a"}
        self.b_obs = [observation(obs_id(n), entity="company/globex", fields={"name": f"Globex {n}"}, tenant={"org": "b"},
                                  type="b.secret") for n in range(1, 5)]
        repo.add(*self.b_obs, comprehension("comp-x", [self.b_obs[0].id], statement=B_STATEMENT))
        self.b_commit = repo.commit("b's belief")
        repo.git("rm", "-q", "comprehension/comp-x.md")
        self.b_removal = repo.commit("b deletes its belief")
        repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields:\n"
                   "  tags: {policy: merge_array}\n  size: {policy: last_write}\n  vat: {policy: most_specific}\n")
        self.first = observation(obs_id(10, "2026-02-10T09:00:00Z"), entity=ACME, tenant=a, type="company.seen",
                                 fields={"name": "Acme", "tags": ["x"], "size": "small", "vat": "GB1", "phone": "1"})
        self.second = observation(obs_id(11, "2026-02-11T09:00:00Z"), entity=ACME, tenant=a, specificity=0.2,
                                  fields={"tags": ["y"], "size": "large", "vat": "GB2"})
        self.guess = observation(obs_id(15, "2026-02-11T10:00:00Z"), entity=ACME, tenant=a, priority=50, fields={"phone": "2"})
        self.fix = observation(obs_id(12, "2026-02-12T09:00:00Z"), entity=ACME, tenant=a, priority=1000,
                               corrects=[self.first.id], fields={"name": "Acme Corp"}, type="company.corrected")
        self.wrong = observation(obs_id(13, "2026-02-12T10:00:00Z"), entity=ACME, tenant=a, fields={"note": "oops"})
        self.withdraw = observation(obs_id(14, "2026-02-12T11:00:00Z"), tenant=a, retracts=[self.wrong.id],
                                    event="withdraw the note")
        repo.add(self.first, self.second, self.guess, self.fix, self.wrong, self.withdraw,
                 comprehension("comp-x", [self.first.id], statement="Acme is one company"))
        self.a_commit = repo.commit("a's work")


@pytest.fixture(scope="module")
def story(make_module_repo):
    return Story(make_module_repo())


@pytest.fixture(scope="module")
def apps(story):
    """(unbound, bound to org=a) applications over the story's repository."""
    from obsrepo.ops import Binding, Session

    with hermetic(story.repo.env):
        yield inspector(Session(str(story.repo.path))), inspector(Session(str(story.repo.path), binding=Binding.of({"org": "a"})))


def test_a_bound_belief_history_holds_only_the_versions_it_can_read(story, apps):
    unbound, bound = apps
    assert [v["statement"] for v in get_json(unbound, "/comprehension/comp-x.json")["history"]] == \
        [B_STATEMENT, "Acme is one company"]  # the unbound reader sees both documents of the id
    shown = get_json(bound, "/comprehension/comp-x.json")
    assert [(v["statement"], v["commit"]) for v in shown["history"]] == [("Acme is one company", story.a_commit)]
    status, _, page = get(bound, "/comprehension/comp-x")
    assert status == 200 and B_STATEMENT not in page and story.b_commit[:12] not in page
    # at b's own commit the bound reader sees no comp-x at all, exactly like a missing one
    assert get_json(bound, f"/comprehension/comp-x.json?at={story.b_commit}", 404)["error"]["code"] == "REF_NOT_FOUND"


def test_a_bound_home_page_counts_and_lists_only_what_it_can_read(story, apps):
    unbound, bound = apps
    home = get_json(bound, "/.json")
    assert home["overview"]["observations"] == {"visible": 6, "retracted": 1, "listed": 5, "expired": 0}
    assert home["overview"]["observations"]["listed"] == get_json(bound, "/search.json")["total"]
    assert {t["value"] for t in home["types"]} == {"company.seen", "company.corrected"}
    assert [(c["commit"], c["added"], c["removed"]) for c in home["overview"]["commits"]] == [(story.a_commit, 7, 0)]
    page = get(bound, "/")[2]
    for other in ("b.secret", "Globex", story.b_commit[:12], story.b_removal[:12]):
        assert other not in page, other
    everything = get_json(unbound, "/.json")
    assert everything["overview"]["observations"]["visible"] == 10
    assert [(c["commit"], c["added"], c["removed"]) for c in everything["overview"]["commits"]] == \
        [(story.a_commit, 7, 0), (story.b_removal, 0, 1), (story.b_commit, 5, 0)]


def test_the_home_page_says_what_it_counts_and_shows_recent_commits(story, apps):
    unbound, _ = apps
    page = get(unbound, "/")[2]
    observations = re.sub(r"<[^>]+>", "", page.split("<th>observations</th>", 1)[1].split("</tr>", 1)[0])
    assert observations == "9 listed by a search: 10 visible at this commit, 1 of them retracted"
    commits = page.split("<h2>Recent commits</h2>", 1)[1].split("</table>", 1)[0]
    assert f'href="/diff/{story.a_commit}~1..{story.a_commit}"' in commits and "7 added" in commits
    assert story.b_commit[:12] in commits and f"/diff/{story.b_commit}~1" not in commits  # the first commit: no parent
    assert get(unbound, f"/diff/{story.a_commit}~1..{story.a_commit}")[0] == 200
    by_type = page.split("<h2>By type</h2>", 1)[1].split("</table>", 1)[0]
    assert '<a href="/search?type=b.secret">b.secret</a></td><td class="num">4</td>' in by_type


def test_the_entity_page_says_the_rule_that_decided_each_field_in_words(apps):
    unbound, _ = apps
    page = get(unbound, f"/entity/{ACME}")[2]
    snapshot = page.split("<h2>Snapshot</h2>", 1)[1].split("</table>", 1)[0]
    rules = {row.split("</th>", 1)[0]: re.sub(r"<[^>]+>", "", row.split("<td>", 2)[1].split("</td>", 1)[0])
             for row in snapshot.split("<th>")[5:]}
    assert rules == {"name": "correction a correction beats every other observation",
                     "phone": "highest priority higher priority (100 over 50)",
                     "size": "last write later (2026-02-11 09:00 UTC over 2026-02-10 09:00 UTC)",
                     "tags": "merged array the values of 2 observations merged",
                     "vat": "most specific more specific (0.2 over 0.0)"}
    for shown in (page, get(unbound, "/")[2], get(unbound, "/diff/HEAD~1..HEAD")[2]):
        assert not re.search(r"\b(last_write|merge_array|most_specific|highest_priority)\b", shown)


def test_an_observation_page_links_what_corrects_it_and_what_retracts_it(story, apps):
    unbound, bound = apps
    for app in apps:
        corrected = get(app, f"/observation/{story.first.id}")[2]
        assert f'<a class="id" href="/observation/{story.fix.id}">' in corrected.split("<h2>Corrected by</h2>", 1)[1]
        retracted = get(app, f"/observation/{story.wrong.id}")[2]
        assert f'<a class="id" href="/observation/{story.withdraw.id}">' in retracted.split("<h2>Retracted by</h2>", 1)[1]
    shown = get_json(unbound, f"/observation/{story.first.id}.json")
    assert (shown["corrected_by"], shown["retracted_by"]) == ([story.fix.id], [])
    assert get_json(unbound, f"/observation/{story.wrong.id}.json")["retracted_by"] == [story.withdraw.id]

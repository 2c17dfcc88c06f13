"""`obsrepo serve` (docs/design.md §17): the inspector, asked over HTTP as a browser would.

A real server (`python -m obsrepo serve --port 0`) over a real repository; every page answers,
every JSON twin equals the command line's JSON for the same question, `?at` pins a commit, a
bound server answers another tenant's id exactly like a missing one, hostile Markdown stays text,
and the guard refuses foreign hosts and origins, writes and missing tokens.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import pytest
from helpers import Repo, Server, comprehension, obs_id, observation

pytest.importorskip("starlette")

ACME = "company/acme"
BUSY = "company/busy"
HOSTILE_BODY = ("Call [now](javascript:alert(1)) or [here](JaVaScRiPt:alert(2)) or <https://example.com/ok>.\n\n"
                "<script>alert(3)</script>\n\n<img src=x onerror=alert(4)>\n\n"
                '<a href="javascript:alert(5)" onclick="alert(6)">raw</a>')


def wbr(name: str) -> str:
    """An id as a page shows it: a line may break after its `-` and `/` only."""
    return name.replace("-", "-<wbr>").replace("/", "/<wbr>")


def cli_json(repo: Repo, *args: str) -> Any:
    proc = repo.obsrepo(*args, "--format", "json")
    assert proc.returncode in (0, 1), proc
    return json.loads(proc.stdout)


class Demo:
    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.first = observation(obs_id(1), entity=ACME, fields={"name": "Acme", "phone": "123"}, scope=["task/1"],
                                 tenant={"org": "northwind"}, type="company.seen",
                                 relations=[{"type": "PART_OF", "target": "company/holding"}])
        self.holding = observation(obs_id(6), entity="company/holding", fields={"name": "Holding"}, tenant={"org": "northwind"})
        self.hostile = observation(obs_id(2), entity=ACME, fields={"note": '"><script>alert(7)</script>'},
                                   event="<b>bold</b> claim", body=HOSTILE_BODY, tenant={"org": "northwind"})
        self.other = observation(obs_id(3), entity="company/globex", fields={"name": "Globex"}, tenant={"org": "contoso"})
        self.secret = observation(obs_id(4), entity="company/secret", fields={"name": "Hidden"}, tenant={"org": "northwind"},
                                  classification="restricted")
        self.belief = comprehension("comp-acme", [self.first.id], topic="Acme's phone", statement="Acme answers on 123")
        # a neighbour's name as another tenant and above the bound server's ceiling tell it: never its to see
        self.holding_elsewhere = [
            observation(obs_id(7, "2026-02-14T09:00:00Z"), entity="company/holding", fields={"name": "Holding (contoso)"},
                        tenant={"org": "contoso"}),
            observation(obs_id(8, "2026-02-14T10:00:00Z"), entity="company/holding", fields={"name": "Holding (secret)"},
                        tenant={"org": "northwind"}, classification="restricted")]
        # a busy entity (another tenant's): more challengers and relations than its page lists, a date field
        self.busy = [observation(obs_id(20 + n, f"2026-01-{n + 1:02d}T08:00:00Z"), entity=BUSY,
                                 fields={"stage": f"stage {n}", "due": f"2026-03-{n + 1:02d}"}, tenant={"org": "contoso"},
                                 relations=[{"type": "REFERS_TO", "target": f"company/part-{n}-{k}"} for k in range(5)])
                     for n in range(12)]
        repo.add(self.first, self.hostile, self.other, self.secret, self.holding, self.belief, *self.holding_elsewhere,
                 *self.busy)
        self.base = repo.commit("base")
        self.change = observation(obs_id(5), entity=ACME, fields={"phone": "456"}, specificity=0.5, scope=["task/1"],
                                  tenant={"org": "northwind"}, type="company.phone", source="agent/web")
        revised = comprehension("comp-acme", [self.first.id, obs_id(5)], version=2, topic="Acme's phone",
                                prior={"statement": "Acme answers on 123", "confidence": "medium", "source": "comp-acme/v1"},
                                posterior={"statement": "Acme moved to 456", "confidence": "high",
                                           "update_reasoning": "a more specific reading", "observations_used": [obs_id(5)]})
        repo.add(self.change, revised)
        self.head = repo.commit("phone")
        # a commit off the indexed chain (a pull request not checked out): pages read it through an overlay
        repo.git("checkout", "-q", "-b", "side")
        repo.add(observation(obs_id(9, "2026-02-15T09:00:00Z"), entity="company/holding", fields={"name": "Holding (side)"},
                             tenant={"org": "northwind"}))
        self.side = repo.commit("side")
        repo.git("checkout", "-q", "-")


@pytest.fixture(scope="module")
def demo(make_module_repo) -> Demo:
    return Demo(make_module_repo())


@pytest.fixture(scope="module")
def server(demo: Demo):
    running = Server(demo.repo)
    yield running
    running.close()


@pytest.fixture(scope="module")
def bound(demo: Demo):
    running = Server(demo.repo, "--tenant", "org=northwind", "--max-classification", "internal")
    yield running
    running.close()


def pages(demo: Demo) -> list[str]:
    return ["/", "/search", "/search?q=phone&scope=task/1", f"/entity/{ACME}", f"/history/{ACME}", f"/observation/{demo.first.id}",
            f"/observation/{demo.hostile.id}", "/comprehension/comp-acme", f"/diff/{demo.base}..{demo.head}"]


def test_every_page_answers_with_the_security_headers(demo, server):
    for path in [*pages(demo), "/static/style.css"]:
        status, headers, body = server.get(path)
        assert status == 200, (path, body[:500])
        assert "default-src 'self'" in headers["content-security-policy"] and "'unsafe-inline'" not in \
            headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY", path
        if path != "/static/style.css":
            assert headers["content-type"].startswith("text/html") and "<script" not in body.lower(), path
            assert '<link rel="stylesheet" href="/static/style.css">' in body, path
    status, headers, body = server.get("/static/style.css")
    assert "prefers-color-scheme: dark" in body and headers["content-type"].startswith("text/css")


def test_the_entity_page_shows_the_snapshot_the_rule_in_words_and_links(demo, server):
    status, _, body = server.get(f"/entity/{ACME}")
    assert status == 200
    assert body.index("Snapshot") < body.index("Challengers") < body.index("Timeline") < body.index("History")
    assert f'<a href="/history/{ACME}">' in body  # the whole history is a page of its own: seconds on a large repository
    history = server.get(f"/history/{ACME}")[2]
    assert f'<a class="id" href="/observation/{demo.change.id}">' in history and "456" in history
    assert "more specific (0.5 over 0.0)" in body  # the rule that decided the phone, in words
    assert f'href="/observation/{demo.change.id}"' in body and "456" in body
    body = server.get("/search?scope=task/1")[2]  # facets: every match counted, each a link that narrows
    assert 'href="/search?scope=task%2F1&amp;type=company.phone">company.phone</a> <span class="count">1</span>' in body
    status, _, body = server.get(f"/diff/{demo.base}..{demo.head}")
    assert "more specific" in body and f'href="/entity/{ACME}?at={demo.head}"' in body


def test_every_json_twin_equals_the_cli_json(demo, server):
    repo = demo.repo
    home = server.json("/.json")
    assert home["entities"] == cli_json(repo, "entities")
    assert home["recent"] == cli_json(repo, "query", "--limit", "10")
    assert home["status"]["indexed_commit"] == cli_json(repo, "status")["indexed_commit"] == demo.head
    assert server.json("/search.json?q=phone&scope=task/1&limit=5") == \
        cli_json(repo, "query", "--text", "phone", "--scope", "task/1", "--limit", "5")
    assert server.json("/search.json?type=company.seen&offset=0") == cli_json(repo, "query", "--type", "company.seen")
    entity = server.json(f"/entity/{ACME}.json")
    assert entity == {"snapshot": cli_json(repo, "snapshot", ACME, "--explain"),
                      "relations": cli_json(repo, "relations", ACME),
                      "neighbourhood": cli_json(repo, "related", ACME, "--hops", "2", "--limit", "24"),
                      "timeline": cli_json(repo, "timeline", "--entity", ACME, "--limit", "100")}
    assert server.json(f"/history/{ACME}.json") == cli_json(repo, "history", ACME)
    assert server.json(f"/observation/{demo.hostile.id}.json") == cli_json(repo, "show", demo.hostile.id)
    assert server.json(f"/diff/{demo.base}..{demo.head}.json") == cli_json(repo, "diff", demo.base, demo.head)


def test_at_pins_a_commit_and_bad_revisions_are_the_envelope(demo, server):
    repo = demo.repo
    then = server.json(f"/entity/{ACME}.json?at={demo.base}")["snapshot"]
    assert then == cli_json(repo, "snapshot", ACME, "--explain", "--at", demo.base) and then["snapshot"]["phone"] == "123"
    assert server.json(f"/search.json?at={demo.base}")["at_commit"] == demo.base
    status, _, body = server.get(f"/entity/{ACME}?at={demo.base}")
    assert status == 200 and f'href="/observation/{demo.first.id}?at={demo.base}"' in body  # links keep the commit
    for given, status, code in (("HEAD%5E%7Btree%7D", 400, "VALIDATION_ERROR"), ("", 400, "VALIDATION_ERROR"),
                                ("no-such-branch", 404, "REF_NOT_FOUND")):
        error = server.json(f"/entity/{ACME}.json?at={given}", status)["error"]
        assert (error["code"], error["details"]["parameter"]) == (code, "at"), error
    error = server.json("/search.json?limit=5000", 400)["error"]
    assert error["details"]["parameter"] == "limit" and error["message"].startswith("limit")
    assert server.json("/search.json?offset=x", 400)["error"]["details"]["parameter"] == "offset"
    assert server.json(f"/diff/{demo.base}.json", 400)["error"]["code"] == "VALIDATION_ERROR"
    status, headers, body = server.get("/entity/company/nowhere")
    assert status == 404 and headers["content-type"].startswith("text/html") and "ENTITY_NOT_FOUND" in body


def test_a_bound_server_answers_another_tenants_id_exactly_like_a_missing_one(demo, bound):
    missing_obs = bound.json(f"/observation/{obs_id(99)}.json", 404)["error"]
    other_obs = bound.json(f"/observation/{demo.other.id}.json", 404)["error"]
    assert other_obs == json.loads(json.dumps(missing_obs).replace(obs_id(99), demo.other.id))
    missing = bound.json("/entity/company/nowhere.json", 404)["error"]
    other = bound.json("/entity/company/globex.json", 404)["error"]
    assert other == json.loads(json.dumps(missing).replace("company/nowhere", "company/globex"))
    # above the server's ceiling: the same
    assert bound.json(f"/observation/{demo.secret.id}.json", 404)["error"]["code"] == missing_obs["code"]
    # the URL never widens the binding
    assert bound.json("/search.json?org=contoso")["total"] == 0
    assert bound.json("/search.json?tenant=org%3Dcontoso")["total"] == bound.json("/search.json")["total"] == 4
    assert "company/globex" not in bound.get("/")[2] and "Globex" not in bound.get("/search?q=globex")[2]


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_hostile_markdown_and_values_stay_text(demo, server):
    for path in (f"/observation/{demo.hostile.id}", f"/entity/{ACME}", "/", "/search?q=bold"):
        status, _, body = server.get(path)
        assert status == 200
        parser = Tags()
        parser.feed(body)
        assert not [tag for tag, _ in parser.tags if tag in ("script", "img", "iframe", "b")], path
        assert not [(tag, attrs) for tag, attrs in parser.tags if any(name.startswith("on") for name in attrs)], path
        links = [attrs.get("href") or "" for tag, attrs in parser.tags if tag == "a"]
        assert not [link for link in links if not link.startswith(("/", "http://", "https://", "mailto:"))], (path, links)
    body = server.get(f"/observation/{demo.hostile.id}")[2]
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in body and "&lt;b&gt;bold&lt;/b&gt; claim" in body
    assert '<a href="https://example.com/ok">' in body  # an ordinary link still is one


def test_the_guard_refuses_foreign_hosts_origins_and_writes(demo, server):
    assert server.get("/", headers={"Host": "evil.example"})[0] == 421
    assert server.get("/", headers={"Host": f"localhost:{server.port}"})[0] == 200
    status, headers, body = server.get("/", headers={"Origin": "http://evil.example"})
    assert status == 403 and json.loads(body)["error"]["code"] == "VALIDATION_ERROR"
    assert "default-src 'self'" in headers["content-security-policy"]
    assert server.get("/", headers={"Origin": f"http://127.0.0.1:{server.port}"})[0] == 200
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, headers, _ = server.get("/search", method=method)
        assert (status, headers.get("allow")) == (405, "GET, HEAD"), method
    assert server.get("/", method="HEAD")[0] == 200


def test_any_other_bind_needs_a_token(demo):
    proc = demo.repo.obsrepo("serve", "--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 2 and "OBSREPO_SERVE_TOKEN" in proc.stderr, proc
    guarded = Server(demo.repo, "--host", "0.0.0.0", env={"OBSREPO_SERVE_TOKEN": "s3cret"})
    try:
        status, headers, _ = guarded.get("/")
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        assert guarded.get("/", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert guarded.get("/", headers={"Authorization": "Bearer s3cret"})[0] == 200
    finally:
        guarded.close()


def test_the_entity_page_shows_the_neighbourhood_and_the_comprehension_page_the_belief(demo, server):
    body = server.get(f"/entity/{ACME}")[2]
    assert body.index("Challengers") < body.index("Neighbourhood") < body.index("Timeline")
    assert '<a class="id" href="/entity/company/holding">company/<wbr>holding</a>' in body.split("Neighbourhood", 1)[1]
    status, _, body = server.get("/comprehension/comp-acme")
    assert status == 200 and "Acme moved to 456" in body and "a more specific reading" in body
    history = body.split("Confidence history", 1)[1]
    assert history.index("Acme answers on 123") < history.index("Acme moved to 456")  # version by version
    assert f'<a class="id" href="/observation/{demo.change.id}">' in body.split("Cited observations", 1)[1]
    belief = server.json("/comprehension/comp-acme.json")
    assert [(v["version"], v["confidence"]) for v in belief["history"]] == [(1, "medium"), (2, "high")]
    assert [(o["id"], o["used"]) for o in belief["observations"]] == [(demo.first.id, False), (demo.change.id, True)]
    assert server.json(f"/comprehension/comp-acme.json?at={demo.base}")["version"] == 1
    assert server.json("/comprehension/comp-nowhere.json", 404)["error"]["code"] == "REF_NOT_FOUND"
    assert f'href="/comprehension/comp-acme?at={demo.head}"' in server.get(f"/diff/{demo.base}..{demo.head}")[2]


def test_a_busy_entity_page_lists_the_strongest_challengers_and_counts_the_rest(demo, server):
    body = server.get(f"/entity/{BUSY}")[2]
    stage = body.split("<h3>stage</h3>", 1)[1].split("</table>", 1)[0]
    # strongest first: the latest wins, the nine latest losers follow; two weaker ones are counted
    assert [n for n in range(12) if f"stage {n}</td>" in stage] == list(range(2, 12))
    assert "and 2 more weaker challengers" in stage and f'<a href="/entity/{BUSY}.json">' in stage
    relations = body.split("<h2>Relations</h2>", 1)[1].split("</table>", 1)[0]
    assert relations.count("REFERS_TO") == 50 and "and 10 more relations" in relations
    twin = server.json(f"/entity/{BUSY}.json")  # the twin holds every one, as the command line does
    assert len(twin["snapshot"]["explain"]["stage"]) == 12 and twin["relations"]["total"] == 60
    assert twin["neighbourhood"]["total_entities"] == 60 and len(twin["neighbourhood"]["entities"]) == 24


def test_the_timeline_pages_in_order_with_date_fields_among_observations(demo, server):
    whole = server.json(f"/entity/{BUSY}.json")["timeline"]  # timeline --entity … --limit 100
    assert whole["total"] == 13 and [(e["event_type"], e["field"]) for e in whole["events"]][:2] == [("Due", "due"),
                                                                                                  ("Observed", None)]
    instants = [e["event_timestamp"] for e in whole["events"]]
    assert instants == sorted(instants, reverse=True)  # the due date (2026-03-12) first, then the observations
    for offset, limit in ((3, 4), (11, 5)):
        page = cli_json(demo.repo, "timeline", "--entity", BUSY, "--offset", str(offset), "--limit", str(limit))
        assert page == {"events": whole["events"][offset : offset + limit], "total": 13}, (offset, limit)
    narrowed = cli_json(demo.repo, "timeline", "--entity", BUSY, "--after", "2026-01-05", "--before", "2026-01-08T08:00:00Z",
                        "--event-type", "Observed")
    assert [e["event_timestamp"] for e in narrowed["events"]] == ["2026-01-07T08:00:00Z", "2026-01-06T08:00:00Z",
                                                                  "2026-01-05T08:00:00Z"] and narrowed["total"] == 3


def test_a_bound_server_sees_its_own_rows_of_a_neighbour(demo, server, bound):
    # the unbound server may read a neighbour from the index's own snapshots: every tenant's rows
    shown = {e["entity_id"]: e for e in server.json(f"/entity/{ACME}.json")["neighbourhood"]["entities"]}
    assert shown["company/holding"]["snapshot"] == {"name": "Holding (secret)"}
    assert shown["company/holding"]["observation_count"] == 3
    # a bound server (a tenant, a ceiling) reduces its own rows of it, never the stored snapshot
    shown = {e["entity_id"]: e for e in bound.json(f"/entity/{ACME}.json")["neighbourhood"]["entities"]}
    assert shown["company/holding"]["snapshot"] == {"name": "Holding"}
    assert shown["company/holding"]["observation_count"] == 1
    assert "Holding (" not in bound.get(f"/entity/{ACME}")[2]
    # at a commit that patches the indexed one, a neighbour the patch touches is reduced again
    shown = {e["entity_id"]: e for e in server.json(f"/entity/{ACME}.json?at={demo.side}")["neighbourhood"]["entities"]}
    assert shown["company/holding"]["snapshot"] == {"name": "Holding (side)"}
    assert shown["company/holding"]["observation_count"] == 4


def test_a_bound_server_hides_a_belief_citing_what_it_cannot_read(demo, make_module_repo):
    # the demo's belief cites northwind's observations only: a contoso server sees none of it
    other = Server(demo.repo, "--tenant", "org=contoso")
    try:
        missing = other.json("/comprehension/comp-nowhere.json", 404)["error"]
        hidden = other.json("/comprehension/comp-acme.json", 404)["error"]
        assert hidden == json.loads(json.dumps(missing).replace("comp-nowhere", "comp-acme"))
    finally:
        other.close()


def _links(html: str) -> list[str]:
    parser = Tags()
    parser.feed(html)
    return [attrs["href"] or "" for tag, attrs in parser.tags if tag in ("a", "link") and "href" in attrs]


def test_the_static_preview_writes_the_review_and_every_touched_page_with_relative_links(demo, tmp_path):
    out = tmp_path / "preview"
    proc = demo.repo.obsrepo("serve", "--static", str(out), f"{demo.base}..{demo.head}")
    assert proc.returncode == 0, proc.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == sorted(["index.html", "style.css", "icon.svg", f"entity/{ACME}.html", f"observation/{demo.change.id}.html",
                              "comprehension/comp-acme.html"])
    for page in out.rglob("*.html"):
        html = page.read_text("utf-8")
        assert "<script" not in html.lower() and "<form" not in html, page
        for link in _links(html):
            assert not link.startswith("/"), (page, link)  # relative: works from the file system and an artifact
            if not link.startswith(("http://", "https://", "mailto:")):
                assert (page.parent / link).resolve().is_file(), (page, link)
    review = (out / "index.html").read_text("utf-8")
    assert f'href="entity/{ACME}.html"' in review and "more specific" in review
    entity = (out / "entity" / ACME).with_suffix(".html").read_text("utf-8")
    assert f'href="../../observation/{demo.change.id}.html"' in entity and 'href="../../style.css"' in entity
    assert f'<span class="id">{wbr(demo.first.id)}</span>' in entity  # not touched: its id, not a dead link
    again = demo.repo.obsrepo("serve", "--static", str(out), f"{demo.base}..{demo.head}")
    assert again.returncode == 0 and not list(out.rglob("*.tmp")), again.stderr  # rewritten whole, nothing left over
    lone = demo.repo.obsrepo("serve", "--static", str(out))
    assert lone.returncode == 2 and "BASE..HEAD" in lone.stderr, lone
    bad = demo.repo.obsrepo("serve", "--static", str(out), "nowhere..HEAD")
    assert bad.returncode == 3 and "'nowhere' does not exist" in bad.stderr, bad


def test_a_link_path_is_what_percent_encoding_gives_for_every_name():
    """Names made only of what percent-encoding keeps are linked as they are (a page shows
    hundreds); every other name is encoded exactly as `quote` would."""
    import random
    import string
    from urllib.parse import quote

    from obsrepo.serve.links import path

    chance = random.Random(3)
    alphabet = string.printable + "é✓\u0000\u2028%?#&<>\"' "
    names = ["company/acme", "obs-20260110-090000-0001", "a b", "..", "../../etc", "x~y", "a:b@c", "", "<script>",
             "javascript:alert(1)", "100%", "a?b#c", *("".join(chance.choice(alphabet) for _ in range(chance.randint(0, 12)))
                                                     for _ in range(5000))]
    for name in names:
        assert path(name) == quote(name, safe="/:@"), name

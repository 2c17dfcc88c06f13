"""`obsrepo query` (docs/design.md §6, §7, §8): filters, order, paging, text search, any commit, tenants.

One repository holds a designed data set with history (a retraction commit, a merged side
branch, an unmerged feature branch, an orphan branch). Most answers are checked through the
library facade against a small reference model written here; the command line is used for the
output modes (byte for byte, golden files under tests/golden/), exit codes and error envelopes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, git_env, hermetic, observation

GOLDEN = Path(__file__).parent / "golden"
RANK = {"public": 0, "internal": 1, "confidential": 2, "restricted": 3}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


# --- the data set and its reference model ------------------------------------------------------

@dataclass
class Obs:
    id: str
    timestamp: str
    front: dict[str, Any] = field(default_factory=dict)
    body: str | None = None

    @property
    def doc(self) -> Any:
        return observation(self.id, self.timestamp, body=self.body, **self.front)

    @property
    def when(self) -> datetime:
        return utc(self.timestamp)

    def get(self, key: str, default: Any = None) -> Any:
        return self.front.get(key, default)


def o(name: str, timestamp: str, body: str | None = None, **front: Any) -> Obs:
    stamp = utc(timestamp)
    return Obs(f"obs-{stamp:%Y%m%d-%H%M%S}-{name}", timestamp, front, body)


F1 = o("f1", "2026-02-10T09:00:00Z", type="task.updated", source="agent:planner", scope=["task/1"], entity="task/1",
       classification="public", tenant={"org": "acme", "project": "web"})
F2 = o("f2", "2026-02-11T09:00:00Z", type="task.updated.v2", source="agent_x", scope=["task/2"], entity="task/2",
       tenant={"org": "acme", "project": "api"})
F3 = o("f3", "2026-02-12T09:00:00Z", type="task:updated", source="agentX:foo", scope=["task/1", "task/2"],
       classification="confidential", tenant={"org": "globex"})
F4 = o("f4", "2026-02-12T10:00:00.5+01:00", type="note", source="agent.y", classification="restricted")
F5 = o("f5", "2026-02-13T10:00:00Z", type="Task.updated", source="human/alice", scope=["task/3"], entity="task/1",
       tenant={"org": "acme", "project": "web", "agent": "a1", "user": "u1"})
F6 = o("f6", "2026-02-13T12:00:00Z", type="task.updated", source="agent", scope=["task/1"],
       tenant={"org": "acmex"}, classification="internal")
F7 = o("f7", "2026-02-14T08:00:00Z", type="task.updated", source="AGENT:upper", tenant={"project": "web"})
X1 = o("x1", "2026-02-09T00:00:00Z", type="task.updated", scope=["task/1"])
X2 = o("x2", "2026-02-09T01:00:00Z", type="task.updated", tenant={"org": "acme", "project": "web"})
TIES = [o(name, "2026-02-15T00:00:00Z", type="tie") for name in ("0010", "00aa", "0002", "a0", "0001")]
K1 = o("k1", "2026-02-16T00:00:00Z", "The kangaroo met another kangaroo near a third kangaroo.", type="wildlife")
K2 = o("k2", "2026-02-16T01:00:00Z", "One kangaroo was seen among many other animals today.", type="wildlife")
K3 = o("k3", "2026-02-16T02:00:00Z", "Nothing else to report.", type="wildlife", event="Kangaroos sighted")
K4 = o("k4", "2026-02-16T03:00:00Z", "A kangaroo and a wombat.", type="wildlife")
BULK = [o(f"b{i:03d}", f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00Z", type="bulk", source="bulk/gen", scope=["bulk"])
        for i in range(60)]
M1 = o("m1", "2026-03-01T11:00:00Z", "", type="fmt.event", source="agent:fmt", event="First entry", scope=["fmt/1"])
M2 = o("m2", "2026-03-01T12:00:00.123456Z", "Line one.\n\nLine three.", type="fmt.event", source="plugin:telegram",
       event="Second entry — ünïcode", scope=["fmt/1", "task/9"], data={"a": [True, None, "x"], "b": 1, "ü": "ß"})
M3 = o("m3", "2026-03-01T12:30:00+02:00", "Only body", type="fmt.event", source="agent:fmt", event="Third entry",
       scope=["fmt/1"], data={"n": 1.5})
BASE = [F1, F2, F3, F4, F5, F6, F7, X1, X2, *TIES, K1, K2, K3, K4, *BULK, M1, M2, M3]
R1 = o("r1", "2026-02-20T00:00:00Z", type="retraction", retracts=[X1.id])
R2 = o("r2", "2026-02-20T01:00:00Z", type="retraction", retracts=[X2.id], tenant={"org": "acme", "project": "web"})
R3 = o("r3", "2026-02-20T02:00:00Z", type="retraction", retracts=[F5.id], tenant={"org": "globex"})  # another tenant's
S1 = o("s1", "2026-02-21T00:00:00Z", type="side")
L1 = o("l1", "2026-02-22T00:00:00Z", type="later")
FE1 = o("fe1", "2026-02-23T00:00:00Z", "wombat wombat wombat", type="feature", tenant={"org": "acme", "project": "web"})
R4 = o("r4", "2026-02-23T01:00:00Z", type="retraction", retracts=[F3.id], tenant={"org": "globex"})
FE2 = o("fe2", "2026-02-24T00:00:00Z", type="feature")
O1 = o("o1", "2026-02-25T00:00:00Z", type="orphan")
EVERY = {x.id: x for x in [*BASE, R1, R2, R3, S1, L1, FE1, R4, FE2, O1]}


@dataclass
class Data:
    repo: Repo
    commits: dict[str, str]  # name → sha
    trees: dict[str, set[str]]  # name → ids present

    def api(self, **kwargs: Any) -> Any:
        from obsrepo.api import Repository

        return Repository(str(self.repo.path), **kwargs)


@pytest.fixture(scope="module")
def data(tmp_path_factory: Any) -> Iterator[Data]:
    base = tmp_path_factory.mktemp("query")
    home = base / "_home"
    home.mkdir()
    repo = Repo(base / "repo", git_env(home, base), None)  # type: ignore[arg-type]
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    commits: dict[str, str] = {}
    trees: dict[str, set[str]] = {}

    def commit(name: str, *docs: Obs) -> None:
        repo.add(*(d.doc for d in docs))
        commits[name] = repo.commit(name)

    commit("base", *BASE)
    trees["base"] = {d.id for d in BASE}
    commit("retractions", R1, R2, R3)
    trees["retractions"] = trees["base"] | {R1.id, R2.id, R3.id}
    repo.git("checkout", "-q", "-b", "side")
    commit("side", S1)
    trees["side"] = trees["retractions"] | {S1.id}
    repo.git("checkout", "-q", "-b", "feature", commits["retractions"])
    repo.git("rm", "-q", F2.doc.path)
    commit("feature", FE1, R4)
    trees["feature"] = trees["retractions"] - {F2.id} | {FE1.id, R4.id}
    repo.git("checkout", "-q", "-b", "feature2")
    commit("feature2", FE2)
    trees["feature2"] = trees["feature"] | {FE2.id}
    repo.git("checkout", "-q", "--orphan", "orphan")
    repo.git("rm", "-q", "-r", "--cached", ".")
    repo.git("clean", "-q", "-f", "-d", "-x")
    commit("orphan", O1)
    trees["orphan"] = {O1.id}
    repo.git("checkout", "-q", "-f", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    commits["merge"] = repo.sha()
    trees["merge"] = trees["side"]
    commit("later", L1)
    trees["later"] = trees["merge"] | {L1.id}
    repo.git("tag", "v1", commits["retractions"])
    with hermetic(repo.env):
        found = Data(repo, commits, trees)
        found.api().index()
        yield found


def model(data: Data, at: str = "later", *, scopes: tuple[str, ...] = (), type: str | None = None,
          source: str | None = None, after: datetime | None = None, before: datetime | None = None,
          entity: str | None = None, tenant: dict[str, str] | None = None, max_classification: str | None = None,
          include_retracted: bool = False, order: str = "desc", **_: Any) -> list[str]:
    """The ids a query must return, in order, computed from the data set alone."""
    present = [EVERY[i] for i in data.trees[at]]

    def tenant_of(x: Obs) -> dict[str, str]:
        return x.get("tenant") or {}

    def retracted(x: Obs) -> bool:
        return any(x.id in r.get("retracts", []) and tenant_of(r) == tenant_of(x) for r in present)

    out = [x for x in present
           if (not scopes or set(scopes) & set(x.get("scope", [])))
           and (type is None or x.get("type") == type)
           and (source is None or x.get("source", "agent/test").startswith(source))
           and (after is None or x.when >= after)
           and (before is None or x.when < before)
           and (entity is None or x.get("entity") == entity)
           and all(tenant_of(x).get(k) == v for k, v in (tenant or {}).items())
           and (max_classification is None or RANK[x.get("classification", "internal")] <= RANK[max_classification])
           and (include_retracted or not retracted(x))]
    out.sort(key=lambda x: (x.when, x.id), reverse=order == "desc")
    return [x.id for x in out]


def ask(data: Data, at: str | None = None, tenant: dict[str, str] | None = None,
        where: dict[str, str] | None = None, **request: Any) -> dict[str, Any]:
    from obsrepo.read.query import QueryRequest

    request.setdefault("limit", 1000)
    return data.api(tenant=tenant).query(QueryRequest(**request), at=data.commits.get(at, at) if at else None,
                                         where=where)


def ids(page: dict[str, Any]) -> list[str]:
    return [r["id"] for r in page["observations"]]


# --- filters ---------------------------------------------------------------------------------

CASES = {
    "everything": {},
    "scope any of two": {"scopes": ("task/1", "task/2")},
    "scope one": {"scopes": ("task/3",)},
    "scope unknown": {"scopes": ("task/404",)},
    "type exact": {"type": "task.updated"},
    "type is not a prefix": {"type": "task"},
    "type is case-sensitive": {"type": "Task.updated"},
    "source agent_ is literal": {"source": "agent_"},
    "source agent% is literal": {"source": "agent%"},
    "source agent:": {"source": "agent:"},
    "source agent": {"source": "agent"},
    "source is case-sensitive": {"source": "AGENT"},
    "source _ alone": {"source": "_"},
    "source % alone": {"source": "%"},
    "after is inclusive": {"after": F3.when},
    "before is exclusive": {"before": F3.when},
    "after and before": {"after": F2.when, "before": F5.when},
    "an empty window": {"after": F3.when, "before": F3.when},
    "after in another offset, ms precision": {"after": utc("2026-02-12T10:00:00.5+01:00")},
    "before in another offset, ms precision": {"before": utc("2026-02-12T10:00:00.5+01:00")},
    "entity": {"entity": "task/1"},
    "ceiling public": {"max_classification": "public"},
    "ceiling internal": {"max_classification": "internal"},
    "ceiling confidential": {"max_classification": "confidential"},
    "ceiling restricted": {"max_classification": "restricted"},
    "combined": {"scopes": ("task/1",), "type": "task.updated", "max_classification": "internal"},
    "retracted included": {"include_retracted": True},
    "ascending": {"order": "asc"},
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_filters(data: Data, case: dict[str, Any]) -> None:
    page = ask(data, **case)
    assert ids(page) == model(data, **case)
    assert page["total"] == len(model(data, **case))
    assert page["at_commit"] == data.commits["later"]


WHERE = {
    "org": {"org": "acme"},
    "org and project": {"org": "acme", "project": "web"},
    "project alone": {"project": "web"},
    "agent": {"agent": "a1"},
    "user": {"user": "u1"},
    "org that is a prefix of another": {"org": "acm"},
}


@pytest.mark.parametrize("where", WHERE.values(), ids=WHERE.keys())
def test_tenant_keys_filter_and_fail_closed(data: Data, where: dict[str, str]) -> None:
    assert ids(ask(data, where=where)) == model(data, tenant=where)
    assert ids(ask(data, tenant=where)) == model(data, tenant=where)  # a binding reads the same rows


def test_tenant_keys_narrow_a_binding_but_never_widen_it(data: Data) -> None:
    bound = {"org": "acme"}
    assert ids(ask(data, tenant=bound, where={"project": "web"})) == model(data, tenant={"org": "acme", "project": "web"})
    page = ask(data, tenant=bound, where={"org": "globex"})
    assert (ids(page), page["total"]) == ([], 0)
    assert ids(ask(data, tenant=bound, where={"org": "acme"})) == model(data, tenant=bound)


def test_the_data_set_exercises_each_filter(data: Data) -> None:
    """Guard against a vacuous data set: each case above keeps some rows and drops others."""
    everything = model(data)
    for name, case in CASES.items():
        if name in ("everything", "ascending", "ceiling restricted"):
            continue
        kept = model(data, **case)
        assert kept != everything, name
    assert model(data, source="agent_") == [F2.id] and model(data, source="agent%") == []
    assert X1.id not in everything and X2.id not in everything and F5.id in everything


# --- order and paging --------------------------------------------------------------------------

def test_ties_are_ordered_by_id_and_asc_is_exactly_the_reverse(data: Data) -> None:
    ties = sorted(t.id for t in TIES)
    assert ids(ask(data, type="tie", order="asc")) == ties
    assert ids(ask(data, type="tie")) == ties[::-1]
    assert ids(ask(data, order="asc")) == ids(ask(data))[::-1]
    assert ids(ask(data, text="kangaroo", order="asc"))[0] == ids(ask(data, text="kangaroo"))[0], "score first"


def test_paging_covers_everything_once_with_a_stable_total(data: Data) -> None:
    everything = model(data)
    for order in ("desc", "asc"):
        pages, offset = [], 0
        while offset < len(everything):
            page = ask(data, limit=23, offset=offset, order=order)
            assert page["total"] == len(everything) and (page["limit"], page["offset"]) == (23, offset)
            pages += ids(page)
            offset += 23
        assert pages == (everything if order == "desc" else everything[::-1])
    beyond = ask(data, offset=len(everything) + 100, limit=10)
    assert (ids(beyond), beyond["total"]) == ([], len(everything))
    text_beyond = ask(data, text="kangaroo", offset=50, limit=10)
    assert (ids(text_beyond), text_beyond["total"]) == ([], 4)


def test_limit_defaults_to_50_and_accepts_1000(data: Data) -> None:
    from obsrepo.read.query import QueryRequest

    page = data.api().query(QueryRequest())
    assert (len(page["observations"]), page["limit"], page["offset"]) == (50, 50, 0)
    assert page["total"] == len(model(data)) > 50
    assert ask(data, limit=1000)["limit"] == 1000


@pytest.mark.parametrize("request_", [{"limit": 1001}, {"limit": 5000}, {"limit": 0}, {"offset": -1}])
def test_out_of_range_paging_is_a_validation_error(data: Data, request_: dict[str, int]) -> None:
    from obsrepo.errors import UsageError

    with pytest.raises(UsageError) as caught:
        ask(data, **request_)
    assert caught.value.code == "VALIDATION_ERROR"
    assert caught.value.details["parameter"] == next(iter(request_))  # the library names the request's field


def test_cli_limit_5000_is_refused_naming_the_parameter(data: Data) -> None:
    proc = data.repo.obsrepo("query", "--limit", "5000", "--format", "json")
    assert proc.returncode == 2, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "VALIDATION_ERROR" and "--limit" in error["message"]
    assert error["details"]["parameter"] == "--limit"
    proc = data.repo.obsrepo("query", "--limit", "5000")
    assert (proc.returncode, proc.stdout) == (2, "") and "VALIDATION_ERROR" in proc.stderr and "--limit" in proc.stderr


# --- retraction --------------------------------------------------------------------------------

def test_retracted_observations_are_hidden_unless_asked_for(data: Data) -> None:
    shown = ids(ask(data))
    assert X1.id not in shown and X2.id not in shown
    assert R1.id in shown and R2.id in shown, "a retraction is itself an observation"
    assert F5.id in shown, "a retraction by another tenant withdraws nothing"
    included = ids(ask(data, include_retracted=True))
    assert X1.id in included and X2.id in included
    assert ask(data, include_retracted=True)["total"] == ask(data)["total"] + 2
    assert X1.id in ids(ask(data, at="base")), "before the retraction was committed"


# --- full-text search --------------------------------------------------------------------------

def test_text_search_ranks_by_bm25_and_only_then_carries_scores(data: Data) -> None:
    page = ask(data, text="kangaroo")
    found = ids(page)
    assert set(found) == {K1.id, K2.id, K3.id, K4.id} and page["total"] == 4
    assert found.index(K1.id) < found.index(K2.id), "three mentions score above one in a similar document"
    scores = [r["score"] for r in page["observations"]]
    assert all(isinstance(s, float) and s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    assert ids(ask(data, text="Kangaroos")) == found, "case and plural forms are the same word"
    assert ids(ask(data, text="kangaroo wombat"))[0] == K4.id, "both words beat one"
    assert all("score" not in r for r in ask(data, type="wildlife")["observations"])
    assert set(ids(ask(data, text="kangaroo", type="wildlife", before=K4.when))) == \
        set(found) - {K4.id}, "text combines with the other filters"
    assert ask(data, text="it's 100% _o'clock; DROP TABLE meta --")["total"] == 0
    assert ask(data, text="platypus") == {"observations": [], "total": 0, "limit": 1000, "offset": 0,
                                          "at_commit": data.commits["later"]}


# --- --at ------------------------------------------------------------------------------------

CHAIN = ("base", "retractions", "merge")


@pytest.mark.parametrize("at", ["base", "retractions", "merge", "side", "feature", "orphan"])
def test_at_any_commit(data: Data, at: str) -> None:
    """Older chain commits, a side-branch commit merged later, an unmerged branch, an unrelated root."""
    page = ask(data, at=at)
    assert ids(page) == model(data, at)
    assert page["at_commit"] == data.commits[at]
    assert ids(ask(data, at=at, include_retracted=True)) == model(data, at, include_retracted=True)
    assert ids(ask(data, at=at, tenant={"org": "acme"})) == model(data, at, tenant={"org": "acme"})
    for case in ({"scopes": ("task/1", "task/2")}, {"scopes": ("bulk",), "type": "bulk"}) if at in CHAIN else ():
        assert ids(ask(data, at=at, **case)) == model(data, at, **case)  # read by key at an older chain commit


def test_at_an_unmerged_branch_sees_its_additions_deletions_retractions_and_words(data: Data) -> None:
    page = ids(ask(data, at="feature"))
    assert FE1.id in page and F2.id not in page and L1.id not in page and F3.id not in page
    assert F3.id in ids(ask(data, at="feature", include_retracted=True))
    wombats = ask(data, at="feature", text="wombat")
    assert ids(wombats) == [FE1.id, K4.id] and all(r["score"] > 0 for r in wombats["observations"])
    assert ids(ask(data, text="wombat")) == [K4.id]
    fe1 = next(r for r in ask(data, at="feature", type="feature")["observations"])
    assert fe1["commit"] == data.commits["feature"] and fe1["path"] == FE1.doc.path


def test_at_a_branch_two_commits_ahead(data: Data) -> None:
    assert ids(ask(data, at="feature2")) == model(data, "feature2")


def test_at_names_tags_and_short_shas(data: Data) -> None:
    assert ask(data, at="v1")["at_commit"] == data.commits["retractions"]
    assert ask(data, at=data.commits["base"][:10])["at_commit"] == data.commits["base"]
    assert ids(ask(data, at="HEAD~1")) == model(data, "merge")


def test_at_an_unknown_revision_is_ref_not_found(data: Data) -> None:
    from obsrepo.errors import NotFoundError

    with pytest.raises(NotFoundError) as caught:
        ask(data, at="no-such-branch")
    assert caught.value.code == "REF_NOT_FOUND"
    proc = data.repo.obsrepo("query", "--at", "no-such-branch", "--format", "json")
    assert proc.returncode == 3, proc
    assert json.loads(proc.stdout)["error"]["code"] == "REF_NOT_FOUND"


# --- output modes, byte for byte ---------------------------------------------------------------

def normalized(data: Data, text: str) -> str:
    """Commit shas replaced by the names of the commits (the only machine-dependent bytes)."""
    for name, sha in data.commits.items():
        text = text.replace(sha, f"<{name}>")
    return text


@pytest.mark.parametrize("mode", ["short", "full"])
def test_text_modes_match_the_golden_files(data: Data, mode: str) -> None:
    proc = data.repo.obsrepo("query", "--scope", "fmt/1", "--after", "2026-03-01", "--format", mode)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (GOLDEN / f"query_{mode}.txt").read_text("utf-8")


def test_json_mode_matches_the_golden_file(data: Data) -> None:
    proc = data.repo.obsrepo("query", "--scope", "fmt/1", "--format", "json", "--limit", "2", "--offset", "1",
                             "--order", "asc")
    assert proc.returncode == 0, proc.stderr
    page = json.loads(normalized(data, proc.stdout))
    assert list(page) == ["observations", "total", "limit", "offset", "at_commit"]
    record_keys = ["id", "timestamp", "type", "source", "event", "body", "scope", "entity", "fields", "priority",
                   "specificity", "tenant", "classification", "data", "context", "trace_ref", "path", "commit"]
    assert all(list(r) == record_keys for r in page["observations"])
    golden = json.loads((GOLDEN / "query.json").read_text("utf-8"))
    assert page == golden
    assert json.dumps(page, ensure_ascii=False, indent=2) + "\n" == (GOLDEN / "query.json").read_text("utf-8")


def test_json_records_carry_scores_only_with_text(data: Data) -> None:
    page = ask(data, text="kangaroo", limit=1)
    assert list(page["observations"][0])[-1] == "score"
    assert page["total"] == 4 and len(page["observations"]) == 1


@pytest.mark.parametrize("mode", ["short", "full"])
def test_text_modes_say_when_nothing_matches(data: Data, mode: str) -> None:
    proc = data.repo.obsrepo("query", "--scope", "nothing/here", "--format", mode)
    assert (proc.returncode, proc.stdout) == (0, "No observations found.\n")


# --- tenant isolation: another tenant's files change nothing a bound caller sees ---------------

ACME = [
    o("a1", "2026-04-01T00:00:00Z", "kangaroo report from the web team", type="t", tenant={"org": "acme", "project": "web"},
      scope=["team/web"]),
    o("a2", "2026-04-02T00:00:00Z", "kangaroo kangaroo on the api", type="t", tenant={"org": "acme", "project": "api"},
      scope=["team/api"]),
    o("a3", "2026-04-03T00:00:00Z", "nothing of note", type="t", tenant={"org": "acme", "project": "web"}),
    o("a4", "2026-04-03T00:00:00Z", "a kangaroo at the same instant", type="t", tenant={"org": "acme", "project": "web"}),
]
ACME_LATER = [
    o("a5", "2026-04-05T00:00:00Z", type="retraction", retracts=[ACME[2].id], tenant={"org": "acme", "project": "web"}),
    o("a6", "2026-04-06T00:00:00Z", "kangaroo", type="t", tenant={"org": "acme", "project": "web"}, scope=["team/web"]),
]
OTHERS = [
    o("g1", "2026-04-01T00:00:00Z", "kangaroo " * 30, type="t", tenant={"org": "globex"}, scope=["team/web"]),
    o("g2", "2026-04-03T00:00:00Z", "kangaroo", type="t", tenant={"org": "globex", "project": "web"}),
    o("u1", "2026-04-02T12:00:00Z", "kangaroo without a tenant", type="t", scope=["team/web"]),
    o("x1", "2026-04-04T00:00:00Z", "kangaroo", type="t", tenant={"org": "acmex", "project": "web"}),
    o("c1", "2026-04-04T00:00:00Z", "kangaroo", type="t", tenant={"org": "Acme", "project": "web"}),
    o("p1", "2026-04-04T00:00:00Z", "kangaroo", type="t", tenant={"project": "web"}),
]
OTHERS_LATER = [
    o("g3", "2026-04-06T00:00:00Z", type="retraction", retracts=[ACME[0].id], tenant={"org": "globex"}),
    o("g4", "2026-04-06T00:00:00Z", "kangaroo kangaroo", type="t", tenant={"org": "globex"}),
]


@pytest.fixture(scope="module")
def tenant_repos(tmp_path_factory: Any) -> dict[str, Repo]:
    base = tmp_path_factory.mktemp("tenants")
    home = base / "_home"
    home.mkdir()
    env = git_env(home, base)
    repos = {}
    for name, extra, extra_later in (("solo", [], []), ("shared", OTHERS, OTHERS_LATER)):
        repo = Repo(base / name, env, None)  # type: ignore[arg-type]
        repo.path.mkdir()
        repo.git("init", "-q", "-b", "main")
        repo.add(*(d.doc for d in ACME + extra))
        repo.commit("first")
        repo.add(*(d.doc for d in ACME_LATER + extra_later))
        repo.commit("second")
        with hermetic(env):
            from obsrepo.api import Repository

            Repository(str(repo.path)).index()
        repos[name] = repo
    return repos


def by_subject(repo: Repo, text: str) -> str:
    for line in repo.git("log", "--format=%H %s").splitlines():
        sha, subject = line.split(" ", 1)
        text = text.replace(sha, f"<{subject}>")
    return text


BINDINGS = [{"org": "acme"}, {"org": "acme", "project": "web"}]
REQUESTS = [{"include_retracted": True}, {"text": "kangaroo"}, {"text": "kangaroo", "limit": 1, "offset": 1},
            {"scopes": ("team/web",), "order": "asc"}, {"offset": 99}]


def test_another_tenants_files_change_nothing_a_bound_caller_sees(tenant_repos: dict[str, Repo]) -> None:
    from obsrepo.api import Repository
    from obsrepo.read.query import QueryRequest

    def answer(name: str, binding: dict[str, str], request: dict[str, Any]) -> str:
        repo = tenant_repos[name]
        with hermetic(repo.env):
            page = Repository(str(repo.path), tenant=binding).query(QueryRequest(**request))
        return by_subject(repo, json.dumps(page, ensure_ascii=False))

    for binding in BINDINGS:
        for request in REQUESTS:
            solo, shared = answer("solo", binding, request), answer("shared", binding, request)
            assert solo == shared, (binding, request)
    assert json.loads(answer("solo", {"org": "acme"}, {"text": "kangaroo"}))["total"] == 4  # not vacuous
    assert answer("solo", {}, {}) != answer("shared", {}, {})  # the other tenants' files are there


@pytest.mark.parametrize("args,env", [
    (["--tenant", "org=acme", "--format", "json", "--text", "kangaroo"], {}),
    (["--format", "full", "--include-retracted"], {"OBSREPO_TENANT": "org=acme,project=web"}),
    (["--tenant", "org=acme,project=web", "--format", "short", "--limit", "2", "--offset", "1"], {}),
], ids=["json-text", "full-env", "short-paged"])
def test_cli_output_with_a_binding_is_byte_identical_with_or_without_other_tenants(
        tenant_repos: dict[str, Repo], args: list[str], env: dict[str, str]) -> None:
    outputs = []
    for name in ("solo", "shared"):
        repo = tenant_repos[name]
        bound = Repo(repo.path, dict(repo.env, **env), None)  # type: ignore[arg-type]
        proc = bound.obsrepo("query", *args)
        assert proc.returncode == 0, proc.stderr
        outputs.append(by_subject(repo, proc.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0].strip() and "No observations found." not in outputs[0]


@pytest.mark.parametrize("args,parameter", [
    (["query", "--text", os.fsdecode(b"invoice \xff")], "--text"),
    (["query", "--scope", os.fsdecode(b"task/\xfe")], "--scope"),
    (["snapshot", os.fsdecode(b"company/\xff")], "ENTITY"),
    (["query", "--tenant", ""], "--tenant"),
    (["query", "--tenant", os.fsdecode(b"org=\xff")], "--tenant"),
], ids=["text", "scope", "entity", "empty tenant", "tenant"])
def test_arguments_that_are_not_utf8_or_an_empty_tenant_are_refused_by_name(data: Data, args: list[str],
                                                                            parameter: str) -> None:
    proc = data.repo.obsrepo(*args, "--format", "json")
    assert proc.returncode == 2, proc
    error = json.loads(proc.stdout)["error"]
    assert (error["code"], error["details"]["parameter"]) == ("VALIDATION_ERROR", parameter)


def test_a_tenant_from_the_environment_that_is_not_utf8_is_refused(data: Data) -> None:
    env = dict(data.repo.env, OBSREPO_TENANT=os.fsdecode(b"org=\xff"))
    proc = subprocess.run([sys.executable, "-m", "obsrepo", "query", "--format", "json"], cwd=data.repo.path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["details"]["parameter"] == "OBSREPO_TENANT"


# --- what a command loads ----------------------------------------------------------------------

def test_reads_that_stem_no_words_answer_without_the_fts_extension(data: Data, tmp_path: Path) -> None:
    """A query without --text and a snapshot open the index without DuckDB's fts extension
    (~40 ms of CPU a command): where it is missing they still answer; --text and a commit off
    the chain (whose added documents are stemmed) say what is missing."""
    hidden = tmp_path / "hidden" / "duckdb_extension_fts"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = dict(data.repo.env, PYTHONPATH=os.pathsep.join(p for p in (str(hidden.parent), os.environ.get("PYTHONPATH")) if p))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=data.repo.path, env=env, capture_output=True,
                              text=True)

    scoped = run("query", "--scope", "task/1", "--format", "json")
    assert scoped.returncode == 0, scoped.stderr
    assert ids(json.loads(scoped.stdout)) == model(data, scopes=("task/1",))
    snapshot = run("snapshot", "task/1")
    assert snapshot.returncode == 0, snapshot.stderr
    assert json.loads(snapshot.stdout)["entity_id"] == "task/1"
    for words in (("query", "--text", "kangaroo"), ("query", "--at", data.commits["feature"])):
        refused = run(*words)
        assert (refused.returncode, "INDEX_ERROR" in refused.stderr, "duckdb-extension-fts" in refused.stderr) == (4, True, True)

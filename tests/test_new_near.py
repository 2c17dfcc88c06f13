"""`obsrepo new` judges a draft against the work tree as a change on a commit whose lookup store
is kept (`gate/near.py`): it reads what differs from that commit, and its answers are those of
the repository rules over the whole work tree with the draft added, bound or not."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Repo, obs_id, observation
from obsrepo.gate import graph
from obsrepo.gate.analysis import analyze_source
from obsrepo.gate.cache import AnalysisCache
from obsrepo.gate.near import NearState
from obsrepo.gate.sources import worktree
from obsrepo.gitstore import Git
from test_write_rules import ENTITIES, TYPES, _document

ROOT = Path(__file__).resolve().parents[1]
BINDINGS = [{}, {"org": "x"}, {"org": "x", "project": "p"}]


def _spec(rng: random.Random) -> dict:
    return {"entity": rng.choice(ENTITIES), "tenant": rng.randrange(4),
            "relations": [(rng.choice(TYPES), rng.choice(ENTITIES)) for _ in range(rng.randrange(3))],
            "retracts": [rng.randrange(40)] if rng.random() < 0.25 else [],
            "corrects": [rng.randrange(40)] if rng.random() < 0.2 else [],
            "feedback": [rng.randrange(40)] if rng.random() < 0.1 else [],
            "reclassify": [rng.randrange(40)] if rng.random() < 0.1 else [],
            "event": rng.choice(["same", "other", None]), "second": rng.randrange(4)}


def _whole(root: Path, path: str, analysis, binding: dict) -> list:  # type: ignore[no-untyped-def]
    """What the rules over the whole work tree (as `new` asked them before) report at `path`."""
    everything = analyze_source(worktree(str(root)), AnalysisCache(None, {}, ""))
    view = {**graph.in_view(everything, binding), path: analysis}
    return [i for i in graph.repository_rules(view, added={path}, change={path}) if i.path == path]


def _grow(repo: Repo, rng: random.Random, ids: list[str], start: int, count: int) -> int:
    """Write `count` generated documents (numbered from `start`) naming earlier ones."""
    for n in range(start, start + count):
        doc, analysis = _document(n, _spec(rng), ids)
        repo.write(doc.path, doc)
        if analysis.facts is not None:
            ids.append(analysis.facts["id"])
    return start + count


@pytest.mark.parametrize("store", ["ancestor", "head"])
def test_a_draft_is_judged_as_the_rules_over_the_whole_work_tree_judge_it(repo: Repo, store: str) -> None:
    rng = random.Random(f"near-{store}")
    ids: list[str] = []
    n = _grow(repo, rng, ids, 1, 20)
    repo.commit("first")
    git = Git(str(repo.path))
    NearState.of_worktree(git)  # keeps the first commit's lookup store
    n = _grow(repo, rng, ids, n, 15)
    repo.commit("second")
    if store == "head":  # no kept store: it is built for HEAD
        for kept in (repo.path / ".git" / "obsrepo").glob("lookup-*.sqlite"):
            kept.unlink()
    # the work tree as a change: one committed document deleted, one edited, some untracked
    committed = sorted(p for p in repo.git("ls-files", "observations").splitlines())
    gone, edited = committed[3], committed[25]
    (repo.path / gone).unlink()
    repo.write(edited, repo.read(edited).replace("entity:", "x-note: edited\nentity:", 1))
    n = _grow(repo, rng, ids, n, 10)

    trees = {tuple(sorted(b.items())): NearState.of_worktree(git, b) for b in BINDINGS}
    base = trees[()].lookup
    assert base is not None and base.read == (15 if store == "head" else 0)  # the facts of the first commit are known
    since = "HEAD" if store == "head" else "HEAD~1"  # what differs from the kept commit is read, nothing else
    differs = set(repo.git("diff", "--name-only", since, "--", "observations").splitlines()) \
        | set(repo.git("ls-files", "-o", "--exclude-standard", "observations").splitlines())
    assert set(trees[()].added.facts) == differs - {gone} and len(differs) >= 11
    gone_id = Path(gone).stem
    assert not trees[()].taken(gone_id, "elsewhere") and trees[()].taken("obs-other", gone) is False
    everything = analyze_source(worktree(str(repo.path)), AnalysisCache(None, {}, ""))
    for path, analysis in everything.items():  # every tenant's ids and paths, in any binding's view
        for tree in trees.values():
            assert tree.taken("obs-other", path)
            if analysis.facts is not None:
                assert tree.taken(analysis.facts["id"], "elsewhere")

    refused = 0
    for draft in range(60):
        doc, analysis = _document(1000 + draft, _spec(rng), ids + [gone_id])
        if analysis.facts is None:
            continue
        for binding in BINDINGS:
            if not graph.in_sight(analysis.facts, binding):
                continue
            mine = trees[tuple(sorted(binding.items()))].problems(doc.path, analysis.facts)
            assert mine == _whole(repo.path, doc.path, analysis, binding), (draft, binding)
            refused += bool(mine)
    assert 10 < refused < 100  # both answers are asked for


def test_a_write_reads_what_differs_from_the_kept_commit_not_the_repository(make_repo) -> None:
    repo = make_repo("generated", init=False)
    repo.path.rmdir()
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), str(repo.path), "--count", "1500",
                    "--commits", "5"], env=repo.env, check=True, capture_output=True)
    git = Git(str(repo.path))
    first = NearState.of_worktree(git)
    assert first.lookup is not None and first.lookup.read == 1500 and first.added.facts == {}
    for n in range(3):
        proc = repo.obsrepo("new", "--source", "agent/t", "--event", f"seen {n}", "--entity", "company/acme",
                            "--field", f"n={n}", "--timestamp", "2026-03-01T10:00:00Z", "--format", "json")
        assert proc.returncode == 0, proc.stderr
        later = NearState.of_worktree(git)  # the store is kept: only the work tree's new documents are read
        assert later.lookup is not None and later.lookup.read == 0 and len(later.added.facts) == n + 1
    again = repo.obsrepo("new", "--source", "agent/t", "--event", "seen 0", "--entity", "company/acme",
                         "--field", "n=0", "--timestamp", "2026-03-01T10:00:00Z", "--format", "json")
    assert again.returncode != 0 and "DUPLICATE_CONTENT" in again.stdout + again.stderr
    repo.commit("three")
    after = NearState.of_worktree(git)  # the store of the commit before is kept: what the commit added is read
    assert after.lookup is not None and after.lookup.read == 0 and len(after.added.facts) == 3
    assert repo.check().returncode == 0  # a check of everything keeps every analysis in the analysis cache

    kept = repo.path / ".git" / "obsrepo"
    for store in [kept / "facts.marshal", *kept.glob("lookup-*.sqlite")]:
        store.unlink()
    served = NearState.of_worktree(git)  # a store built anew takes the facts the analysis cache holds
    assert served.lookup is not None and served.lookup.read == 0 and (kept / "facts.marshal").is_file()
    refused = repo.obsrepo("new", "--source", "agent/t", "--event", "seen 1", "--entity", "company/acme",
                           "--field", "n=1", "--timestamp", "2026-03-01T10:00:00Z", "--format", "json")
    assert refused.returncode != 0 and "DUPLICATE_CONTENT" in refused.stdout + refused.stderr


def test_a_cycle_closed_through_a_document_not_yet_committed_is_refused(repo: Repo) -> None:
    """The walk of a relation graph starts from the work tree's own new edges too: here the cycle
    a → b → c → d → a runs through committed edges (c → d → a) only an uncommitted one (b → c) reaches."""
    repo.add(observation(obs_id(1), entity="company/a"),
             observation(obs_id(2), entity="company/c", relations=[{"type": "PART_OF", "target": "company/d"}]),
             observation(obs_id(4), entity="company/d", relations=[{"type": "PART_OF", "target": "company/a"}]))
    repo.commit("a, c and d")
    NearState.of_worktree(Git(str(repo.path)))  # the commit's lookup store is kept
    repo.add(observation(obs_id(3), entity="company/b", relations=[{"type": "PART_OF", "target": "company/c"}]))
    proc = repo.obsrepo("new", "--source", "agent/t", "--event", "a is part of b", "--entity", "company/a",
                        "--relation", "PART_OF=company/b", "--format", "json")
    assert proc.returncode == 1 and "CYCLE_DETECTED" in proc.stdout, proc.stdout + proc.stderr
    assert "company/a, company/b, company/c, company/d" in proc.stdout
    assert len(repo.git("ls-files", "-o", "observations").splitlines()) == 1  # nothing written

"""`check` at scale (docs/design.md §2.7): a pull request's check reads what the change touches
and judges it against the compact facts of the rest, kept by blob id between runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, git_env, obs_id, observation

ROOT = Path(__file__).resolve().parents[1]
GENERATE = ROOT / "bench" / "generate.py"
DEBUG = {"OBSREPO_DEBUG": "1"}  # check then says on stderr how many documents it read


def read(result: Any) -> int:
    """How many documents a check read and analysed (the others came from the facts cache),
    from its stderr; the report itself never says (its bytes depend on the repository only)."""
    stderr = result["stderr"] if isinstance(result, dict) else result.proc.stderr
    found = re.search(r"^obsrepo check: read (\d+) of \d+ documents$", stderr, re.M)
    assert found, stderr
    return int(found.group(1))
COUNT = 4000
LARGER = 12000
# measures peak RSS of one whole `obsrepo check` (getrusage of the child, its workers included)
PEAK = ("import json, resource, subprocess, sys\n"
        "proc = subprocess.run([sys.executable, '-m', 'obsrepo', 'check', '--format', 'json', *sys.argv[1:]], "
        "capture_output=True, text=True)\n"
        "print(json.dumps({'peak_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 'stderr': proc.stderr, "
        "'code': proc.returncode, 'report': json.loads(proc.stdout)}))\n")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int], Repo]:
    """clone(name, count): a clone of a generated repository of `count` observations over 40
    commits (`bench/generate.py`, one `git fast-import`), generated once per count."""
    base = tmp_path_factory.mktemp("scale")
    home = base / "_home"
    home.mkdir()
    # one malloc arena: peaks that say what a check holds, not where its threads allocated
    env = git_env(home, base) | DEBUG | {"MALLOC_ARENA_MAX": "1"}

    def clone(name: str, count: int = COUNT) -> Repo:
        origin = base / f"origin-{count}"
        if not origin.exists():
            subprocess.run([sys.executable, str(GENERATE), str(origin), "--count", str(count), "--commits", "40"],
                           env=env, check=True, capture_output=True)
        subprocess.run(["git", "clone", "-q", str(origin), str(base / name)], env=env, check=True)
        return Repo(base / name, env, None)  # type: ignore[arg-type]

    return clone


@pytest.fixture(scope="module")
def first_checks(generated) -> dict[int, tuple[Repo, dict[str, Any]]]:
    """A first `check --base HEAD~1` (no facts known yet) on clones of two sizes, with its peak RSS."""
    checks = {}
    for count in (COUNT, LARGER):
        repo = generated(f"first-{count}", count)
        proc = repo.run(sys.executable, "-c", PEAK, "--base", "HEAD~1")
        checks[count] = (repo, json.loads(proc.stdout))
    return checks


@pytest.fixture(scope="module")
def whole_checks(first_checks) -> dict[int, dict[str, Any]]:
    """`check` of everything (the analysis cache empty: every document read, and written to it) on
    the same two clones, with its peak RSS; run before the tests that change the clones."""
    checks = {}
    for count, (repo, _first) in first_checks.items():
        proc = repo.run(sys.executable, "-c", PEAK)
        checks[count] = json.loads(proc.stdout)
    return checks


def first_document(repo: Repo) -> str:
    """The first committed observation about an entity, with a tenant."""
    for path in repo.git("ls-tree", "-r", "--name-only", "HEAD", "observations").splitlines():
        text = repo.read(path)
        if "\nentity: " in text and "\ntenant: " in text:
            return path
    raise AssertionError("no observation about an entity")


def copy_of(repo: Repo, path: str, new_id: str, body: str = "", **replace: str) -> str:
    """The document at `path` under another id (its content hash unchanged unless `body` is
    added or text `replace`d)."""
    text = repo.read(path).replace(f"id: {Path(path).stem}", f"id: {new_id}") + body
    for old, new in replace.items():
        text = text.replace(old, new)
    target = str(Path(path).with_name(f"{new_id}.md"))
    repo.write(target, text)
    return target


@pytest.mark.scale
def test_a_pull_request_check_reads_what_it_changes_and_judges_it_against_the_facts_of_the_rest(
        first_checks, whole_checks) -> None:
    repo, cold = first_checks[COUNT]
    assert cold["code"] == 0 and read(cold) == COUNT and "read" not in cold["report"], cold  # nothing known yet: every document read
    assert cold["report"]["checked"] == COUNT

    repo.git("checkout", "-q", "-b", "topic")
    source = first_document(repo)
    folder = Path(source).parent
    copy_of(repo, source, "obs-20260101-000000-aaaaaaaa", "\nRead again.\n")  # new content
    repo.commit("one new observation")
    warm = repo.check("--base", "main")
    assert warm.returncode == 0 and read(warm) == 1, warm  # the change, not the repository
    assert warm.data["checked"] == COUNT + 1

    # the rest is judged by its facts: the same content again, an id taken, a relation to nothing
    copy_of(repo, source, "obs-20260101-000000-bbbbbbbb")
    taken = Path(source).stem
    repo.write(f"observations/2025/12/31/{taken}.md", repo.read(source) + "\nSeen again.\n")
    copy_of(repo, source, "obs-20260101-000000-dddddddd", "\nLinked.\n",
            **{"\ntenant:": "\nrelations: [{type: PART_OF, target: company/nowhere}]\ntenant:"})
    found = repo.check("--base", "main")
    assert read(found) == 4, found  # the committed one and three in the work tree
    assert found.issues == [
        ("DUPLICATE_CONTENT", "duplicate-content", f"{folder}/obs-20260101-000000-bbbbbbbb.md"),
        ("DUPLICATE_ID", "duplicate-id", f"observations/2025/12/31/{taken}.md"),
        ("ENTITY_NOT_FOUND", "relation-target", f"{folder}/obs-20260101-000000-dddddddd.md")], found


@pytest.mark.scale
def test_the_memory_of_a_check_grows_by_compact_facts_per_document_not_by_documents(first_checks) -> None:
    """Every document read and judged, its facts kept: what it costs per document beyond a
    fixed base is its compact facts and its line of the listing (1.5-2.5 kB of RSS with the
    allocator's share, more on a busy machine), far below the parsed documents, facts dicts and
    issues a check held before (~7 kB each, measured on the same two repositories)."""
    small, large = first_checks[COUNT][1], first_checks[LARGER][1]
    assert read(small) == COUNT and read(large) == LARGER
    per_document = (large["peak_kb"] - small["peak_kb"]) * 1024 / (LARGER - COUNT)
    assert per_document < 4000, (per_document, small["peak_kb"], large["peak_kb"])


@pytest.mark.scale
def test_a_check_of_everything_holds_compact_facts_not_documents(whole_checks) -> None:
    """`check` streams the tree: each document's own problems are found as it is read and only
    its compact facts stay (and whole facts of those that name others, a quarter of these
    repositories). Holding every analysis, as it did before, cost ~5 kB a document on these
    two repositories (measured the same way); what is left is ~1.5 kB with the allocator's share."""
    small, large = whole_checks[COUNT], whole_checks[LARGER]
    assert small["code"] == large["code"] == 0, (small, large)
    assert read(small) == COUNT and read(large) == LARGER
    assert small["report"]["checked"] == COUNT and large["report"]["checked"] == LARGER
    per_document = (large["peak_kb"] - small["peak_kb"]) * 1024 / (LARGER - COUNT)
    assert per_document < 3000, (per_document, small["peak_kb"], large["peak_kb"])


def test_a_damaged_facts_store_is_ignored_and_built_again(repo: Repo) -> None:
    repo.add(observation(obs_id(1), entity="company/acme"), observation(obs_id(2), entity="company/acme"))
    repo.commit("two")
    repo.add(observation(obs_id(3), entity="company/acme-unit", relations=[{"type": "PART_OF", "target": "company/acme"}]))
    repo.commit("one more")
    repo.env.update(DEBUG)
    assert read(repo.check("--base", "HEAD~1")) == 3
    folder = repo.path / ".git" / "obsrepo"
    store = folder / "facts.marshal"
    (lookup,) = folder.glob("lookup-*.sqlite")  # the base tree's lookups, built from the facts
    data = store.read_bytes()
    for damaged in (data[: len(data) // 2], data[:40] + b"\xff" * (len(data) - 40)):
        store.write_bytes(damaged)
        lookup.unlink()
        again = repo.check("--base", "HEAD~1")
        assert again.returncode == 0 and read(again) == 3 and again.issues == [], again
        assert read(repo.check("--base", "HEAD~1")) == 1  # whole again: only HEAD~1..HEAD is read
    # a damaged lookup store is built again from the facts (nothing read), and still answers:
    # the change's duplicate of a document of the base is found through it
    repo.add(observation(obs_id(1), folder="observations/2026/elsewhere", entity="company/acme", event="again"))
    whole = lookup.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:100] + b"\xff" * (len(whole) - 100), b""):
        lookup.write_bytes(damaged)
        again = repo.check("--base", "HEAD~1")
        assert read(again) == 2 and [rule for _code, rule, _path in again.issues] == ["duplicate-id"], again
    # where the stores cannot be written (a file stands in their folder's place), the check
    # builds its lookups in memory and judges the same
    shutil.rmtree(folder)
    folder.write_bytes(b"")
    again = repo.check("--base", "HEAD~1")
    assert read(again) == 4 and [rule for _code, rule, _path in again.issues] == ["duplicate-id"], again


# counts what one whole `obsrepo check` asks git (paths to check-attr, entries of listings of the
# index or a tree parsed in Python, blobs read) and what it reads itself
COUNTS = ("import json, sys\n"
          "from obsrepo.gitstore import Git\n"
          "from obsrepo.gate.check import CheckRequest, run_check\n"
          "counts = {'attributes': 0, 'listed': 0, 'blobs': 0}\n"
          "check_attr, ls_files, ls_tree, read_blobs = Git.check_attr, Git.ls_files, Git.ls_tree, Git.read_blobs\n"
          "def asked(self, paths, *args, **kwargs):\n"
          "    counts['attributes'] += len(paths)\n"
          "    return check_attr(self, paths, *args, **kwargs)\n"
          "def listing(method):\n"
          "    def listed(self, *args):\n"
          "        found = method(self, *args)\n"
          "        counts['listed'] += len(found)\n"
          "        return found\n"
          "    return listed\n"
          "def blobs(self, shas):\n"
          "    for found in read_blobs(self, shas):\n"
          "        counts['blobs'] += 1\n"
          "        yield found\n"
          "Git.check_attr, Git.ls_files, Git.ls_tree, Git.read_blobs = asked, listing(ls_files), listing(ls_tree), blobs\n"
          "report = run_check(CheckRequest('.', base=sys.argv[1]))\n"
          "print(json.dumps({**counts, 'read': report.read, 'report': report.as_dict()}))\n")


@pytest.mark.scale
def test_a_pull_request_check_on_a_kept_base_asks_git_about_what_it_touches(generated) -> None:
    """With the base's lookup store kept, a one-document pull request neither lists the work tree
    nor asks git the attributes of its other documents: what `check --base` asks and reads is
    the change's, whatever the size of the repository (here 2,000 documents); the report is the
    one of a check that lists and asks everything (no cache)."""
    repo = generated("near", 2000)
    assert repo.check("--base", "HEAD").returncode == 0  # builds the base's store (every blob read once)
    repo.git("checkout", "-q", "-b", "topic")
    copy_of(repo, first_document(repo), "obs-20260101-000000-cccccccc", "\nOnce more.\n")
    repo.commit("one new observation")
    warm = json.loads(repo.run(sys.executable, "-c", COUNTS, "main").stdout)
    assert warm["report"]["ok"] and warm["report"]["checked"] == 2001, warm
    assert (warm["attributes"], warm["listed"], warm["blobs"], warm["read"]) == (1, 0, 0, 1), warm
    repo.env["OBSREPO_NO_CACHE"] = "1"
    whole = json.loads(repo.run(sys.executable, "-c", COUNTS, "main").stdout)
    assert whole["report"] == warm["report"] and whole["attributes"] == 2001, whole  # every path, as before


def _hostile(repo: Repo) -> dict[str, Callable[[], None]]:
    """Changes of a pull request (or its work tree, or the machine's git) that a check listing
    only what the change touches could judge wrongly: each must be judged as a check that lists
    and asks about everything judges it."""
    doc, other = f"observations/2026/02/13/{obs_id(1)}.md", f"observations/2026/02/13/{obs_id(2)}.md"
    git_dir = repo.path / ".git"

    def new(n: int = 9) -> None:
        repo.add(observation(obs_id(n)))

    def committed(*steps: Callable[[], None]) -> Callable[[], None]:
        def change() -> None:
            for step in steps:
                step()
            repo.commit("the change")
        return change

    def symlink() -> None:
        (repo.path / doc).unlink()
        (repo.path / doc).symlink_to(Path(other).name)

    def submodule() -> None:
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.sha()},observations/2026/02/13/sub")
        repo.git("commit", "-q", "--no-verify", "-m", "a submodule")

    def reverted_in_the_index() -> None:
        repo.write(doc, repo.read(doc) + "\nEdited.\n")
        repo.commit("an edit")
        repo.git("checkout", "main", "--", doc)  # the index and the work tree: the base's again

    def staged_then_restored() -> None:
        text = repo.read(doc)
        repo.write(doc, text + "\nEdited.\n")
        repo.git("add", doc)
        repo.write(doc, text)

    return {
        "a new document": committed(new),
        "attributes that convert, committed": committed(lambda: repo.write(".gitattributes", "*.md ident\n"), new),
        "the root's attributes edited in the work tree": lambda: repo.write(".gitattributes", "*.png binary\n*.md ident\n"),
        "a folder's attributes, untracked": lambda: repo.write("observations/2026/02/13/.gitattributes", "*.md eol=crlf\n"),
        "a folder's attributes, ignored": lambda: (
            (git_dir / "info" / "exclude").write_text(".gitattributes\n"),
            repo.write("observations/2026/.gitattributes", "* filter=hide\n")),
        "a tracked folder's attributes deleted": lambda: (repo.path / "observations/.gitattributes").unlink(),
        "attributes staged, then deleted from the work tree": lambda: (  # git reads them from its index
            repo.write("observations/2026/.gitattributes", "*.md ident\n"),
            repo.git("add", "observations/2026/.gitattributes"),
            (repo.path / "observations/2026/.gitattributes").unlink()),
        "the root's attributes staged, then deleted": lambda: (
            repo.write(".gitattributes", "*.md ident\n"), repo.git("add", ".gitattributes"),
            (repo.path / ".gitattributes").unlink()),
        "info/attributes": lambda: (git_dir / "info" / "attributes").write_text("*.md ident\n"),
        "core.attributesFile": lambda: (repo.write("../attributes", "*.md text\n"),
                                        repo.git("config", "core.attributesFile", str(repo.path.parent / "attributes"))),
        "core.autocrlf": lambda: repo.git("config", "core.autocrlf", "true"),
        "a mode change": committed(lambda: (repo.path / doc).chmod(0o755)),
        "a symlink, committed": committed(symlink),
        "a symlink in the work tree": symlink,
        "a submodule": submodule,
        "a rename": committed(lambda: repo.git("mv", doc, doc.replace("0001", "0008"))),
        "a deletion in the work tree": lambda: (repo.path / doc).unlink(),
        "the base's symlink replaced by a file": committed(lambda: ((repo.path / "observations/2026/link").unlink(),
                                                                   repo.write("observations/2026/link", "text\n"))),
        "attributes in a new folder": committed(lambda: (
            repo.add(observation(obs_id(9), folder="observations/2027")),
            repo.write("observations/2027/.gitattributes", "*.md ident\n"))),
        "an edit the index reverts": reverted_in_the_index,
        "an edit staged, the work tree restored": staged_then_restored,
        "paths asked for": committed(new),
    }


# `check --base BASE [PATHS]` twice in one process: with the kept stores, then with none (every
# path listed and asked, the lookups built in memory); both reports
TWICE = ("import json, os, sys\n"
         "from obsrepo.gate.check import CheckRequest, run_check\n"
         "near = run_check(CheckRequest('.', tuple(sys.argv[2:]), base=sys.argv[1])).as_dict()\n"
         "os.environ['OBSREPO_NO_CACHE'] = '1'\n"
         "whole = run_check(CheckRequest('.', tuple(sys.argv[2:]), base=sys.argv[1])).as_dict()\n"
         "print(json.dumps({'near': near, 'whole': whole}))\n")


def test_a_check_listing_near_the_base_judges_hostile_changes_as_a_whole_listing_does(repo: Repo) -> None:
    repo.write(".gitattributes", "*.png binary\n")
    repo.write("observations/.gitattributes", "*.txt -text\n")
    repo.write("README.md", "About.\n")
    repo.add(observation(obs_id(1), entity="company/acme"), observation(obs_id(2)))
    (repo.path / "observations" / "2026" / "link").symlink_to("02")
    repo.commit("base")
    first = repo.check("--base", "main")  # the base's store is kept (and that git converts none of its files)
    assert [rule for _code, rule, _path in first.issues] == ["symlink"], first  # reported on every check
    doc = f"observations/2026/02/13/{obs_id(1)}.md"
    for number, (name, change) in enumerate(_hostile(repo).items()):
        repo.git("checkout", "-q", "-b", f"change-{number}")
        change()
        asked = [f"observations/2026/02/13/{obs_id(9)}.md", doc, "README.md"] if name == "paths asked for" else []
        both = json.loads(repo.run(sys.executable, "-c", TWICE, "main", *asked).stdout)
        assert both["near"] == both["whole"], (name, both)
        repo.run("git", "config", "--unset", "core.attributesFile", check=False)
        repo.run("git", "config", "--unset", "core.autocrlf", check=False)
        for outside in ("info/attributes", "info/exclude"):
            (repo.path / ".git" / outside).unlink(missing_ok=True)
        repo.git("checkout", "-q", "-f", "main")
        repo.git("clean", "-q", "-f", "-d", "-x")


def test_a_base_whose_documents_git_converts_is_listed_and_asked_whole(repo: Repo) -> None:
    """The store never says git converts none of a base's files when it converts one: every later
    check still asks git about every path (each converted document is reported, as a check that
    lists everything reports it)."""
    repo.write(".gitattributes", "observations/2026/02/13/*.md ident\n")
    repo.add(observation(obs_id(1)), observation(obs_id(2)), observation(obs_id(3), timestamp="2026-03-01T00:00:00Z"))
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "topic")
    repo.add(observation(obs_id(4), timestamp="2026-03-01T00:00:00Z"))
    repo.commit("one more")
    results = []
    for _ in range(2):
        results.append(repo.check("--base", "main"))  # the first builds the store, the second has it
    repo.env["OBSREPO_NO_CACHE"] = "1"
    results.append(repo.check("--base", "main"))
    assert len({(r.returncode, r.proc.stdout) for r in results}) == 1, results
    assert [rule for _code, rule, _path in results[0].issues] == ["git-attributes"], results[0]


def test_documents_git_vouches_for_are_read_from_its_objects_not_opened_one_by_one(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a million small files costs, without the page cache, several times what one
    `git cat-file` reading them from the pack does: `check` of everything reads the documents
    git's index vouches for from git's objects (a few of them from disk), byte for byte the same."""
    from obsrepo.gate import sources
    from obsrepo.gitstore import Git

    repo.add(*(observation(obs_id(n), entity=f"company/c{n}") for n in range(1, 101)))
    repo.commit("many")
    edited = observation(obs_id(7), entity="company/c7", event="edited in the work tree")
    repo.add(edited)
    opened: list[str] = []

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(sources, "open", counting, raising=False)
    # every document: none opened; a dozen (fewer than a read asks git for): opened, but the one
    # read (and hashed) while listing, since git does not vouch for it
    for count, expected in ((None, 0), (12, 11)):
        source = sources.worktree_in_git(Git(str(repo.path)))
        items = source.listed[:count]
        opened.clear()
        contents = dict((item.path, data) for item, data in source.read(items))
        assert contents == {item.path: (repo.path / item.path).read_bytes() for item in items}
        assert len(opened) == expected, opened
    assert repo.check().issues == []


def test_the_documents_a_check_keeps_whole_share_their_values_and_drop_what_only_their_own_rules_read() -> None:
    """A quarter of a tree names others (relations) and is kept whole for the repository rules:
    what each holds is what a check of a million documents holds beyond their compact facts."""
    from obsrepo.format.analyze import analyze
    from obsrepo.gate.whole import slim

    shared: dict[Any, Any] = {}
    first, second = (slim(analyze(doc.path, str(doc).encode()).facts, shared) for doc in (
        observation(obs_id(n), entity="company/acme-unit", tenant={"org": "northwind"},
                    relations=[{"type": "PART_OF", "target": "company/acme"}]) for n in (1, 2)))
    assert first["tenant"] is second["tenant"] and first["entity"] is second["entity"]
    assert first["relations"][0] is second["relations"][0] and first["relations"] == [["PART_OF", "company/acme"]]
    assert not {"hash", "content_class", "declared_class"} & first.keys()
    assert set(first["loc"]) == {"id", "relations_items"}, first["loc"]  # the empty lists of the others dropped

"""The identity review queue (docs/design.md §20), through the CLI: `identities` ranks likely
duplicates with evidence, keys make strong pairs, a hand-written FEBRL-shaped fixture's true
pairs rank above every other pair, the queue is the same whatever the order of the files, a
bound caller sees only pairs of entities it sees, and `distinct` / `merge` take a pair out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, obs_id, observation

PERSON_SCHEMA = """spec: entity-schema/v1
type: person
identity:
  keys: [email]
  compare:
    given_name: {method: name}
    surname: {method: name}
    date_of_birth: {method: date}
    postcode: {method: code}
    suburb: {method: name}
  threshold: 0.75
"""

# people with the typos of FEBRL (a letter dropped or swapped, names exchanged, a digit off),
# written here by hand; the true pairs are (key, key + "-dup")
PEOPLE: dict[str, dict[str, Any]] = {
    "p01": {"given_name": "madeline", "surname": "conaghty", "date_of_birth": "19850810", "postcode": "2800", "suburb": "myrtleford"},
    "p01-dup": {"given_name": "madeline", "surname": "conaghtey", "date_of_birth": "19850810", "postcode": "2800", "suburb": "myrtelford"},
    "p02": {"given_name": "gabriel", "surname": "moulton", "date_of_birth": "19450603", "postcode": "4217", "suburb": "northgate"},
    "p02-dup": {"given_name": "moulton", "surname": "gabriel", "date_of_birth": "19450603", "postcode": "4127", "suburb": "northgate"},
    "p03": {"given_name": "harley", "surname": "bizjak", "date_of_birth": "19671030", "postcode": "3047", "suburb": "dover gardens"},
    "p03-dup": {"given_name": "harly", "surname": "bizjak", "date_of_birth": "19671003", "postcode": "3047", "suburb": "dover gardens"},
    "p04": {"given_name": "alice", "surname": "riding", "date_of_birth": "19111205", "postcode": "2448", "suburb": "maryborough"},
    "p04-dup": {"given_name": "alice", "surname": "ridings", "postcode": "2448", "suburb": "maryborough"},
    "p05": {"given_name": "harley", "surname": "jolly", "date_of_birth": "19720214", "postcode": "3047", "suburb": "dover gardens"},
    "p06": {"given_name": "alice", "surname": "fraser", "date_of_birth": "19010625", "postcode": "3201", "suburb": "nambour"},
    "p07": {"given_name": "corrie", "surname": "riding", "date_of_birth": "19600101", "postcode": "2448", "suburb": "kellerberrin"},
    "p08": {"given_name": "gabriel", "surname": "moult", "date_of_birth": "19991231", "postcode": "5211", "suburb": "scarborough"},
    "p09": {"given_name": "madeleine", "surname": "smith", "date_of_birth": "19850811", "postcode": "6000", "suburb": "perth"},
}
TRUE_PAIRS = {(f"person/{k}", f"person/{k}-dup") for k in PEOPLE if not k.endswith("-dup") and f"{k}-dup" in PEOPLE}


def person_docs(people: dict[str, dict[str, Any]], start: int = 1, **extra: Any) -> list:
    return [observation(obs_id(start + n), entity=f"person/{key}", fields=fields, **extra)
            for n, (key, fields) in enumerate(sorted(people.items()))]


def queue(repo: Repo, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = repo.obsrepo("identities", "--format", "json", "--limit", "1000", *args, env=env or {})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def pairs(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [tuple(c["entities"]) for c in answer["candidates"]]  # type: ignore[misc]


@pytest.fixture(scope="module")
def people(make_module_repo: Callable[..., Repo]) -> Repo:
    repo = make_module_repo("people")
    repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
    repo.add(*person_docs(PEOPLE))
    repo.add(observation(obs_id(90), entity="person/k1", fields={"email": "Jon.Smith@ACME.com", "given_name": "jon"}),
             observation(obs_id(91), entity="person/k2", fields={"email": " jon.smith@acme.com", "given_name": "jonathan"}),
             observation(obs_id(92), entity="person/k3", fields={"email": "jon.smith@acme.org", "given_name": "jon"}))
    repo.commit("people")
    return repo


def test_true_pairs_rank_above_every_other_pair(people: Repo) -> None:
    answer = queue(people, "--min-score", "0")
    found = [p for p in pairs(answer) if p[0].startswith("person/p")]
    assert set(found[: len(TRUE_PAIRS)]) == TRUE_PAIRS, found
    assert set(found) == TRUE_PAIRS  # nothing else reaches the threshold
    scores = [c["score"] for c in answer["candidates"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert answer["at_commit"] == people.sha() and answer["total"] == len(answer["candidates"])


def test_evidence_names_field_values_observations_and_comparison(people: Repo) -> None:
    answer = queue(people)
    item = next(c for c in answer["candidates"] if c["entities"] == ["person/p01", "person/p01-dup"])
    assert item["tier"] == "probable" and item["entity_type"] == "person"
    by_field = {e["field"]: e for e in item["evidence"]}
    assert by_field["surname"]["values"] == ["conaghty", "conaghtey"]
    assert by_field["surname"]["comparison"] == "jaro_winkler" and 0.9 < by_field["surname"]["similarity"] < 1
    assert by_field["date_of_birth"]["similarity"] == 1.0
    assert all(o.startswith("obs-") for o in by_field["surname"]["observations"])
    swapped = next(c for c in answer["candidates"] if c["entities"] == ["person/p02", "person/p02-dup"])
    given = next(e for e in swapped["evidence"] if e["field"] == "given_name")
    assert given["comparison"] == "jaro_winkler across surname" and given["values"] == ["gabriel", "gabriel"]


def test_a_key_normalised_equal_is_a_strong_pair(people: Repo) -> None:
    """Case, white space, NFKC: the same email; another domain is another email."""
    answer = queue(people, "--type", "person")
    strong = [c for c in answer["candidates"] if c["tier"] == "strong"]
    assert [c["entities"] for c in strong] == [["person/k1", "person/k2"]]
    key = strong[0]["evidence"][0]
    assert key["field"] == "email" and key["comparison"] == "key" and key["similarity"] == 1.0


@pytest.mark.parametrize(("a", "b", "same"), [
    ("ACME Corp.", "acme corp", True), ("Jon  Smith", "jonsmith", True), ("ＡＣＭＥ", "acme", True),  # NFKC
    ("Straße", "STRASSE", True),  # case folding
    ("jon@ACME.com", "Jon@acme.COM", True), ("jon@acme.com", "jo@nacme.com", False), ("jon@acme.com", "jon@acme.org", False),
])
def test_normalisation(a: str, b: str, same: bool) -> None:
    from obsrepo.format.identity import normalize

    assert (normalize(a) == normalize(b)) is same


def test_paging_type_and_min_score(people: Repo) -> None:
    whole = queue(people)
    page = queue(people, "--limit", "2", "--offset", "1")
    assert pairs(page) == pairs(whole)[1:3] and page["total"] == whole["total"] and page["limit"] == 2
    assert queue(people, "--type", "company")["candidates"] == []
    high = queue(people, "--min-score", "0.95")
    assert all(c["score"] >= 0.95 for c in high["candidates"]) and high["total"] < whole["total"]
    bad = people.obsrepo("identities", "--min-score", "2")
    assert bad.returncode == 2 and "min_score" in bad.stderr + bad.stdout or "min-score" in bad.stderr


def test_the_same_files_in_another_order_give_the_same_queue(make_repo: Callable[..., Repo]) -> None:
    docs = person_docs(PEOPLE)
    answers = []
    for name, batches in (("in-order", [docs]), ("shuffled", [list(reversed(docs[len(docs) // 2:])), docs[: len(docs) // 2]])):
        repo = make_repo(name)
        repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
        for batch in batches:
            repo.add(*batch)
            repo.commit("people")
        answer = queue(repo)
        assert queue(repo, "--as-of", "2100-01-01")["candidates"] == answer["candidates"]  # computed, not stored: the same
        answers.append(answer["candidates"])
    assert answers[0] == answers[1] and answers[0]


def test_a_bound_caller_sees_a_pair_only_when_it_sees_both(make_repo: Callable[..., Repo]) -> None:
    repo = make_repo("tenants")
    repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
    mine = {k: v for k, v in PEOPLE.items() if k in ("p01", "p01-dup", "p03")}
    theirs = {k: v for k, v in PEOPLE.items() if k in ("p03-dup",)}
    repo.add(*person_docs(mine, 1, tenant={"org": "northwind"}), *person_docs(theirs, 50, tenant={"org": "globex"}),
             observation(obs_id(60), entity="person/p01", fields={"suburb": "secret-suburb"}, priority=200,
                         tenant={"org": "globex"}))
    repo.commit("two tenants")
    whole = pairs(queue(repo))
    assert ("person/p03", "person/p03-dup") in whole
    bound = queue(repo, "--tenant", "org=northwind")
    assert pairs(bound) == [("person/p01", "person/p01-dup")]
    assert "secret-suburb" not in json.dumps(bound) and "globex" not in json.dumps(bound)
    assert "secret-suburb" in json.dumps(queue(repo, "--min-score", "0"))  # the unbound queue sees the other tenant's value


def test_distinct_and_merge_take_a_pair_out(make_repo: Callable[..., Repo]) -> None:
    repo = make_repo("decide")
    repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
    repo.add(*person_docs(PEOPLE))
    repo.commit("people")
    before = pairs(queue(repo))
    assert ("person/p01", "person/p01-dup") in before and ("person/p03", "person/p03-dup") in before
    done = repo.obsrepo("distinct", "person/p01-dup", "person/p01", "--reason", "Twins", "--commit")
    assert done.returncode == 0, done.stderr
    repo.git("merge", "-q", "--ff-only", "obsrepo/proposals")
    assert repo.obsrepo("merge", "person/p03-dup", "person/p03", "--reason", "Same", "--commit").returncode == 0
    repo.git("merge", "-q", "--ff-only", "obsrepo/proposals")
    after = pairs(queue(repo))
    assert ("person/p01", "person/p01-dup") not in after and not any("p03" in a + b for a, b in after)
    assert set(after) == set(before) - {("person/p01", "person/p01-dup"), ("person/p03", "person/p03-dup")}
    assert repo.check().returncode == 0


def test_status_names_the_identity_weights_fingerprint(people: Repo, tmp_path) -> None:
    """The weights are derived at index time and recorded (docs/design.md §20): `status` shows
    their fingerprint, and a second index built from the same commit has the same one."""
    queue(people)  # the index is built
    state = json.loads(people.obsrepo("status", "--format", "json").stdout)["identity"]
    weights = json.loads(people.obsrepo("sql", "SELECT * FROM identity_weights ORDER BY ALL", "--format", "json").stdout)
    assert state["types"] == 1 and state["fields"] == len(weights) == 5, (state, weights)
    assert state["candidates"] == queue(people)["total"] and state["fingerprint"].startswith("sha256:")
    other = str(tmp_path / "again.duckdb")
    assert people.obsrepo("index", "--full", env={"OBSREPO_INDEX": other}).returncode == 0
    again = json.loads(people.obsrepo("status", "--format", "json", env={"OBSREPO_INDEX": other}).stdout)["identity"]
    assert again == state
    text = people.obsrepo("status").stdout
    assert f"identity:         weights {state['fingerprint']} (1 type, 5 fields), {state['candidates']} candidates" in text


def test_the_program_never_imports_pandas(people: Repo) -> None:
    """DuckDB's client imports an installed pandas at the first parameter it converts (~0.4 s of
    CPU, most of `identities --limit 50`); the program's own process keeps it out."""
    pytest.importorskip("pandas")
    queue(people)  # the index is built
    proc = people.process("identities", "--limit", "50", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "duckdb" in imported, sorted(imported)
    assert not any(name.startswith("pandas.") for name in imported)  # a failed attempt is listed, alone


def test_an_update_recomputes_the_queue_only_when_its_inputs_changed(make_repo: Callable[..., Repo], tmp_path) -> None:
    import shutil

    import duckdb
    from obsrepo.gitstore import Git
    from obsrepo.index.identity_table import refresh_identity

    repo = make_repo("updates")
    repo.write("schemas/entities/person.yaml", PERSON_SCHEMA)
    repo.add(*person_docs({k: v for k, v in PEOPLE.items() if k != "p03-dup"}))
    repo.commit("people")
    before = queue(repo)
    repo.add(observation(obs_id(70), scope=["log/x"], event="a log line, no entity"))
    repo.commit("a log line")
    assert queue(repo)["candidates"] == before["candidates"]
    copy = str(tmp_path / "copy.duckdb")  # the index as the update left it: its inputs are recorded
    shutil.copy(repo.path / ".obsrepo" / "index.duckdb", copy)
    with duckdb.connect(copy) as con:
        assert refresh_identity(Git(str(repo.path)), con, repo.sha()) is False
    repo.add(person_docs({"p03-dup": PEOPLE["p03-dup"]}, start=71)[0])
    repo.commit("a duplicate arrives")
    after = queue(repo)
    assert ("person/p03", "person/p03-dup") in pairs(after) and after["at_commit"] == repo.sha()

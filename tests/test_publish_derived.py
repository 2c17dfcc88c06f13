"""`obsrepo publish` (docs/design.md §16, §19, §20): the identity review queue and the contested
values are published as `identity_candidates` and `contested_fields`, derived at the published
commit; read back with pyiceberg and DuckDB, each as of a seq equals `obsrepo identities` and
`obsrepo contested` at that commit, and a bound publish holds nothing of another tenant's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, obs_id, observation
from test_publish import catalog_env, open_catalog, publish

pytest.importorskip("pyiceberg")

A, B = {"org": "a"}, {"org": "b"}
PERSON = "spec: entity-schema/v1\ntype: person\nidentity:\n  keys: [email]\n  threshold: 0.75\n"
DERIVED = ("identity_candidates", "contested_fields")
KEY = {"identity_candidates": ("entity_a", "entity_b"),
       "contested_fields": ("entity_id", "field", "winner_observation_id", "challenger_observation_id")}


@pytest.fixture(scope="module")
def published(make_module_repo: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, list[str]]:
    """Two commits, published unbound into `obsrepo` and bound to org=a into `bound` after each:
    a's duplicate pair and contest, b's pair with a's entity and b's challenger of a's contest;
    then a's challenger retracted (its contest withdrawn) and a second pair of a's."""
    repo = make_module_repo()
    catalog_env(repo, tmp_path_factory.mktemp("catalog"))
    repo.write("schemas/entities/person.yaml", PERSON)
    repo.add(observation(obs_id(1), tenant=A, entity="person/k1", fields={"email": "jon@acme.com"}),
             observation(obs_id(2), tenant=A, entity="person/k2", fields={"email": " Jon@ACME.com"}),
             observation(obs_id(3), tenant=B, entity="person/k3", fields={"email": "jon@acme.com"}),
             observation(obs_id(4), tenant=A, entity="company/acme", fields={"name": "Acme"}, source="agent/crm"),
             observation(obs_id(5), tenant=A, entity="company/acme", fields={"name": "Acme Corp"}, source="agent/sales"),
             observation(obs_id(6), tenant=A, entity="company/globex", fields={"name": "Globex"}, source="agent/crm"),
             observation(obs_id(7), tenant=B, entity="company/globex", fields={"name": "B's secret name"},
                         source="agent/b"))
    shas = [repo.commit("one")]
    publish(repo)
    publish(repo, "--tenant", "org=a", "--namespace", "bound")
    repo.add(observation(obs_id(8), tenant=A, retracts=[obs_id(4)]),
             observation(obs_id(9), tenant=A, entity="person/k4", fields={"email": "ada@acme.com"}),
             observation(obs_id(10), tenant=A, entity="person/k5", fields={"email": "ada@acme.com"}))
    shas.append(repo.commit("two"))
    assert publish(repo)["rows"]["contested_fields"] == 1  # a's contest of acme, withdrawn
    publish(repo, "--tenant", "org=a", "--namespace", "bound")
    return repo, shas


def read_pyiceberg(repo: Repo, namespace: str) -> dict[str, list[dict]]:
    catalog = open_catalog(repo)
    return {name: catalog.load_table((namespace, name)).scan().to_arrow().to_pylist() for name in DERIVED}


def read_duckdb(repo: Repo, namespace: str) -> dict[str, list[dict]]:
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    con = duckdb.connect()
    for package, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):
        folder = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}"
        con.execute(f"LOAD '{(folder / f'{name}.duckdb_extension').as_posix()}'")
    catalog = open_catalog(repo)
    tables = {}
    for name in DERIVED:
        location = catalog.load_table((namespace, name)).metadata_location.removeprefix("file://")
        cursor = con.execute(f"SELECT * FROM iceberg_scan('{location}')")
        columns = [d[0] for d in cursor.description]
        tables[name] = [dict(zip(columns, row)) for row in cursor.fetchall()]
    return tables


def as_of(rows: list[dict], key: tuple[str, ...], seq: int) -> list[dict]:
    """Each key's row with the highest `from_seq <= seq`, unless it is withdrawn."""
    latest: dict[tuple, dict] = {}
    for row in sorted(rows, key=lambda r: r["from_seq"]):
        if row["from_seq"] <= seq:
            latest[tuple(row[c] for c in key)] = row
    return [row for row in latest.values() if not row["withdrawn"]]


def asked(repo: Repo, sha: str, *tenant: str) -> dict[str, set]:
    """What `identities` and `contested` answer at `sha`, in the published tables' terms."""
    ids = repo.obsrepo("identities", "--at", sha, "--min-score", "0", "--limit", "1000", "--format", "json", *tenant)
    contests = repo.obsrepo("contested", "--at", sha, "--limit", "1000", "--format", "json", *tenant)
    assert ids.returncode == 0 and contests.returncode == 0, (ids, contests)
    return {"identity_candidates": {(*c["entities"], c["entity_type"], c["score"], c["tier"], json.dumps(c["evidence"], sort_keys=True))
                                    for c in json.loads(ids.stdout)["candidates"]},
            "contested_fields": {(c["entity_id"], c["field"], c["winner"]["observation_id"], challenger["observation_id"])
                                 for c in json.loads(contests.stdout)["contests"] for challenger in c["challengers"]}}


def published_as_of(tables: dict[str, list[dict]], seq: int) -> dict[str, set]:
    return {"identity_candidates": {(r["entity_a"], r["entity_b"], r["entity_type"], round(r["score"], 6), r["tier"],
                                     json.dumps(json.loads(r["evidence"]), sort_keys=True))
                                    for r in as_of(tables["identity_candidates"], KEY["identity_candidates"], seq)},
            "contested_fields": {tuple(r[c] for c in KEY["contested_fields"])
                                 for r in as_of(tables["contested_fields"], KEY["contested_fields"], seq)}}


@pytest.mark.parametrize("reader", [read_pyiceberg, read_duckdb], ids=["pyiceberg", "duckdb"])
def test_each_seq_holds_what_identities_and_contested_answer_at_its_commit(published: tuple[Repo, list[str]],
                                                                           reader: Any) -> None:
    repo, shas = published
    tables = reader(repo, "obsrepo")
    for seq, sha in enumerate(shas, start=1):
        expected = asked(repo, sha)
        assert published_as_of(tables, seq) == expected, seq
        assert expected["identity_candidates"] and expected["contested_fields"], seq  # the scenario holds both
    first, second = asked(repo, shas[0]), asked(repo, shas[1])
    assert first["contested_fields"] - second["contested_fields"], "the retraction settles a contest"
    assert [r for r in tables["contested_fields"] if r["withdrawn"]], "what settles is withdrawn, not forgotten"


@pytest.mark.parametrize("reader", [read_pyiceberg, read_duckdb], ids=["pyiceberg", "duckdb"])
def test_a_bound_publish_holds_only_pairs_and_contests_of_what_it_sees(published: tuple[Repo, list[str]],
                                                                      reader: Any) -> None:
    repo, shas = published
    tables = reader(repo, "bound")
    for seq, sha in enumerate(shas, start=1):
        assert published_as_of(tables, seq) == asked(repo, sha, "--tenant", "org=a"), seq
    dumped = json.dumps(tables, default=str)
    for theirs in ("person/k3", obs_id(3), obs_id(7), "secret"):
        assert theirs not in dumped, theirs
    unbound = json.dumps(read_pyiceberg(repo, "obsrepo"), default=str)
    assert "person/k3" in unbound and obs_id(7) in unbound  # b's pair and contest exist, unbound


def test_a_contest_the_head_withholds_leaves_every_seq(make_repo: Any, tmp_path: Path) -> None:
    """Retention (§8b): an expired challenger's contest row and its withdrawal leave no trace."""
    repo = make_repo()
    catalog_env(repo, tmp_path / "catalog")
    repo.write("schemas/retention.yaml", "spec: retention/v1\npolicies:\n  - {type: chat.line, ttl: 30d}\n")
    chat = obs_id(1, "2026-02-01T00:00:00Z")
    repo.add(observation(chat, type="chat.line", entity="company/acme", fields={"name": "Acme chat"}, source="agent/chat"),
             observation(obs_id(2, "2026-02-01T01:00:00Z"), entity="company/acme", fields={"name": "Acme"},
                         source="agent/crm"))
    repo.env["GIT_COMMITTER_DATE"] = "2026-02-02T00:00:00+00:00"
    repo.commit("one")
    publish(repo)
    assert chat in json.dumps(read_pyiceberg(repo, "obsrepo")["contested_fields"])
    repo.env["GIT_COMMITTER_DATE"] = "2026-03-10T00:00:00+00:00"  # the chat line has expired
    last = repo.commit("two", allow_empty=True)
    assert publish(repo)["erased"] == [chat]
    for reader in (read_pyiceberg, read_duckdb):
        tables = reader(repo, "obsrepo")
        assert chat not in json.dumps(tables, default=str) and "Acme chat" not in json.dumps(tables, default=str)
        assert published_as_of(tables, 2) == asked(repo, last)

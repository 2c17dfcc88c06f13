"""The read scope carries the tenant: a read written with no tenant code of its own sees only
the caller's rows, at any commit (on the indexed chain or off it), through every relation
and every public view."""

from __future__ import annotations

import pytest
from helpers import observation

ACME = {"tenant": {"org": "acme"}}
GLOBEX = {"tenant": {"org": "globex"}}

# relations a careless reader might name, with the column that identifies an observation
NAIVE_READS = {
    "visible": "SELECT id FROM visible",
    "obs_versions": "SELECT id FROM obs_versions",
    "observations view": "SELECT id FROM observations",
    "observation_fields view": "SELECT observation_id FROM observation_fields",
    "observation_scopes view": "SELECT observation_id FROM observation_scopes",
    "relations view": "SELECT observation_id FROM relations",
    "records": "SELECT id FROM visible_records WHERE row_id IN (SELECT row_id FROM visible)",
    "stored records": "SELECT id FROM obs_records",
    "stored keys": "SELECT id FROM obs_keys",
}


@pytest.fixture
def two_tenants(make_repo):
    repo = make_repo()
    a1 = observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z", entity="company/a", fields={"name": "A"},
                     scope=["shared/x"], relations=[{"type": "REFERS_TO", "target": "company/a"}], **ACME)
    g1 = observation("obs-20260101-090000-0002", "2026-01-01T09:00:00Z", entity="company/g", fields={"name": "G"},
                     scope=["shared/x"], relations=[{"type": "REFERS_TO", "target": "company/g"}], **GLOBEX)
    n1 = observation("obs-20260101-090000-0003", "2026-01-01T09:00:00Z", entity="company/n", fields={"name": "N"})
    repo.add(a1, g1, n1)
    first = repo.commit("first")
    a2 = observation("obs-20260102-090000-0004", "2026-01-02T09:00:00Z", entity="company/a", fields={"size": 1}, **ACME)
    g2 = observation("obs-20260102-090000-0005", "2026-01-02T09:00:00Z", entity="company/g", fields={"size": 2}, **GLOBEX)
    repo.add(a2, g2)
    second = repo.commit("second")
    repo.git("checkout", "-q", "-b", "side", first)
    g3 = observation("obs-20260103-090000-0006", "2026-01-03T09:00:00Z", entity="company/g", fields={"size": 3}, **GLOBEX)
    a3 = observation("obs-20260103-090000-0007", "2026-01-03T09:00:00Z", entity="company/a", fields={"size": 4}, **ACME)
    repo.add(g3, a3)
    side = repo.commit("off the indexed chain")
    repo.git("checkout", "-q", "main")
    assert repo.obsrepo("index").returncode == 0
    return repo, {"first": first, "second": second, "side": side}, {
        "first": {a1.id}, "second": {a1.id, a2.id}, "side": {a1.id, a3.id}}


def _scope(repo, at, tenant):
    from obsrepo.gitstore import Git
    from obsrepo.index import IndexFiles, open_reader
    from obsrepo.index.paths import index_path
    from obsrepo.read.scope import ReadScope

    git = Git.discover(str(repo.path))
    con = open_reader(IndexFiles(index_path(git.root, None)).path)
    return con, ReadScope(con, git, at, tenant)


@pytest.mark.parametrize("at", ["first", "second", "side"])
def test_a_naive_read_sees_only_the_bound_tenant(two_tenants, at):
    repo, commits, mine = two_tenants
    con, scope = _scope(repo, commits[at], {"org": "acme"})
    try:
        assert {r[0] for r in scope.rows(NAIVE_READS["visible"])} == mine[at]
        every_version = {r[0] for r in scope.rows(NAIVE_READS["obs_versions"])}
        assert every_version and all(i in mine["second"] for i in every_version)  # acme's, at any commit
        for name, sql in NAIVE_READS.items():
            seen = {r[0] for r in scope.rows(sql)}
            assert seen <= mine["second"] | mine["side"], (name, seen)
        assert scope.one("SELECT count(*) FROM entity_snapshots")[0] == 0  # reduced over every tenant
        terms = scope.one("SELECT count(DISTINCT row_id) FROM visible_terms WHERE row_id IN "
                          "(SELECT row_id FROM visible)")[0]
        assert terms == len(mine[at])
        other = scope.one("SELECT count(*) FROM obs_terms WHERE row_id NOT IN (SELECT row_id FROM obs_versions)")[0]
        assert other == 0
    finally:
        scope.close()
        con.close()


def test_rows_read_by_key_are_the_visible_rows_that_hold_it(two_tenants):
    """`keyed` (a scope's or a type's rows read by key) answers what `visible` filtered by
    the same value does, at every chain commit and binding; off the chain it does not answer."""
    repo, commits, _ = two_tenants
    for at, tenant in [(at, tenant) for at in ("first", "second", "side") for tenant in ({}, {"org": "acme"})]:
        con, scope = _scope(repo, commits[at], tenant)
        try:
            for kind, values, where in [("scope", ["shared/x"], "list_contains(scope, 'shared/x')"),
                                        ("scope", ["shared/x", "nowhere"], "list_contains(scope, 'shared/x')"),
                                        ("type", ["no.such.type"], "type = 'no.such.type'")]:
                keyed = scope.keyed(kind, values)
                if at == "side":
                    assert keyed is None, "an overlay's rows have no keys: read visible"
                    continue
                seen = sorted(scope.rows(f"SELECT id FROM {keyed}"))
                assert seen == sorted(scope.rows(f"SELECT id FROM visible WHERE {where}")), (at, tenant, values)
            if at != "side":
                assert len(scope.rows(f"SELECT id FROM {scope.keyed('scope', ['shared/x'])}")) == (1 if tenant else 2)
        finally:
            scope.close()
            con.close()


def test_records_read_by_row_id_are_the_visible_records_of_those_ids(two_tenants, monkeypatch):
    """`records_of` (a page's records by the stored table's index on row id, or by a scan for a
    long page or an overlay's rows) answers what `visible_records` filtered by the ids does, at
    every commit and binding: another tenant's row id asked for gives nothing."""
    from obsrepo.read import scope as scopes

    repo, commits, _ = two_tenants
    for at, tenant in [(at, tenant) for at in ("second", "side") for tenant in ({}, {"org": "acme"})]:
        con, scope = _scope(repo, commits[at], tenant)
        try:
            every = [r[0] for r in con.execute("SELECT row_id FROM obs_records ORDER BY 1").fetchall()]
            expected = sorted(scope.rows(f"SELECT row_id, id FROM visible_records WHERE row_id IN ({','.join(map(str, every))})"))
            assert len(expected) == (2 if tenant else 5) or at == "side"
            for by_key in (len(every), 0):  # the index's read, then the scan's
                monkeypatch.setattr(scopes, "RECORDS_BY_KEY", by_key)
                assert sorted(scope.rows(f"SELECT row_id, id FROM {scope.records_of(every)}")) == expected, (at, tenant)
        finally:
            scope.close()
            con.close()


def test_an_unbound_scope_sees_every_tenant_and_scopes_do_not_share_views(two_tenants):
    repo, commits, mine = two_tenants
    con, everyone = _scope(repo, commits["second"], {})
    bound = None
    try:
        assert len(everyone.rows("SELECT id FROM visible")) == 5
        from obsrepo.read.scope import ReadScope

        bound = ReadScope(con, everyone.git, commits["second"], {"org": "globex"})
        assert len(bound.rows("SELECT id FROM visible")) == 2
        assert len(everyone.rows("SELECT id FROM visible")) == 5  # each scope has its own connection
        assert len(con.execute("SELECT id FROM observations").fetchall()) == 5  # the shared connection is untouched
    finally:
        if bound is not None:
            bound.close()
        everyone.close()
        con.close()


def test_a_tenant_value_cannot_break_out_of_its_literal(two_tenants):
    repo, commits, _ = two_tenants
    con, scope = _scope(repo, commits["second"], {"org": "x' OR TRUE OR '"})
    try:
        assert scope.rows("SELECT id FROM visible") == []
    finally:
        scope.close()
        con.close()

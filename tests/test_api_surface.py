"""The library is the whole surface: check, new and every read go through `Repository`."""

from __future__ import annotations

import pytest
from helpers import observation
from obsrepo.api import Repository
from obsrepo.errors import GitError, InputError, UsageError


def test_check_and_new_through_the_repository(repo):
    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    api = Repository(str(repo.path))
    assert api.check().ok
    created = api.new({"source": "agent/x", "event": "seen", "timestamp": "2026-01-02T09:00:00Z"})
    assert (repo.path / created["path"]).is_file()
    assert api.check(base="HEAD").ok
    (repo.path / created["path"]).write_text("not a document", encoding="utf-8")
    report = api.check((created["path"],))
    assert not report.ok and {i.path for i in report.issues} == {created["path"]}


def test_a_bound_writer_stamps_its_tenant_and_cannot_write_outside_it(repo):
    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    api = Repository(str(repo.path), tenant={"org": "acme"})
    created = api.new({"source": "agent/x", "event": "seen", "timestamp": "2026-01-02T09:00:00Z",
                       "tenant": {"project": "web"}})
    text = (repo.path / created["path"]).read_text(encoding="utf-8")
    assert "org: acme" in text and "project: web" in text
    with pytest.raises(InputError):
        api.new({"source": "agent/x", "event": "other", "tenant": {"org": "globex"}})


def test_a_folder_outside_git_is_a_git_error(tmp_path):
    with pytest.raises(GitError) as caught:
        Repository(str(tmp_path))
    assert caught.value.exit_code == 4


def test_one_parser_for_tenants_and_pages():
    from obsrepo.ops import Binding, Page

    def binding_from(given, environ=None):
        return Binding.configured(given, "tenant", environ if environ is not None else {}).as_dict()

    assert binding_from("org=a,project=p") == {"org": "a", "project": "p"}
    assert binding_from(None, {}) == {}
    for bad in ("", "org=", "team=x", "org=a,org=b"):
        with pytest.raises(UsageError):
            binding_from(bad)
    with pytest.raises(UsageError) as caught:
        binding_from(None, {"OBSREPO_TENANT": ""})
    assert caught.value.details["parameter"] == "OBSREPO_TENANT"
    assert Page.of(1000, 0) == Page(1000, 0)
    for limit, offset in ((0, 0), (1001, 0), (1, -1), (True, 0)):
        with pytest.raises(UsageError):
            Page.of(limit, offset)


def test_duckdb_failures_leave_the_library_as_obsrepo_errors(repo, monkeypatch):
    """Not damage (that rebuilds) but any other DuckDB error: one error root for every caller."""
    import duckdb
    from obsrepo.errors import ObsrepoError
    from obsrepo.read import query as query_module
    from obsrepo.read.query import QueryRequest

    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    api = Repository(str(repo.path))
    assert api.query(QueryRequest())["total"] == 1

    def broken(scope, request):
        scope.rows("SELECT no_such_column FROM visible")

    monkeypatch.setattr(query_module, "run_query", broken)
    with pytest.raises(ObsrepoError) as caught:
        api.query(QueryRequest())
    assert caught.value.code == "INTERNAL_ERROR" and caught.value.details["duckdb"] == "BinderException"
    assert isinstance(caught.value.__cause__, duckdb.Error)


def test_a_query_that_names_a_missing_table_is_its_own_mistake_and_rebuilds_nothing(repo, monkeypatch):
    """A CatalogException is also what a damaged index raises (a table gone), which rebuilds; but
    over an intact catalog it is the query's mistake: reported at once, the index left as it was."""
    import duckdb
    from obsrepo.errors import ObsrepoError
    from obsrepo.read import query as query_module
    from obsrepo.read.query import QueryRequest

    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    api = Repository(str(repo.path))
    assert api.query(QueryRequest())["total"] == 1
    index = next((repo.path / ".git").glob("obsrepo/*.duckdb"), None) or next(repo.path.glob("**/*.duckdb"))
    before = index.stat()

    def mistaken(scope, request):
        scope.rows("SELECT id FROM no_such_table")

    monkeypatch.setattr(query_module, "run_query", mistaken)
    with pytest.raises(ObsrepoError) as caught:
        api.query(QueryRequest())
    assert caught.value.code == "INTERNAL_ERROR" and caught.value.details["duckdb"] == "CatalogException"
    assert isinstance(caught.value.__cause__, duckdb.CatalogException)
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)


METHOD = {"relations": "relationships", "embed_info": "embedder_info"}  # where the method's name is not the operation's
# export takes the query's own fields (or an engine QueryRequest, `request`) for its `query`, and `fmt` for `format`
SPELT = {("export", "query"): ("request", "scopes", "text", "match"), ("export", "format"): ("fmt",)}


def test_every_operation_is_a_method_that_takes_every_field_of_its_request(repo):
    """One declaration: a field added to a request is a parameter of the library at once (a
    write's `destination` is its `commit` and `branch`), and an operation added is a method."""
    import dataclasses
    import inspect

    from obsrepo.ops import OPERATIONS

    api = Repository(str(repo.path))
    for name, operation in OPERATIONS.items():
        method = getattr(api, METHOD.get(name, name))
        parameters = inspect.signature(method).parameters
        for field in dataclasses.fields(operation.request):
            wanted = ("commit", "branch") if field.name == "destination" else (field.name,)
            wanted = SPELT.get((name, field.name), wanted)
            assert all(p in parameters for p in wanted), (name, field.name, list(parameters))


def test_query_hands_every_option_to_the_door(repo):
    """`match`, `fusion`, `alpha`, `semantic_k` and `embedding` reach the query (each is judged
    there, naming itself), beside an engine QueryRequest as earlier releases passed it."""
    from obsrepo.read.query import QueryRequest

    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    api = Repository(str(repo.path), embedder="none")
    assert api.query(QueryRequest(limit=1), match="lexical")["total"] == 1
    assert api.query(limit=1, order="asc")["limit"] == 1
    for given, field in (({"match": "semantic", "text": "x"}, "match"), ({"fusion": "sum"}, "fusion"),
                         ({"alpha": 2.0}, "alpha"), ({"semantic_k": 0}, "semantic_k"),
                         ({"embedding": (0.1, 0.2), "match": "lexical"}, "embedding")):
        with pytest.raises(UsageError) as caught:
            api.query(**given)
        assert caught.value.details["parameter"] == field, given
    with pytest.raises(TypeError):
        api.query(no_such_field=1)


def test_a_write_takes_commit_and_branch_for_its_destination(repo):
    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    api = Repository(str(repo.path))
    written = api.retract("obs-20260101-090000-0001", reason="wrong", commit=False)
    assert (repo.path / written["path"]).is_file() and "commit" not in written
    with pytest.raises(UsageError):
        api.retract("obs-20260101-090000-0001", reason="wrong", commit=False, branch="elsewhere")

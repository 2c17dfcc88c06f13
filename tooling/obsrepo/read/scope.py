"""The read scope: one request's commit, tenant binding and connection, built once.

Every read goes through a `ReadScope`. It owns a DuckDB connection of its own (a cursor: its
temporary views are private to it) in which the tables that hold observation rows are
*shadowed* by views that already carry the tenant clause. A read function names
`obs_versions`, `visible` or any public view (`observations`, `relations`, …) and gets only
the caller's rows: it cannot reach another tenant's by forgetting a filter, because it never
writes one. Relations a reader uses:

    visible          observations present in the tree of `at_commit`, within the binding, as
                     stewardship leaves them (docs/design.md §14): classifications raised by
                     reclassify documents, expired rows and rows above the caller's ceiling out
    visible_all      the same before stewardship (every row of the commit within the binding)
    visible_terms    BM25 terms of those rows (row_id, term, tf)
    visible_doclen   their token counts (row_id, doc_len)
    visible_records  their printed columns, by row id
    records_of(ids)  the rows of `visible_records` with those row ids, read by the stored
                     table's index on row id where it can be (a few rows: a page)
    keyed(kind, values)  the rows of `visible` with one of those scopes or that type, read by
                     key from `obs_keys` (index/keyed.py) instead of a scan, where it can be
    obs_versions     every version ever indexed, within the binding (history, "ever known")

Values are inlined as SQL literals (sequence numbers are integers, tenant values are quoted),
so the relations take no parameters and compose into any statement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..gitstore import Git

if TYPE_CHECKING:
    from ..gitstore.blobs import BlobReader

TENANT_COLUMNS = {"org": "tenant_org", "project": "tenant_project", "agent": "tenant_agent", "user": "tenant_user"}
# stored tables keyed by an observation's row id, without tenant columns of their own
_BY_ROW_ID = ("obs_terms", "obs_doclen", "obs_texts")
_UNKNOWN = object()
RECORDS_BY_KEY = 128  # a page of at most this many records is read by row id (~0.3 ms a row), more by a scan


def literal(value: str) -> str:
    """A SQL string literal of any text: DuckDB ends a quoted string at a NUL, so a NUL (a
    caller's `--scope`, a search word) is spliced in as `chr(0)`, never left to end the quote."""
    quoted = "'" + value.replace("'", "''") + "'"
    return quoted if "\0" not in value else "(" + quoted.replace("\0", "' || chr(0) || '") + ")"


def entity_clause(entities: list[str] | tuple[str, ...], by_key: bool = True) -> tuple[str, list[Any]]:
    """SQL over `o` (and its parameters) true for the rows of these entities: with `by_key` (a
    relation with obs_versions' columns), their keys first, written as literals so that a scan
    compares them before it reads anything else of a row, then the names (two entities that
    share a key never mix); without (the keys of scopes or a type hold no entity key), by name."""
    if not entities:
        return "FALSE", []
    first = ""
    if by_key:
        from ..index.columns import entity_key

        first = f"o.entity_key IN ({', '.join(str(entity_key(entity)) for entity in entities)}) AND "
    if len(entities) == 1:
        return f"{first}o.entity = ?", [entities[0]]
    return f"{first}o.entity IN (SELECT unnest(?::VARCHAR[]))", [list(entities)]  # a hash join, not a search per row


def tenant_clause(binding: Mapping[str, str], alias: str = "") -> str:
    """Fail closed: an observation without a bound key is invisible to a bound caller."""
    prefix = f"{alias}." if alias else ""
    clauses = [f"{prefix}{TENANT_COLUMNS[key]} = {literal(binding[key])}" for key in sorted(binding)]
    return " AND ".join(clauses) if clauses else "TRUE"


class ReadScope:
    """A commit view + a tenant binding + a connection. Close it when the request is done."""

    def __init__(self, con: Any, git: Git, at_commit: str | None = None, tenant: Mapping[str, str] | None = None,
                 overlay: bool = False, *, ceiling: str | None = None, include_expired: bool = False) -> None:
        """`at_commit`: a full sha (default: the indexed commit). With `overlay`, the indexed
        commit's `visible` also holds a running watcher's uncommitted drafts, when the
        connection has them attached (reader.attach_overlay; records then say `uncommitted`).
        `ceiling`: the most restrictive classification the caller may read; `include_expired`:
        keep what retention expired."""
        self.con = con.cursor()
        self.git = git
        self.tenant: dict[str, str] = dict(tenant or {})
        self.ceiling = ceiling
        self.include_expired = include_expired
        self._weights: str | None = None
        self._special: list[Any] | None = None
        self._patched: int | None = None  # the chain position an overlay patches (off-chain commits)
        self._keyed: str | None = None  # obs_keys as `visible` sees them (None: they cannot say)
        self._stored_records = False  # `visible_records` is the stored table within the binding (move_to)
        self._kept = False  # stewardship withholds nothing here (move_to)
        self._stale: Any = _UNKNOWN  # the entities whose stored snapshot may not be this commit's (None: every one)
        self.raised: str | None = None  # a temporary table (row_id, rank) of classifications raised by reclassify
        self.as_indexed = False  # `visible` holds what `entity_snapshots` was reduced over (move_to)
        self.at_commit = ""
        # a kept-open generation (index/live.py) remembers what depends on it alone
        self.memo: dict[tuple, Any] | None = getattr(con, "memo", None)
        # answers kept for the scope's life when several reads share it (a Session's `together`)
        self.answers: dict[tuple, Any] | None = None
        self._blobs: BlobReader | None = None  # a `git cat-file --batch` kept for the reads that share the scope
        self.indexed_commit: str = self.remember(("indexed",), lambda: self.one("SELECT value FROM meta WHERE key = 'commit'")[0])
        self.drafts = overlay and self.remember(("drafts",), lambda: self.one(
            "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'watch_overlay'")[0] > 0 and self.one(
            "SELECT value FROM watch_overlay.meta WHERE key = 'commit'") == (self.indexed_commit,))
        if self.tenant:
            self._shadow()
        self.move_to(at_commit or self.indexed_commit)

    # -- running statements ---------------------------------------------------------------
    def remember(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """`compute()`, kept for the connection's generation when it has one: `key` must name
        everything besides the generation that the answer depends on."""
        if self.memo is None:
            return compute()
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def view_key(self) -> tuple:
        """What `visible` depends on besides the generation."""
        return (self.at_commit, tuple(sorted(self.tenant.items())), self.drafts, self.ceiling, self.include_expired)

    def rows(self, sql: str, params: list[Any] | tuple = ()) -> list[tuple]:
        return self.con.execute(sql, list(params)).fetchall()

    def columns(self, sql: str, params: list[Any] | tuple = ()) -> dict[str, Any]:
        """The answer as numpy arrays, one per column (no Python object per row)."""
        return self.con.execute(sql, list(params)).fetchnumpy()

    def one(self, sql: str, params: list[Any] | tuple = ()) -> Any:
        """The first row (None when there is none)."""
        return self.con.execute(sql, list(params)).fetchone()

    @contextmanager
    def registered(self, name: str, columns: dict[str, Any]) -> Iterator[None]:
        """numpy arrays as the relation `name` for the statements inside: one scan for DuckDB
        (a parameter list converts each value alone; an arrow table would import
        pyarrow.dataset, half a second of a command-line query)."""
        self.con.register(name, columns)
        try:
            yield
        finally:
            self.con.unregister(name)

    def blob(self, sha: str) -> bytes:
        """A document's content from git. Reads that share the scope (a preview's observation
        pages) read every blob through one `git cat-file --batch` process, not one each."""
        if self.answers is None:
            return self.git.read_blob(sha)
        if self._blobs is None:
            self._blobs = self.git.blob_reader()
        return self._blobs.read([sha])[0]

    def close(self) -> None:
        if self._blobs is not None:
            self._blobs.close()
        self.con.close()

    # -- building the relations ------------------------------------------------------------
    def _shadow(self) -> None:
        stored = self.stored()
        clause = tenant_clause(self.tenant)
        self.con.execute(";".join([
            f"CREATE TEMP VIEW obs_versions AS SELECT * FROM {stored}.obs_versions WHERE {clause}",
            # the printed columns carry the tenant too: no join needed
            f"CREATE TEMP VIEW obs_records AS SELECT * FROM {stored}.obs_records WHERE {clause}",
            f"CREATE TEMP VIEW obs_keys AS SELECT * FROM {stored}.obs_keys WHERE {clause}",
            *(f"CREATE TEMP VIEW {table} AS SELECT * FROM {stored}.{table} WHERE row_id IN (SELECT row_id FROM obs_versions)"
              for table in _BY_ROW_ID),
            # reduced over every tenant at build time: nothing of it is a bound caller's to read
            f"CREATE TEMP VIEW entity_snapshots AS SELECT * FROM {stored}.entity_snapshots WHERE FALSE",
            f"CREATE TEMP VIEW contested_fields AS SELECT * FROM {stored}.contested_fields WHERE FALSE",
            f"CREATE TEMP VIEW field_intervals AS SELECT * FROM {stored}.field_intervals WHERE FALSE",
        ]))

    def move_to(self, at_commit: str) -> None:
        """Point `visible` and its companions at another commit (same binding, same connection)."""
        if at_commit == self.at_commit:
            return
        seq_row = self.remember(("seq", at_commit), lambda: self.one("SELECT seq FROM commits WHERE sha = ?", [at_commit]))
        self._patched = None
        chain: int | None = None  # `visible_all` is the stored rows at this chain position
        self._stored_records = False
        if seq_row is not None and self.drafts and at_commit == self.indexed_commit:
            self._with_drafts(int(seq_row[0]))
        elif seq_row is not None:
            chain = int(seq_row[0])
            self._stored_records = True
            self._views(f"SELECT * FROM obs_versions WHERE added_seq <= {chain} AND removed_seq > {chain}",
                        "obs_terms", "obs_doclen", "obs_records")
        else:
            self._patched = self._overlay(at_commit)
        self.at_commit = at_commit
        self._weights = None
        self._special = None
        self._stale = _UNKNOWN
        from ..index.stewardship import effective_sql, withheld

        self.raised, clauses = withheld(self.con, self.git, at_commit, "visible_all", prefix="scope",
                                        ceiling=self.ceiling, include_expired=self.include_expired,
                                        reclassified=lambda ask: self.remember(("reclassified", *self.view_key()), ask))
        effective, kept = effective_sql("visible_all", self.raised, clauses), not clauses
        # the keys carry the declared rank: they answer for `visible` when nothing is raised
        self._keyed = None if chain is None or self.raised is not None else " AND ".join(
            [f"o.added_seq <= {chain}", f"o.removed_seq > {chain}", *clauses])
        # what the index's own tables were reduced over: the indexed commit, every tenant, every row
        self.as_indexed = kept and not self.tenant and not self.drafts and at_commit == self.indexed_commit
        self._kept = kept
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW visible AS {effective}")

    def keyed(self, kind: str, values: tuple[str, ...] | list[str]) -> str | None:
        """A relation of the rows of `visible` that hold one of `values` of `kind` ("scope" or
        "type"), with the columns of `obs_keys` (not every column of `visible`): read by key,
        without a scan. None where the keys cannot say (drafts, a commit off the chain, raised
        classifications): read `visible` then. The values are written as literals, so the
        hashes fold to the constants DuckDB compares with each block's min/max."""
        if self._keyed is None or not values:
            return None
        from ..index.columns import KEYED

        hashes = ", ".join(f"md5_number_upper({literal(f'{kind}:{value}')})" for value in values)
        names = ", ".join(literal(value) for value in values)
        distinct = "DISTINCT " if len(values) > 1 else ""  # a row with two of the values is one row
        return (f"(SELECT {distinct}{', '.join(f'o.{name}' for name in KEYED)} FROM obs_keys AS o "
                f"WHERE o.key IN ({hashes}) AND o.kind = {literal(kind)} AND o.value IN ({names}) AND {self._keyed})")

    def records_by_key(self, ids: Any) -> bool:
        """Whether `records_of(ids)` reads those rows by row id (a point read each), not by a scan."""
        return self._stored_records and 0 < len(ids) <= RECORDS_BY_KEY

    def placed(self, row_ids: Any) -> str:
        """A relation with the timestamp and id of each of `row_ids` (sorted rows of `visible`:
        what the default order needs of them): a few stored rows read by row id, else `visible`."""
        if self.records_by_key(row_ids) and row_ids[0] >= 0:  # a draft's row (negative) is in `visible` only
            return self.records_of([int(r) for r in row_ids], ["timestamp", "id"])
        return "visible"

    def records_of(self, ids: list[int], names: list[str] | None = None) -> str:
        """A relation of the rows of `visible_records` whose row ids are `ids` (with `names`: at
        least those columns and `row_id`). Where those are the stored table's rows within the
        binding, they are read by its index on row id first (a point read each: a page's rows
        are far apart, and a scan decompresses every printed column of every row between them),
        only the columns asked for, and the binding applied to what was read; a materialized
        step, so the tenant clause does not turn the read back into a scan."""
        listed = ",".join(str(int(r)) for r in ids)
        if not self.records_by_key(ids):
            # a list of ids is cheaper to test as a list than as an IN (a join), within their range
            return (f"(SELECT * FROM visible_records WHERE row_id BETWEEN {min(ids)} AND {max(ids)} "
                    f"AND list_contains([{listed}]::BIGINT[], row_id))")
        from ..index.columns import quoted

        read = "*" if names is None else ", ".join(
            ["row_id", *(quoted(name) for name in names), *(TENANT_COLUMNS[key] for key in sorted(self.tenant))])
        return (f"(WITH r AS MATERIALIZED (SELECT {read} FROM {self.stored()}.obs_records WHERE row_id IN ({listed})) "
                f"SELECT * FROM r WHERE {tenant_clause(self.tenant)})")

    def stored(self) -> str:
        """The index's own schema (its tables, unshadowed by the binding), quoted."""
        return self.remember(("stored",), lambda: f'"{self.one("SELECT current_database()")[0]}".main')

    @property
    def unfiltered(self) -> bool:
        """Whether `visible` is what the index's own tables describe: the indexed commit, no
        binding, no ceiling, the default retention."""
        return (not self.tenant and self.ceiling is None and not self.include_expired
                and self.at_commit == self.indexed_commit)

    def special(self) -> list[Any]:
        """The special rows of `visible` (merges, retractions and their targets, as `Obs`): every
        reduction and merge map needs them, so they are read once per scope and commit, however
        many questions (a page's, a preview's pages) share the scope; a kept-open generation
        keeps them for every scope of the same view (a server's pages). Never changed in place."""
        if self._special is None:
            from ..index.reducer_rows import special_rows

            self._special = self.remember(("special", *self.view_key()), lambda: special_rows(self.con, "visible"))
        return self._special

    def stored_fresh(self, entities: list[str]) -> list[str]:
        """Those of `entities` whose row of the index's own `entity_snapshots` is their snapshot
        here: all of them where `as_indexed`; at a commit off the chain that patches the indexed
        commit (a pull request's head) with nothing withheld, those whose rows the patch leaves
        alone, when it changes no merge, retraction or entity schema; else none."""
        if self.as_indexed:
            return list(entities)
        if not self._kept or self.tenant or self.drafts or self._patched is None:
            return []
        if self._stale is _UNKNOWN:
            self._stale = self._patched_entities()
        if self._stale is None:
            return []
        return [e for e in entities if e not in self._stale]

    def _patched_entities(self) -> frozenset[str] | None:
        """The survivors whose rows an overlay on the indexed commit adds or removes; None (every
        entity) when the patch is not on the indexed commit or changes more than rows (a special
        row: a merge, a retraction; an entity schema)."""
        from ..format.reduce import merge_map, retracted_ids, survivor

        indexed = self.remember(("seq", self.indexed_commit),
                                lambda: self.one("SELECT seq FROM commits WHERE sha = ?", [self.indexed_commit]))
        if indexed is None or self._patched != int(indexed[0]):
            return None
        seq = self._patched
        old = (f"SELECT entity, special FROM obs_versions WHERE added_seq <= {seq} AND removed_seq > {seq} "
               "AND path IN (SELECT path FROM overlay_removed)")
        touched = self.rows(f"SELECT entity, special FROM overlay_obs UNION ALL {old}")
        schemas = self.git.run("diff", "--name-only", self.indexed_commit, self.at_commit, "--", "schemas/entities")
        if any(special for _, special in touched) or schemas.strip():
            return None
        special = self.special()
        merges = merge_map(special, retracted_ids(special))
        return frozenset(survivor(entity, merges) for entity, _ in touched if entity is not None)

    def weights(self) -> str:
        """The relation (observation_id, weight, feedback_count) of the feedback this caller
        sees at this commit: the stored table when it describes exactly that, else folded now."""
        if self._weights is None:
            if self.unfiltered:
                self._weights = "observation_weights"
            else:
                from ..index.weights import feedback_events, fold

                weights, _ = fold(feedback_events(self.con, "visible"))
                self.con.execute("CREATE OR REPLACE TEMP TABLE scope_weights (observation_id VARCHAR, weight DOUBLE, "
                                 "feedback_count INTEGER)")
                if weights:
                    self.con.executemany("INSERT INTO scope_weights VALUES (?, ?, ?)",
                                         [(k, w, n) for k, (w, n) in sorted(weights.items())])
                self._weights = "scope_weights"
        return self._weights

    def row_weights(self, row_ids: Any) -> Any:
        """The feedback weight of each of `row_ids` (numpy), 1.0 where there is none: the
        visible rows' weights read once per index generation and view."""
        def read() -> Any:
            from .rowids import ByRow

            found = self.columns(f"SELECT v.row_id, w.weight::DOUBLE AS weight FROM {self.weights()} AS w "
                                 "JOIN visible AS v ON v.id = w.observation_id")
            return ByRow(found["row_id"], found["weight"], 1.0)

        return self.remember(("row weights", *self.view_key()), read).of(row_ids)

    def _views(self, visible: str, terms: str, doclen: str, records: str) -> None:
        bodies = (("visible_all", visible), ("visible_terms", terms), ("visible_doclen", doclen), ("visible_records", records))
        self.con.execute(";".join(
            f"CREATE OR REPLACE TEMP VIEW {name} AS "
            + (body if body.lstrip().upper().startswith("SELECT") else f"SELECT * FROM {body}")
            for name, body in bodies))

    def _with_drafts(self, seq: int) -> None:
        """The indexed commit plus the watcher's drafts (new paths only: they never hide a
        committed document; the watcher leaves out any draft whose id is committed)."""
        from ..index.schema import RECORD_COLUMNS

        drafts = f"SELECT * FROM watch_overlay.overlay_obs WHERE {tenant_clause(self.tenant)}"
        ids = f"row_id IN (SELECT row_id FROM watch_overlay.overlay_obs WHERE {tenant_clause(self.tenant)})"
        self._views(
            f"SELECT * FROM obs_versions WHERE added_seq <= {seq} AND removed_seq > {seq} UNION ALL {drafts}",
            f"SELECT * FROM obs_terms UNION ALL SELECT * FROM watch_overlay.overlay_terms WHERE {ids}",
            f"SELECT * FROM obs_doclen UNION ALL SELECT * FROM watch_overlay.overlay_doclen WHERE {ids}",
            f"SELECT row_id, {RECORD_COLUMNS} FROM obs_records UNION ALL "
            f"SELECT row_id, {RECORD_COLUMNS} FROM watch_overlay.overlay_obs WHERE {tenant_clause(self.tenant)}")

    def _overlay(self, at_commit: str) -> int | None:
        """A commit off the indexed chain: the nearest chain commit, patched with `git diff`;
        returns that commit's chain position (None: no chain commit, every row is the overlay's)."""
        from .overlay import build_overlay

        seq = build_overlay(self.con, self.git, self.indexed_commit, at_commit)
        mine = f"SELECT * FROM overlay_obs WHERE {tenant_clause(self.tenant)}"
        overlay_ids = "row_id IN (SELECT row_id FROM visible_all)"
        if seq is None:
            self._views(mine, f"SELECT * FROM overlay_terms WHERE {overlay_ids}",
                        f"SELECT * FROM overlay_doclen WHERE {overlay_ids}", "SELECT * FROM visible_all")
            return None
        from ..index.schema import RECORD_COLUMNS

        self._views(
            f"SELECT * FROM obs_versions WHERE added_seq <= {seq} AND removed_seq > {seq} "
            f"AND path NOT IN (SELECT path FROM overlay_removed) UNION ALL {mine}",
            f"SELECT * FROM obs_terms UNION ALL SELECT * FROM overlay_terms WHERE {overlay_ids}",
            f"SELECT * FROM obs_doclen UNION ALL SELECT * FROM overlay_doclen WHERE {overlay_ids}",
            f"SELECT row_id, {RECORD_COLUMNS} FROM obs_records UNION ALL "
            f"SELECT row_id, {RECORD_COLUMNS} FROM overlay_obs WHERE {overlay_ids}")
        return seq

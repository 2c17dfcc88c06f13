"""Loading many observation rows in bounded memory: a build hands over Arrow batches as its
documents are parsed, and nothing of a batch stays in this process once it is loaded.

Each batch goes at once into the printed records (`obs_records`, in row-id order, which batch
after batch keeps) and the document lengths; its versions and BM25 terms go into temporary
tables, which DuckDB keeps within its memory limit (spilling to disk beyond it). `finish`
stores them in the order reads want: versions by entity (one entity's rows sit together, so
most blocks are skipped), their scopes and types by key (keyed.py) and terms by term, as one batch of the whole build would have been.
The terms are made on a second connection, on a thread, while the next batch is parsed and
loaded: they are ~40 % of the load and share little with the rest."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .columns import OBS_COLUMNS
from .documents import index_terms
from .keyed import add_keyed
from .schema import RECORD_COLUMNS

FLUSH_ROWS = 5_000  # observation rows a build holds before loading them: bounds its memory
_QUOTED = ", ".join(f'"{c}"' for c in OBS_COLUMNS)


class BatchLoader:
    """Load Arrow batches of obs_versions rows (`rows.observation_batch`), in row-id order."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.side = con.sibling()  # its own temporary tables: the terms
        self.terms: Future[None] | None = None
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="obsrepo-terms")
        self.touched: set[tuple[Any, bool]] = set()  # (entity, special) of the rows loaded
        con.execute("CREATE OR REPLACE TEMP TABLE staged_obs AS SELECT * FROM obs_versions LIMIT 0")
        self.side.execute("CREATE OR REPLACE TEMP TABLE staged_terms AS SELECT * FROM obs_terms LIMIT 0")

    def add(self, batch: Any) -> None:
        """Load one batch (the terms of the previous one are made meanwhile, then this one's)."""
        text = batch.select(["row_id", "event", "body"])
        self._wait()
        self.terms = self.thread.submit(self._terms, text)
        self.con.register("incoming", batch)
        try:
            self.con.execute(f"INSERT INTO obs_records SELECT row_id, {RECORD_COLUMNS} FROM incoming")
            self.con.execute(f"INSERT INTO staged_obs ({_QUOTED}) SELECT {_QUOTED} FROM incoming")
            self.touched.update(self.con.execute("SELECT DISTINCT entity, special FROM incoming").fetchall())
        finally:
            self.con.unregister("incoming")

    def _terms(self, text: Any) -> None:
        self.side.register("incoming_text", text)
        try:
            index_terms(self.side, "incoming_text", "staged_terms", 0, doclen="obs_doclen", ordered=False)
        finally:
            self.side.unregister("incoming_text")

    def _wait(self) -> None:
        if self.terms is not None:
            terms, self.terms = self.terms, None
            terms.result()

    def finish(self) -> None:
        """Store the staged versions by entity and the staged terms by term, then drop them."""
        try:
            self._wait()
            self.terms = self.thread.submit(self.side.execute,
                                            "INSERT INTO obs_terms SELECT * FROM staged_terms ORDER BY term, row_id")
            self.con.execute(f"INSERT INTO obs_versions ({_QUOTED}) SELECT {_QUOTED} FROM staged_obs "
                             "ORDER BY coalesce(entity, chr(65535)), id")
            add_keyed(self.con, "staged_obs")
            self._wait()
        finally:
            self.close()

    def close(self) -> None:
        """End the side's work (after a failure: quietly, the first failure is the one raised)
        and drop the staging."""
        self.thread.shutdown(wait=True)
        self.terms = None
        for con, table in ((self.con, "staged_obs"), (self.side, "staged_terms")):
            try:
                con.execute(f"DROP TABLE IF EXISTS {table}")
            except Exception:  # noqa: BLE001 - a failed build is reported by what failed first
                pass
        self.side.close()

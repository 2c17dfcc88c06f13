"""Commits off the indexed chain: the nearest chain commit, patched with the `git diff` between
them, as temporary tables of a read connection (`overlay_obs`, `overlay_terms`,
`overlay_doclen`, `overlay_removed`). Nothing is written to the index file."""

from __future__ import annotations

from typing import Any

from ..gitstore import EMPTY_TREE, Git

OVERLAY_ROWS = -(2**40)  # overlay row ids never meet stored ones


def build_overlay(con: Any, git: Git, indexed: str, at_sha: str) -> int | None:
    """Fill the overlay tables for `at_sha`; returns the chain position it patches (None: the
    overlay holds every document of the commit)."""
    from ..gate.sources import DOCUMENT_ROOTS
    from ..index import history
    from ..index.columns import OBS_COLUMNS
    from ..index.documents import index_terms, parse_blobs, rows_for
    from ..index.plan import Addition
    from ..index.rows import insert_rows

    chain = dict(con.execute("SELECT sha, seq FROM commits").fetchall())
    base, seq = None, None
    common = git.run("merge-base", at_sha, indexed, check=False).decode().strip()
    if common:
        for candidate in git.run("rev-list", "--first-parent", common).decode().split():
            if candidate in chain:
                base, seq = candidate, chain[candidate]
                break
    changes = git.diff(base or EMPTY_TREE, at_sha, "--", *DOCUMENT_ROOTS)
    removed = sorted({c.path for c in changes if c.status in ("D", "M", "T")})
    added = sorted((c.path, c.new_sha) for c in changes
                   if c.status in ("A", "M", "T") and c.new_mode in ("100644", "100755") and c.path.startswith("observations/"))
    authors = history.authored(git, base, at_sha) if added else {}
    info = history.commit_info(git, [at_sha, *authors.values()])
    files = [Addition(path, blob, seq or 0, authors.get((path, blob), at_sha)) for path, blob in added]
    obs_rows, _comp, _problems, _issues = rows_for(files, parse_blobs(git, added), OVERLAY_ROWS, info)
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_obs AS SELECT * FROM obs_versions LIMIT 0")
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_terms AS SELECT * FROM obs_terms LIMIT 0")
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_doclen AS SELECT * FROM obs_doclen LIMIT 0")
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_removed (path VARCHAR)")
    if obs_rows:
        insert_rows(con, "overlay_obs", OBS_COLUMNS, obs_rows)
        index_terms(con, "overlay_obs", "overlay_terms", OVERLAY_ROWS)
    if removed:
        con.executemany("INSERT INTO overlay_removed VALUES (?)", [(p,) for p in removed])
    return seq

"""Recall's part of a build (docs/design.md §15): each row's text key, and which texts have vectors.

Every observation row (at every commit of the chain, so `--at` an old commit finds its vectors)
gets the key of the text that is embedded (`event`, a blank line, `body`). With an embedder
configured, the texts whose vectors the repository's vector cache lacks are embedded and
appended to it, and the index records the keys the cache holds under the embedder's
fingerprint. A provider that is down never fails the build: the lexical index is published
whole, the texts left are pending (`status`), and the next run embeds them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..embed.cache import VectorCache, cache_for
from ..errors import EmbedderFault
from ..gitstore import Git

EmbedderSource = Callable[[], Any]  # the configured embedder, loaded on first call; None when there is none
SEGMENT_TEXTS = 1024  # texts per cache segment: a provider failing midway keeps what it gave
TEXT_SQL = "o.event || chr(10) || chr(10) || o.body"  # embed.cache.text_of, in SQL


def embeddings_root(git: Git) -> Path:
    """`<git common dir>/obsrepo/embeddings`: shared by every work tree and index of the repository."""
    common = git.run("rev-parse", "--path-format=absolute", "--git-common-dir").decode().strip()
    return Path(common) / "obsrepo" / "embeddings"


def open_cache(git: Git, embedder: Any) -> VectorCache:
    """The vector cache of `embedder` (EMBEDDER_ERROR when a remote model's size cannot be learned)."""
    return cache_for(embeddings_root(git), embedder)


def key_new_rows(con: Any) -> None:
    """Give the rows added since the last build their text keys."""
    con.execute(f"INSERT INTO obs_texts SELECT o.row_id, sha256({TEXT_SQL}) FROM obs_versions AS o "
                "WHERE o.row_id > (SELECT coalesce(max(row_id), -1) FROM obs_texts) ORDER BY o.row_id")


def refresh_vectors(git: Git, con: Any, embedder_source: EmbedderSource | None) -> dict[str, Any] | None:
    """Key the new rows; with an embedder, embed what the cache lacks and record what it holds.
    The answer: {fingerprint, embedded, pending, error} (distinct texts), None without an embedder."""
    key_new_rows(con)
    embedder = embedder_source() if embedder_source is not None else None
    if embedder is None:
        return None
    error: str | None = None
    try:
        cache: VectorCache | None = open_cache(git, embedder)
    except EmbedderFault as exc:
        cache, error = None, exc.message
    fingerprint = cache.fingerprint if cache is not None else ""  # "": a remote model never reached yet
    if _meta(con, "semantic_fingerprint") != fingerprint:
        con.execute("DELETE FROM embedded_texts")
        con.execute("INSERT OR REPLACE INTO meta VALUES ('semantic_fingerprint', ?)", [fingerprint])
    if cache is not None:
        error = _fill(con, cache, embedder)
    return {**(semantic_state(con) or {}), "error": error}


def _fill(con: Any, cache: VectorCache, embedder: Any) -> str | None:
    """Embed the pending texts the cache lacks, a segment at a time; record every pending text
    the cache then holds. The provider's failure, if any."""
    pending = [key for (key,) in con.execute("SELECT DISTINCT text_key FROM obs_texts "
                                              "ANTI JOIN embedded_texts USING (text_key) ORDER BY 1").fetchall()]
    missing = cache.missing(pending)
    error = None
    if missing:
        con.execute("CREATE OR REPLACE TEMP TABLE wanted AS SELECT unnest(?::VARCHAR[]) AS text_key", [missing])
        texts = dict(con.execute(f"SELECT t.text_key, any_value({TEXT_SQL}) FROM obs_texts AS t JOIN wanted USING (text_key) "
                                 "JOIN obs_versions AS o USING (row_id) GROUP BY t.text_key").fetchall())
        con.execute("DROP TABLE wanted")
        for start in range(0, len(missing), SEGMENT_TEXTS):
            chunk = missing[start:start + SEGMENT_TEXTS]
            try:
                vectors = embedder.embed([texts[key] for key in chunk])
            except EmbedderFault as exc:
                error = exc.message
                break
            cache.add(chunk, vectors)
    held = set(cache.missing(pending))
    con.execute("INSERT INTO embedded_texts SELECT unnest(?::VARCHAR[])", [[key for key in pending if key not in held]])
    return error


def semantic_state(con: Any) -> dict[str, Any] | None:
    """{fingerprint, embedded, pending} of the index's record (distinct texts); None when no
    embedder ever indexed it."""
    fingerprint = _meta(con, "semantic_fingerprint")
    if fingerprint is None:
        return None
    total, embedded = con.execute("SELECT (SELECT count(DISTINCT text_key) FROM obs_texts), "
                                  "(SELECT count(*) FROM embedded_texts)").fetchone()
    return {"fingerprint": fingerprint or None, "embedded": embedded, "pending": total - embedded}


def behind(git: Git, path: str, embedder_source: EmbedderSource | None) -> bool:
    """Whether an index already at its commit still has texts to embed or record for the
    configured embedder (a provider that was down, another model); False without one."""
    from .reader import open_reader

    embedder = embedder_source() if embedder_source is not None else None
    if embedder is None:
        return False
    try:
        fingerprint = open_cache(git, embedder).fingerprint
    except EmbedderFault:
        fingerprint = ""
    con = open_reader(path, fts=False, sandbox=False)
    try:
        state = semantic_state(con)
    finally:
        con.close()
    return state is None or state["fingerprint"] != (fingerprint or None) or (bool(fingerprint) and state["pending"] > 0)


def _meta(con: Any, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]

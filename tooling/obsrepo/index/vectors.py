"""Recall's part of a build (docs/design.md §15): each row's text key, and where its vector is.

Every observation row (at every commit of the chain, so `--at` an old commit finds its vectors)
gets the key of the text that is embedded (`event`, a blank line, `body`): the first 128 bits of
its SHA-256. With an embedder configured, the index catalogues the segments of the repository's
vector cache (`vector_segments`: name and size; `embedded_texts`: each key's segment and slot;
`obs_vectors`: the same for each row, kept with it, so a query reads its rows' vectors' places
as plain integers, without a join), embeds the texts the cache lacks and
appends them to it. A segment is read whole (its checksum) once, when the index first records
it; later builds only look at the folder's names and the recorded segments' sizes, so an update
costs nothing per vector already there. A recorded segment gone or of another size is forgotten,
and its texts embedded again. A provider that is down never fails the build: the lexical index
is published whole, the texts left are pending (`status`), and the next run embeds them.
An update that brings a few new texts (embed.DEFERRED_TEXTS) in a process that has not loaded
a local model leaves them pending too (`vectors_through` in `meta`: the rows after it may
wait): loading the model would cost the update more than everything else it does, and a query
ranking by meaning embeds them until a larger update does. Texts left by a failure or a lost
segment never wait.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..embed import DEFERRED_TEXTS, deferrable
from ..embed.cache import VectorCache, cache_for
from ..errors import EmbedderFault
from ..gitstore import Git

EmbedderSource = Callable[[], Any]  # the configured embedder, loaded on first call; None when there is none
BATCH_TEXTS = 1024  # texts per call to the provider
# texts per cache segment at most: a query maps each segment and takes a product per segment, so
# a local model's cold build writes few large ones (what it gave before failing is written all the
# same); a remote provider's batch, slow or paid for, is written as it comes, so that a process
# killed midway keeps it
SEGMENT_TEXTS = 16 * BATCH_TEXTS
TEXT_SQL = "o.event || chr(10) || chr(10) || o.body"  # embed.cache.text_of, in SQL


def key_sql(sha: str) -> str:
    """The index's key of a text from its SHA-256 in hex (an SQL expression): the first 128 bits."""
    return f"((('0x' || left({sha}, 16))::UBIGINT::UHUGEINT << 64) | ('0x' || substr({sha}, 17, 16))::UBIGINT)"


def embeddings_root(git: Git) -> Path:
    """`<git common dir>/obsrepo/embeddings`: shared by every work tree and index of the repository."""
    return Path(git.dirs()[1]) / "obsrepo" / "embeddings"  # the common dir, asked of git once per Git


def open_cache(git: Git, embedder: Any) -> VectorCache | None:
    """The vector cache of `embedder`; None for a remote model that has given no vector here yet
    (its size, and so its fingerprint, comes with its first vectors)."""
    return cache_for(embeddings_root(git), embedder)


def key_new_rows(con: Any) -> None:
    """Give the rows added since the last build their text keys, and those whose text a
    recorded segment holds already their vectors (`obs_vectors`)."""
    (last,) = con.execute("SELECT coalesce(max(row_id), -1) FROM obs_texts").fetchone()
    con.execute(f"INSERT INTO obs_texts SELECT row_id, {key_sql('h')} FROM (SELECT o.row_id, sha256({TEXT_SQL}) AS h "
                "FROM obs_versions AS o WHERE o.row_id > ?) ORDER BY row_id", [last])
    con.execute("INSERT INTO obs_vectors SELECT t.row_id, e.segment, e.slot FROM obs_texts AS t "
                "JOIN embedded_texts AS e USING (text_key) WHERE t.row_id > ? ORDER BY t.row_id", [last])


def refresh_vectors(git: Git, con: Any, embedder_source: EmbedderSource | None,
                    update: bool = False) -> dict[str, Any] | None:
    """Key the new rows; with an embedder, catalogue the cache, embed what it lacks and record it
    (an `update` of an index may leave a few texts pending: embed.DEFERRED_TEXTS).
    The answer: {fingerprint, embedded, pending, error} (distinct texts), None without an embedder."""
    key_new_rows(con)
    embedder = embedder_source() if embedder_source is not None else None
    if embedder is None:
        return None
    error: str | None = None
    try:
        cache = open_cache(git, embedder)
        if cache is None:
            cache = _first_vectors(git, con, embedder)
    except EmbedderFault as exc:
        cache, error = None, exc.message
    fingerprint = cache.fingerprint if cache is not None else ""  # "": a remote model never reached yet
    if _meta(con, "semantic_fingerprint") != fingerprint:
        con.execute("DELETE FROM embedded_texts; DELETE FROM vector_segments; DELETE FROM obs_vectors")
        con.execute("INSERT OR REPLACE INTO meta VALUES ('semantic_fingerprint', ?)", [fingerprint])
    pending = None
    if cache is not None:
        catalogue(con, cache)
        error, pending = _fill(con, cache, embedder, update)
    return {**(semantic_state(con, pending) or {}), "error": error}


def _first_vectors(git: Git, con: Any, embedder: Any) -> VectorCache | None:
    """A remote model that has given no vector here: the first batch of texts that need one
    is embedded (its answer gives the size: no text is sent only to learn it, docs/design.md
    §8b) and written as a segment; None, and nothing sent, when there is no text at all."""
    found = con.execute(f"SELECT any_value(sha256({TEXT_SQL})) AS sha, any_value({TEXT_SQL}) FROM obs_texts AS t "
                        "JOIN obs_versions AS o USING (row_id) GROUP BY t.text_key ORDER BY sha LIMIT ?",
                        [BATCH_TEXTS]).fetchall()
    if not found:
        return None
    vectors = embedder.embed([text for _sha, text in found])
    cache = open_cache(git, embedder)
    if cache is not None:
        cache.add([sha for sha, _text in found], vectors)  # recorded by `catalogue`, as any segment there
    return cache


def catalogue(con: Any, cache: VectorCache) -> None:
    """Bring the index's record of the cache's segments up to the folder: forget a recorded
    segment that is gone or changed, record (after its checksum) each segment not yet recorded."""
    recorded = {name: (number, size) for number, name, size in con.execute("SELECT segment, name, size FROM vector_segments").fetchall()}
    for name, (number, size) in recorded.items():
        if _size(cache.folder / name) != size:
            con.execute("DELETE FROM embedded_texts WHERE segment = ?", [number])
            con.execute("DELETE FROM obs_vectors WHERE segment = ?", [number])
            con.execute("DELETE FROM vector_segments WHERE segment = ?", [number])
    for name in cache.names():
        if name not in recorded:
            segment = cache.open(name, verify=True)
            if segment is not None:
                _record(con, segment)


def _record(con: Any, segment: Any) -> None:
    """Record `segment` and the slot of each of its keys that no recorded segment holds yet."""
    import numpy as np

    number = con.execute("SELECT coalesce(max(segment), -1) + 1 FROM vector_segments").fetchone()[0]
    con.execute("INSERT INTO vector_segments VALUES (?, ?, ?)", [number, segment.name, segment.size])
    words = np.frombuffer(segment.keys, dtype=">u8").reshape(segment.count, 4)  # a key: 4 big-endian words
    # numpy's arrays, registered as they are: an arrow table would import pyarrow.dataset (~0.15 s of an update)
    keys = {"high": words[:, 0].astype(np.uint64), "low": words[:, 1].astype(np.uint64),
            "slot": np.arange(segment.count, dtype=np.int32)}
    con.register("segment_keys", keys)
    try:
        con.execute("INSERT INTO embedded_texts SELECT k.text_key, ?, min(k.slot) FROM "
                    "(SELECT (high::UHUGEINT << 64) | low AS text_key, slot FROM segment_keys) AS k "
                    "ANTI JOIN embedded_texts USING (text_key) GROUP BY k.text_key", [number])
    finally:
        con.unregister("segment_keys")
    # the rows of the texts it gave a vector (a text another segment held keeps that one)
    con.execute("INSERT INTO obs_vectors SELECT t.row_id, e.segment, e.slot FROM obs_texts AS t "
                "JOIN embedded_texts AS e USING (text_key) WHERE e.segment = ? ORDER BY t.row_id", [number])


def _fill(con: Any, cache: VectorCache, embedder: Any, update: bool = False) -> tuple[str | None, int]:
    """Embed the texts no recorded segment holds, a batch at a time, writing and recording a
    segment of up to SEGMENT_TEXTS of them (a local model's; a remote provider's batch alone),
    and what was embedded when the provider fails; an `update` leaves up to DEFERRED_TEXTS of
    them to a later one when the model would be loaded for them alone.
    The provider's failure, if any, and how many texts are left. Only the rows whose keys no
    segment holds are joined to their documents (an update: a few), not every row."""
    found = con.execute(f"SELECT any_value(sha256({TEXT_SQL})) AS sha, any_value({TEXT_SQL}), min(t.row_id) "
                        "FROM (SELECT t.row_id, t.text_key FROM obs_texts AS t ANTI JOIN embedded_texts USING (text_key)) AS t "
                        "JOIN obs_versions AS o USING (row_id) GROUP BY t.text_key ORDER BY sha").fetchall()
    if update and may_wait(con, embedder, len(found), lambda: min(first for _sha, _text, first in found)):
        return None, len(found)
    # every row up to here had its turn: what is left of them (a failure, a segment lost later)
    # is embedded by the next update whatever its size
    con.execute("INSERT OR REPLACE INTO meta SELECT 'vectors_through', coalesce(max(row_id), -1)::VARCHAR FROM obs_texts")
    texts = [(sha, text) for sha, text, _first in found]
    keys: list[str] = []
    vectors: list[Any] = []
    left, error = len(texts), None
    most = SEGMENT_TEXTS if getattr(embedder, "local", False) else BATCH_TEXTS
    for start in range(0, len(texts), BATCH_TEXTS):
        chunk = texts[start:start + BATCH_TEXTS]
        try:
            vectors.extend(embedder.embed([text for _sha, text in chunk]))
        except EmbedderFault as exc:
            error = exc.message
            break
        keys.extend(sha for sha, _text in chunk)
        if len(keys) >= most or start + BATCH_TEXTS >= len(texts):
            left -= _write(con, cache, keys, vectors)
            keys, vectors = [], []
    if keys:
        left -= _write(con, cache, keys, vectors)
    return error, left


def may_wait(con: Any, embedder: Any, count: int, first: Callable[[], int]) -> bool:
    """Whether `count` texts without vectors, whose first row is `first()`, may wait for a later
    update: a few (embed.DEFERRED_TEXTS), all of rows added since an update last embedded, and
    a local model this process has not loaded."""
    return 0 < count <= DEFERRED_TEXTS and deferrable(embedder) and first() > waiting_after(con)


def waiting_after(con: Any, meta: str = "meta") -> float:
    """The rows whose texts may wait for a later update are those after this one: the rows added
    since an update last embedded (infinity before any did). `meta`: the table to read it from."""
    found = con.execute(f"SELECT value FROM {meta} WHERE key = 'vectors_through'").fetchone()
    return float("inf") if found is None else int(found[0])


def _write(con: Any, cache: VectorCache, keys: list[str], vectors: list[Any]) -> int:
    """Append and record one segment; how many texts it holds (0: it could not be read back)."""
    segment = cache.add(keys, vectors)
    if segment is None:
        return 0
    _record(con, segment)
    return len(keys)


def semantic_state(con: Any, pending: int | None = None) -> dict[str, Any] | None:
    """{fingerprint, embedded, pending} of the index's record (distinct texts); None when no
    embedder ever indexed it. `pending`: known already (what a fill left)."""
    fingerprint = _meta(con, "semantic_fingerprint")
    if fingerprint is None:
        return None
    total = con.execute("SELECT count(DISTINCT text_key) FROM obs_texts").fetchone()[0]
    if pending is None:
        pending = con.execute("SELECT count(DISTINCT t.text_key) FROM obs_texts AS t "
                              "ANTI JOIN embedded_texts USING (text_key)").fetchone()[0]
    return {"fingerprint": fingerprint or None, "embedded": total - pending, "pending": pending}


def configured_state(git: Git, con: Any, embedder_source: EmbedderSource | None) -> dict[str, Any] | None:
    """`semantic_state` for the configured embedder (the index's own without one): when the
    index holds another kind of vector, or none, its texts are counted against the cache of
    the configured one, and `indexed_fingerprint` names what the index holds. Nothing is sent
    to a provider: a remote model that has given no vector here has no fingerprint yet."""
    indexed = semantic_state(con)
    embedder = embedder_source() if embedder_source is not None else None
    if embedder is None:
        return indexed
    try:
        cache = open_cache(git, embedder)
    except EmbedderFault as exc:
        return {**(indexed or {"fingerprint": None, "embedded": 0, "pending": 0}), "error": exc.message}
    fingerprint = cache.fingerprint if cache is not None else None
    if indexed is not None and indexed["fingerprint"] == fingerprint:
        return indexed
    total = con.execute("SELECT count(DISTINCT text_key) FROM obs_texts").fetchone()[0]
    embedded = _cached_texts(con, cache) if cache is not None and total else 0
    return {"fingerprint": fingerprint, "embedded": embedded, "pending": total - embedded,
            "indexed_fingerprint": indexed["fingerprint"] if indexed is not None else None}


def _cached_texts(con: Any, cache: VectorCache) -> int:
    """How many distinct texts of the index `cache` holds vectors of (each whole segment's keys)."""
    import numpy as np

    words = [np.frombuffer(segment.keys, dtype=">u8").reshape(segment.count, 4)[:, :2]
             for segment in (cache.open(name) for name in cache.names()) if segment is not None and segment.count]
    if not words:
        return 0
    keys = np.concatenate(words)
    con.register("cached_keys", {"high": keys[:, 0].astype(np.uint64), "low": keys[:, 1].astype(np.uint64)})
    try:
        return con.execute("SELECT count(DISTINCT text_key) FROM obs_texts SEMI JOIN "
                           "(SELECT (high::UHUGEINT << 64) | low AS text_key FROM cached_keys) USING (text_key)").fetchone()[0]
    finally:
        con.unregister("cached_keys")


def behind(git: Git, path: str, embedder_source: EmbedderSource | None) -> bool:
    """Whether an index already at its commit still has texts to embed or record for the
    configured embedder (a provider that was down, another model, a recorded segment gone or
    changed; not the few an update leaves to a later one); False without one."""
    from .reader import open_reader

    embedder = embedder_source() if embedder_source is not None else None
    if embedder is None:
        return False
    unknown = False  # a remote model that has given no vector here yet
    try:
        cache = open_cache(git, embedder)
        unknown = cache is None
    except EmbedderFault:
        cache = None
    fingerprint = cache.fingerprint if cache is not None else ""
    con = open_reader(path, fts=False, sandbox=False)
    try:
        state = semantic_state(con)
        recorded = con.execute("SELECT name, size FROM vector_segments").fetchall()
        waiting = state is not None and may_wait(con, embedder, state["pending"], lambda: _first_pending(con))
    finally:
        con.close()
    if state is None or state["fingerprint"] != (fingerprint or None):
        return True
    if cache is None:
        return unknown and state["pending"] > 0  # texts wait for the model's first vectors
    return (state["pending"] > 0 and not waiting) or any(_size(cache.folder / name) != size for name, size in recorded)


def _first_pending(con: Any) -> int:
    """The first row whose text has no vector."""
    return con.execute("SELECT min(t.row_id) FROM obs_texts AS t ANTI JOIN embedded_texts USING (text_key)").fetchone()[0]


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _meta(con: Any, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]

"""The vector cache (docs/design.md §15): every text's vector, computed once per kind of vector.

A folder per fingerprint holds append-only segments; a segment is the vectors of one batch of
texts, keyed by the SHA-256 of each text, laid out to be memory-mapped: a contiguous float32
matrix (a row per text), the parallel array of keys, and each row's norm, so a query gathers
the rows it needs and takes one matrix-vector product, and nothing is parsed or copied whole.
Every index of the repository (a rebuild, another `--index`, an old commit) reads the same
folder, so nothing is embedded twice. A segment is written under a temporary name, fsynced,
then renamed: a reader sees it whole or not at all, and a process killed on the way leaves only
a temporary file. A segment is named by its bytes, so it never changes once there.

A segment that is truncated, damaged (its checksum), of another fingerprint or of another
layout, or that holds a vector not finite in float32 (docs/design.md §8b), is ignored and
removed; its texts are then simply missing, and the next index run embeds them again. The
checksum is read when an index first records a segment (`open(verify=True)`); a query only
maps what its index recorded, checking the layout, the size and the norms.

    MAGIC, header length (u32 LE), header JSON {fingerprint, dimension, count, template} padded
    with spaces to a multiple of 64 bytes, count keys (32 bytes each), count × dimension
    float32 (LE), count norms float32 (LE), CRC-32 of all before (u32 LE)
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import Embedder, Vector

MAGIC = b"obsrepo vectors 2\n"
TEMPLATE = "event\n\nbody"  # what is embedded: a change to it is a new kind of vector
SUFFIX = ".vectors"
KEY_BYTES = 32
ALIGN = 64  # the keys, and so the matrix (count × 32 bytes further), start on a 64-byte boundary


def text_of(event: str, body: str) -> str:
    """The text embedded for an observation."""
    return f"{event}\n\n{body}"


def text_key(text: str) -> str:
    """A text's key in the cache: its SHA-256, in hex (the index keeps its first 128 bits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Segment:
    """One segment, mapped: `keys` (count × 32 bytes), `matrix` (count × dimension float32) and
    `norms` (count float32), read-only views of the file's pages."""

    def __init__(self, name: str, size: int, keys: bytes | memoryview, matrix: Any, norms: Any) -> None:
        self.name = name
        self.size = size
        self.keys = keys
        self.matrix = matrix
        self.norms = norms

    @property
    def count(self) -> int:
        return len(self.norms)

    def hex_keys(self) -> list[str]:
        keys = self.keys
        return [keys[i * KEY_BYTES:(i + 1) * KEY_BYTES].hex() for i in range(self.count)]


class VectorCache:
    """The segments of one fingerprint in `folder`. Segments once mapped are kept (a segment
    never changes: its name is its bytes' hash), so a long-running reader maps each once."""

    def __init__(self, folder: Path, fingerprint: str, dimension: int) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.dimension = dimension
        self._mapped: dict[str, Segment] = {}

    def names(self) -> list[str]:
        """The segments in the folder, sorted (temporary files of an unfinished write left out)."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.glob(f"*{SUFFIX}") if not p.name.startswith("."))

    def open(self, name: str, *, verify: bool = False, size: int | None = None) -> Segment | None:
        """The segment `name`, None when it is absent or not a whole segment of this fingerprint
        (then removed: whoever next misses its texts embeds them again). `verify` reads the
        checksum; `size`, the size an index recorded, must match."""
        segment = self._mapped.get(name)
        if segment is None or verify:
            segment = self._map(name, verify)
            if segment is None:
                self._mapped.pop(name, None)
                return None
            self._mapped[name] = segment
        if size is not None and segment.size != size:
            return None
        return segment

    def add(self, keys: Sequence[str], vectors: Sequence[Vector]) -> Segment | None:
        """Append one segment holding `vectors` under `keys` (hex; written whole, or not at all)."""
        import numpy as np

        if not keys:
            return None
        matrix = np.asarray([np.frombuffer(memoryview(v), dtype=np.float32) for v in vectors], dtype="<f4")
        matrix = matrix.reshape(len(keys), self.dimension)
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1).astype("<f4")
        if not (np.isfinite(matrix).all() and np.isfinite(norms).all()):  # §8b; the embedders refuse them first
            raise ValueError("a vector that is not finite in float32 is never cached")
        header = json.dumps({"fingerprint": self.fingerprint, "dimension": self.dimension, "count": len(keys),
                             "template": TEMPLATE}, sort_keys=True).encode("utf-8")
        header += b" " * (-(len(MAGIC) + 4 + len(header)) % ALIGN)
        payload = b"".join([MAGIC, struct.pack("<I", len(header)), header, b"".join(bytes.fromhex(k) for k in keys),
                            matrix.tobytes(), norms.tobytes()])
        payload += struct.pack("<I", zlib.crc32(payload))
        self.folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(payload).hexdigest()[:32] + SUFFIX  # the same batch twice is one file
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".segment-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_folder(self.folder)
        return self.open(name)

    def _map(self, name: str, verify: bool) -> Segment | None:
        import numpy as np

        path = self.folder / name
        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError:
            return None  # absent, or unreadable now (permissions, a race with a removal): not ours to remove
        layout = _layout(data, size, self.fingerprint, self.dimension)
        if layout is None or (verify and struct.unpack_from("<I", data, size - 4)[0] != zlib.crc32(memoryview(data)[:size - 4])):
            path.unlink(missing_ok=True)
            return None
        start, count = layout
        matrix_at = start + count * KEY_BYTES
        norms_at = matrix_at + count * self.dimension * 4
        matrix = np.frombuffer(data, dtype="<f4", count=count * self.dimension, offset=matrix_at).reshape(count, self.dimension)
        norms = np.frombuffer(data, dtype="<f4", count=count, offset=norms_at)
        # §8b: a segment holding a vector that is not finite (written before they were refused)
        # is ignored and recomputed; a row's norm is not finite when the row is not, so a query
        # checks the norms alone (4 bytes a row), an index recording it every number
        if not np.isfinite(norms).all() or (verify and not np.isfinite(matrix).all()):
            path.unlink(missing_ok=True)
            return None
        return Segment(name, size, memoryview(data)[start:matrix_at], matrix, norms)  # not copied: a query reads none


def _layout(data: Any, size: int, fingerprint: str, dimension: int) -> tuple[int, int] | None:
    """(where the keys start, count) of a segment of this fingerprint whose size is right."""
    try:
        if size < len(MAGIC) + 8 or data[:len(MAGIC)] != MAGIC:
            return None
        (length,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4 + length
        header = json.loads(bytes(data[len(MAGIC) + 4:start]))
        count = int(header["count"])
        if (header.get("fingerprint"), int(header["dimension"]), header.get("template")) != (fingerprint, dimension, TEMPLATE):
            return None
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    if count < 0 or size != start + count * (KEY_BYTES + dimension * 4 + 4) + 4:
        return None
    return start, count


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); a platform without folder handles skips it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


SIZES = "dimensions.json"  # a remote model's vector size, learned once: its fingerprint needs it


def cache_for(root: Path, embedder: Embedder) -> VectorCache | None:
    """The cache of `embedder`'s vectors under `root` (the repository's embeddings folder). A
    remote model's size comes from an earlier run when one learned it, else from its first
    vectors: None until then (nothing is sent only to learn it, docs/design.md §8b). A local
    model's files hash is kept there too."""
    name = f"{embedder.provider}:{getattr(embedder, 'model', '')}"
    assume = getattr(embedder, "assume_dimension", None)
    remember = getattr(embedder, "remember_hashes_in", None)
    if remember is not None:
        remember(root)
    sizes = read_json(root / SIZES)
    if assume is not None and isinstance(sizes.get(name), int) and sizes[name] > 0:
        assume(sizes[name])
    if assume is not None and getattr(embedder, "known_dimension", None) is None:
        return None
    fingerprint, dimension = embedder.fingerprint, embedder.dimension
    if assume is not None and sizes.get(name) != dimension:
        write_json(root / SIZES, sizes | {name: dimension})
    return VectorCache(root / fingerprint, fingerprint, dimension)


def read_json(path: Path) -> dict:
    """A small JSON object the cache keeps beside its segments; {} when absent or unreadable."""
    try:
        value = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_json(path: Path, value: dict) -> None:
    """Written whole under a temporary name and renamed; a failure only means learning it again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(value, handle, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass

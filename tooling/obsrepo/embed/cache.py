"""The vector cache (docs/design.md §15): every text's vector, computed once per kind of vector.

A folder per fingerprint holds append-only segments; a segment is the vectors of one batch of
texts, keyed by the SHA-256 of each text. Every index of the repository (a rebuild, another
`--index`, an old commit) reads the same folder, so nothing is embedded twice. A segment is
written under a temporary name, fsynced, then renamed: a reader sees it whole or not at all,
and a process killed on the way leaves only a temporary file. A segment that is truncated,
damaged (its checksum), of another fingerprint or of another layout is ignored and removed;
its texts are then simply missing, and the next index run embeds them again.

    MAGIC, header length (u32 LE), header JSON {fingerprint, dimension, count, template},
    count keys (32 bytes each), count × dimension float32 (LE), CRC-32 of all before (u32 LE)
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import Embedder, Vector

MAGIC = b"obsrepo vectors 1\n"
TEMPLATE = "event\n\nbody"  # what is embedded: a change to it is a new kind of vector
SUFFIX = ".vectors"
KEY_BYTES = 32


def text_of(event: str, body: str) -> str:
    """The text embedded for an observation."""
    return f"{event}\n\n{body}"


def text_key(text: str) -> str:
    """A text's key in the cache (and in the index): its SHA-256, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache:
    """The segments of one fingerprint in `folder`, loaded once: key (hex) → vector."""

    def __init__(self, folder: Path, fingerprint: str, dimension: int) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.dimension = dimension
        self._vectors: dict[str, Vector] | None = None

    def vectors(self) -> dict[str, Vector]:
        if self._vectors is None:
            self._vectors = {}
            for segment in sorted(self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() else []:
                found = self._read(segment)
                if found is None:
                    segment.unlink(missing_ok=True)  # recomputed by whoever next misses its texts
                else:
                    self._vectors.update(found)
        return self._vectors

    def missing(self, keys: Iterable[str]) -> list[str]:
        known = self.vectors()
        return [key for key in keys if key not in known]

    def add(self, keys: Sequence[str], vectors: Sequence[Vector]) -> None:
        """Append one segment holding `vectors` under `keys` (written whole, or not at all)."""
        if not keys:
            return
        header = json.dumps({"fingerprint": self.fingerprint, "dimension": self.dimension, "count": len(keys),
                             "template": TEMPLATE}, sort_keys=True).encode("utf-8")
        data = array("f")
        for vector in vectors:
            data.extend(vector)
        if sys.byteorder != "little":
            data.byteswap()
        payload = MAGIC + struct.pack("<I", len(header)) + header + b"".join(bytes.fromhex(k) for k in keys) + data.tobytes()
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
        known = self.vectors()
        for key, vector in zip(keys, vectors):
            known[key] = vector

    def _read(self, segment: Path) -> dict[str, Vector] | None:
        """The segment's vectors, None when it is not a whole segment of this fingerprint."""
        try:
            data = segment.read_bytes()
        except OSError:
            return {}  # unreadable now (permissions, a race with a removal): not ours to remove
        try:
            if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 8:
                return None
            (size,) = struct.unpack_from("<I", data, len(MAGIC))
            start = len(MAGIC) + 4 + size
            header = json.loads(data[len(MAGIC) + 4:start])
            count, dimension = int(header["count"]), int(header["dimension"])
        except (ValueError, KeyError, TypeError, struct.error):
            return None
        if (header.get("fingerprint"), dimension, header.get("template")) != (self.fingerprint, self.dimension, TEMPLATE):
            return None
        end = start + count * KEY_BYTES + count * dimension * 4
        if len(data) != end + 4 or struct.unpack_from("<I", data, end)[0] != zlib.crc32(memoryview(data)[:end]):
            return None
        values = array("f", data[start + count * KEY_BYTES:end])
        if sys.byteorder != "little":
            values.byteswap()
        keys = data[start:start + count * KEY_BYTES]
        return {keys[i * KEY_BYTES:(i + 1) * KEY_BYTES].hex(): values[i * dimension:(i + 1) * dimension] for i in range(count)}


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


def cache_for(root: Path, embedder: Embedder) -> VectorCache:
    """The cache of `embedder`'s vectors under `root` (the repository's embeddings folder). A
    remote model's size comes from an earlier run when one learned it, else from the server
    (EMBEDDER_ERROR when it is down)."""
    name = f"{embedder.provider}:{getattr(embedder, 'model', '')}"
    assume = getattr(embedder, "assume_dimension", None)
    sizes = _read_sizes(root)
    if assume is not None and isinstance(sizes.get(name), int):
        assume(sizes[name])
    fingerprint, dimension = embedder.fingerprint, embedder.dimension
    if assume is not None and sizes.get(name) != dimension:
        _write_sizes(root, sizes | {name: dimension})
    return VectorCache(root / fingerprint, fingerprint, dimension)


def _read_sizes(root: Path) -> dict:
    try:
        value = json.loads((root / SIZES).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_sizes(root: Path, sizes: dict) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".sizes-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(sizes, handle, sort_keys=True)
        os.replace(tmp, root / SIZES)
    except OSError:
        pass  # learned again next time

"""`model2vec:<dir>`: static embeddings from a local folder (read by embed/static.py).

A static model is a table of token vectors: a text's vector is the mean of its tokens' rows,
so encoding needs numpy and a tokenizer, no GPU and no network. The folder is the library's own
layout (config.json, tokenizer.json, model.safetensors), read without the library (whose import
costs a command more than the query: embed/static.py), so nothing here can download
(`obsrepo embed pull` does, through the library's hub client).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import EmbedderFault, missing_extra
from . import FLOAT32_MAX, Vector, fingerprint_of
from .cache import read_json, write_json

MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
PULL_HINT = "obsrepo embed pull minishlab/potion-base-8M"
PULLED_TO = ".obsrepo/models/<owner>--<name>"  # where `embed pull` puts a model, in the repository


def how_to_get_one(hub_id: str = "minishlab/potion-base-8M") -> str:
    """What a model is and the ways to get one, offline included (docs/recall.md)."""
    return (f"a model is a folder holding {', '.join(MODEL_FILES)}: fetch one with `obsrepo embed pull {hub_id}` "
            f"(it writes {PULLED_TO}), or, without a network here, run that command on a connected machine, copy "
            "the folder it wrote to this machine and set OBSREPO_EMBEDDER=model2vec:<that folder>")
HASHES = "model-hashes.json"  # in the embeddings folder: each local model's files hash, by folder


class Model2Vec:
    provider = "model2vec"
    local = True  # embeds in this process: what is lost is cheap to embed again

    def __init__(self, folder: str, dimension: int, given: str) -> None:
        self.folder = folder
        self.dimension = dimension
        self._given = given  # the folder as the user wrote it, for messages
        self._table: Any = None
        self._memo: Path | None = None
        self._fingerprint: str | None = None

    @staticmethod
    def open(folder: str) -> Model2Vec:
        """The model in `folder`, checked without loading it: its files are there, the extra
        that reads them is installed and the weights' header gives the dimensions. A folder that
        is missing, incomplete or unreadable is EMBEDDER_ERROR (exit 4) naming the command that
        fetches one. The tokenizer and the token table are loaded by the first `embed`, so an
        `index` with nothing new to embed pays for neither (docs/recall.md, "What it costs")."""
        path = os.path.abspath(os.path.expanduser(folder))
        absent = [name for name in MODEL_FILES if not os.path.isfile(os.path.join(path, name))]
        if absent:
            where = "is not a folder" if not os.path.isdir(path) else f"lacks {', '.join(absent)}"
            shown = folder if path == folder else f"{folder}' ('{path}"
            raise EmbedderFault(f"the model2vec model '{shown}' {where}; {how_to_get_one()}",
                                provider="model2vec", model=folder, folder=path)
        if importlib.util.find_spec("tokenizers") is None:  # the semantic extra: named now, not at the first text
            missing = ModuleNotFoundError("No module named 'tokenizers'", name="tokenizers")
            raise missing_extra(missing) or missing
        try:
            from .static import embedding_dimension

            dimension = embedding_dimension(os.path.join(path, "model.safetensors"))
        except Exception as exc:  # noqa: BLE001 - any unreadable file of the folder is the same refusal
            raise _unreadable(folder, exc) from None
        return Model2Vec(path, dimension, folder)

    @property
    def fingerprint(self) -> str:
        """The model's files' hash (with the dimensions): taken once per process, and read from
        the memo `remember_hashes_in` names while the files' sizes, times and inodes are those
        it was taken from."""
        if self._fingerprint is None:
            try:
                weights = files_hash(self.folder, self._memo)
            except OSError as exc:  # a file gone or unreadable since `open`
                raise _unreadable(self._given, exc) from None
            identity = {"provider": self.provider, "weights": weights, "dimension": self.dimension}
            self._fingerprint = fingerprint_of(identity)
        return self._fingerprint

    def remember_hashes_in(self, folder: Path) -> None:
        """Keep the files' hash in `folder` (the repository's embeddings folder), so a process
        does not read the whole model (tens of MB) only to name it."""
        self._memo = folder / HASHES

    @property
    def loaded(self) -> bool:
        """Whether this process has read the tokenizer and the token table (`load`)."""
        return self._table is not None

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        import numpy as np

        from .static import ModelFileError

        rows = self.load()._table.encode(list(texts)).astype("float32", copy=False)
        # §8b: a vector that is not finite in float32, or whose norm is not, is refused (never cached)
        norms = np.linalg.norm(rows.astype(np.float64), axis=1) if len(rows) else np.zeros(0)
        if not (np.isfinite(rows).all() and (norms <= FLOAT32_MAX).all()):
            raise _unreadable(self._given, ModelFileError("model.safetensors", "holds numbers beyond float32's range "
                                                          "(its vectors are not finite)"))
        return [array("f", row.tobytes()) for row in rows]

    def load(self) -> Model2Vec:
        """Read the model's tokenizer and token table now (the first `embed` does): a file that
        cannot be read is EMBEDDER_ERROR naming `obsrepo embed pull`, as at `open`."""
        if self._table is None:
            try:
                from .static import StaticTable

                table = StaticTable(self.folder)
            except ModuleNotFoundError as exc:
                raise (missing_extra(exc) or exc) from None
            except Exception as exc:  # noqa: BLE001 - any unreadable file of the folder is the same refusal
                raise _unreadable(self._given, exc) from None
            if table.dim != self.dimension:  # the weights were replaced since `open`: another kind of vector
                raise _unreadable(self._given, ValueError(f"{table.dim} dimensions, {self.dimension} when opened"))
            self._table = table
        return self


def _unreadable(folder: str, exc: Exception) -> EmbedderFault:
    """EMBEDDER_ERROR naming the file of the model that is not right, what is wrong with it in
    one line (no library's exception name), and how to get the model again."""
    from .static import ModelFileError

    if isinstance(exc, ModelFileError):
        what, file = f"its {exc.file} {exc.why}", exc.file
    elif isinstance(exc, OSError):
        what, file = f"{exc.filename or 'a file'} could not be read ({exc.strerror or exc})", exc.filename
    else:
        what, file = str(exc) or type(exc).__name__, None
    what = " ".join(what.split())[:400]
    return EmbedderFault(f"the model2vec model '{folder}' could not be read: {what}; fetch it again with `{PULL_HINT}` "
                         f"(or the hub id it came from), or copy its folder ({', '.join(MODEL_FILES)}) whole from a machine where it "
                         "works", provider="model2vec", model=folder,
                         **({"file": os.path.basename(file)} if file else {}))


def files_hash(folder: str, memo: Path | None = None) -> str:
    """The model's identity: its files' bytes (weights, tokenizer, config), so a model replaced
    in the same folder is a new kind of vector, never mixed with the old one's. With `memo`, a
    hash taken earlier is used while every file has the size, modification and change times,
    inode and device it had then (the stat is taken before the bytes are read, so a file
    written meanwhile is hashed again next time)."""
    stats = [_stat(os.path.join(folder, name)) for name in MODEL_FILES]
    known = read_json(memo).get(folder) if memo is not None else None
    if isinstance(known, dict) and known.get("stats") == stats and isinstance(known.get("hash"), str):
        return known["hash"]
    digest = hashlib.sha256()
    for name in MODEL_FILES:
        with open(os.path.join(folder, name), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):  # noqa: B023 - read at once, in this loop
                digest.update(block)
        digest.update(b"\0")
    if memo is not None:
        write_json(memo, read_json(memo) | {folder: {"stats": stats, "hash": digest.hexdigest()}})
    return digest.hexdigest()


def _stat(path: str) -> list[int]:
    found = os.stat(path)
    return [found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino, found.st_dev]

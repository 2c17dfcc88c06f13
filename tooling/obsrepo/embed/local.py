"""`model2vec:<dir>`: static embeddings from a local folder, through the model2vec library.

A static model is a table of token vectors: a text's vector is the mean of its tokens' rows,
so encoding needs numpy and a tokenizer, no GPU and no network. The folder is the library's own
layout (config.json, tokenizer.json, model.safetensors); the library is never handed a name it
could look up on the Hugging Face hub, so nothing downloads here (`obsrepo embed pull` does).
"""

from __future__ import annotations

import hashlib
import os
from array import array
from collections.abc import Sequence
from typing import Any

from ..errors import EmbedderFault, missing_extra
from . import Vector, fingerprint_of

MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
PULL_HINT = "obsrepo embed pull minishlab/potion-base-8M"


class Model2Vec:
    provider = "model2vec"

    def __init__(self, folder: str, model: Any, weights_hash: str) -> None:
        self.folder = folder
        self._model = model
        self.dimension = int(model.dim)
        identity = {"provider": self.provider, "weights": weights_hash, "dimension": self.dimension}
        self.fingerprint = fingerprint_of(identity)

    @staticmethod
    def open(folder: str) -> Model2Vec:
        """Load the model in `folder`; a folder that is missing, incomplete or unreadable is
        EMBEDDER_ERROR (exit 4) naming the command that fetches one."""
        path = os.path.abspath(os.path.expanduser(folder))
        absent = [name for name in MODEL_FILES if not os.path.isfile(os.path.join(path, name))]
        if absent:
            where = "is not a folder" if not os.path.isdir(path) else f"lacks {', '.join(absent)}"
            raise EmbedderFault(f"the model2vec model '{folder}' {where}: fetch one with `{PULL_HINT}` "
                                f"(or another model2vec model's hub id)", provider="model2vec", model=folder)
        try:
            from model2vec import StaticModel
        except ModuleNotFoundError as exc:
            raise (missing_extra(exc) or exc) from None
        try:
            model = StaticModel.from_pretrained(path, force_download=False)
        except Exception as exc:  # noqa: BLE001 - any unreadable file of the folder is the same refusal
            raise EmbedderFault(f"the model2vec model '{folder}' could not be read ({type(exc).__name__}: {exc}); "
                                f"fetch it again with `{PULL_HINT}`", provider="model2vec", model=folder) from None
        return Model2Vec(path, model, _files_hash(path))

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        matrix = self._model.encode(list(texts), show_progress_bar=False, use_multiprocessing=False)
        rows = matrix.astype("float32", copy=False)
        return [array("f", row.tobytes()) for row in rows]


def _files_hash(folder: str) -> str:
    """The model's identity: its files' bytes (weights, tokenizer, config), so a model replaced
    in the same folder is a new kind of vector, never mixed with the old one's."""
    digest = hashlib.sha256()
    for name in MODEL_FILES:
        with open(os.path.join(folder, name), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):  # noqa: B023 - read at once, in this loop
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()

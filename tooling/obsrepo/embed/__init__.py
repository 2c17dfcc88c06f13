"""Embedding providers behind one protocol (docs/design.md §15): text in, float32 vectors out.

    model2vec:<dir>   static embeddings from a local folder (the `semantic` extra)
    openai:<model>    any OpenAI-compatible `/v1/embeddings` (OpenAI, vLLM, llama.cpp, LM Studio)
    ollama:<model>    Ollama's `/api/embed`

This layer knows nothing of documents or the index: it turns texts into vectors and names the
vectors' kind with a fingerprint, so that vectors of two models, or of two sizes of one model,
are never mixed. Nothing here downloads (`obsrepo embed pull` is the one command that may).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

Vector = array  # array('f'): float32, the stdlib's, so remote providers need no numpy

EMBEDDER_ENV = "OBSREPO_EMBEDDER"
URL_ENV = "OBSREPO_EMBEDDER_URL"
KEY_ENV_ENV = "OBSREPO_EMBEDDER_KEY_ENV"
TIMEOUT_ENV = "OBSREPO_EMBEDDER_TIMEOUT"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
PROVIDERS = ("none", "model2vec", "openai", "ollama")
# Loading a local model (numpy, the tokenizer, the token table: ~0.13 s of a process) costs far
# more than embedding a few texts. An update of the index that brings at most this many texts
# without vectors, in a process that has not loaded the model, leaves them pending for the next
# larger update; a query ranking by meaning, which loads the model for its own text, embeds them
# meanwhile, so every answer is what it would be with the vectors in the index (docs/recall.md)
DEFERRED_TEXTS = 64


class Embedder(Protocol):
    """What every provider offers. `fingerprint` names the kind of vector (provider, model
    identity, dimensions): equal fingerprints give equal vectors for equal texts."""

    @property
    def provider(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def deferrable(embedder: Any) -> bool:
    """Whether texts may wait for a later update: a local model not loaded in this process (a
    remote provider has nothing to load; a loaded model embeds a few texts in a millisecond)."""
    return bool(getattr(embedder, "local", False)) and not getattr(embedder, "loaded", True)


def configured(spec: str | None, field: str, environ: Mapping[str, str] | None = None) -> Embedder | None:
    """The embedder of `spec` (else OBSREPO_EMBEDDER), None for `none` or nothing set. An
    unknown provider or an empty model is VALIDATION_ERROR naming `field` (the environment
    variable when the spec came from there); a local model that is not there is EMBEDDER_ERROR
    naming `obsrepo embed pull`."""
    from .choice import embedder_of

    env = os.environ if environ is None else environ
    if spec is None:
        spec, field = env.get(EMBEDDER_ENV), EMBEDDER_ENV
    if spec is None:
        return None
    return embedder_of(spec, field, env)


FLOAT32_MAX = 3.4028234663852886e38


def float32_vector(values: Sequence[Any]) -> Vector:
    """`values` as a float32 vector, or ValueError saying why not (docs/design.md §8b): each a
    real number (not a boolean) that is finite in float32 (`1e39` is not), and the vector's
    length (its norm, which the cache keeps in float32) finite there too, so that no cosine
    computed from it is ever NaN."""
    if not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        raise ValueError("holds something that is not a number")
    try:
        vector = array("f", [float(value) for value in values])
    except OverflowError:  # an integer beyond any float
        raise ValueError("holds a number beyond float32's range (±3.4e38)") from None
    if not all(math.isfinite(value) for value in vector):
        raise ValueError("holds a number that is not finite as float32 (beyond ±3.4e38, or NaN or infinity)")
    if math.hypot(*vector) > FLOAT32_MAX:
        raise ValueError("has a length (norm) beyond float32's range (±3.4e38)")
    return vector


def fingerprint_of(identity: dict[str, Any]) -> str:
    """A folder-safe name for a kind of vector: the provider, then a hash of what makes its
    vectors what they are."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()
    return f"{identity['provider']}-{digest[:24]}"


__all__ = ["DEFAULT_KEY_ENV", "DEFERRED_TEXTS", "EMBEDDER_ENV", "Embedder", "KEY_ENV_ENV", "PROVIDERS", "TIMEOUT_ENV", "URL_ENV", "Vector",
           "configured", "deferrable", "fingerprint_of", "float32_vector"]

"""`openai:<model>` and `ollama:<model>`: vectors from an embedding server over HTTP.

The two APIs differ only in the path and the shape of the answer, so one client serves both:
texts go in batches capped by count and by bytes (a server refuses a body or a batch too big,
and one huge request is one long wait), each text cut to `MAX_TEXT_BYTES` (servers refuse an
input longer than their model's context). Every failure is EMBEDDER_ERROR with a message that
says what the server did; the key is sent as `Authorization: Bearer` and never appears in a
message, even when a server echoes it back.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import EmbedderFault
from . import Vector, fingerprint_of

BATCH_TEXTS = 128
BATCH_BYTES = 256 * 1024
MAX_TEXT_BYTES = 8 * 1024
PROBE_TEXT = "obsrepo"
PATHS = {"openai": "/embeddings", "ollama": "/api/embed"}


class Remote:
    def __init__(self, provider: str, model: str, *, url: str, key: str | None, key_env: str, timeout: float,
                 dimension: int | None = None) -> None:
        self.provider = provider
        self.model = model
        self.url = url
        self.endpoint = url + PATHS[provider]
        self.key_env = key_env
        self.timeout = timeout
        self._key = key
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """The server's vector size: asked once (one short text) when not known beforehand."""
        if self._dimension is None:
            self._dimension = len(self._post([PROBE_TEXT])[0])
        return self._dimension

    def assume_dimension(self, dimension: int) -> None:
        """Take the size a former run learned (the vector cache keeps it), so that knowing the
        fingerprint costs no request; a server that answers another size is still refused."""
        if self._dimension is None:
            self._dimension = dimension

    @property
    def known_dimension(self) -> int | None:
        return self._dimension

    @property
    def fingerprint(self) -> str:
        identity = {"provider": self.provider, "model": self.model, "dimension": self.dimension,
                    "max_text_bytes": MAX_TEXT_BYTES}
        return fingerprint_of(identity)

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = []
        for batch in batches([cut(text) for text in texts]):
            for vector in self._post(batch):
                if self._dimension is None:
                    self._dimension = len(vector)
                if len(vector) != self._dimension:
                    raise self._fault(f"answered a vector of {len(vector)} dimensions where {self._dimension} were expected")
                vectors.append(vector)
        return vectors

    def _post(self, texts: list[str]) -> list[Vector]:
        body = json.dumps({"model": self.model, "input": texts} | ({"encoding_format": "float"} if self.provider == "openai" else {}))
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "obsrepo"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.endpoint, data=body.encode("utf-8"), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise self._refused(exc) from None
        except TimeoutError:
            raise self._fault(f"did not answer within {self.timeout:g} s (OBSREPO_EMBEDDER_TIMEOUT)") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise self._fault(f"did not answer within {self.timeout:g} s (OBSREPO_EMBEDDER_TIMEOUT)") from None
            raise self._fault(f"could not be reached ({reason})") from None
        return self._vectors(raw, len(texts))

    def _vectors(self, raw: bytes, expected: int) -> list[Vector]:
        try:
            answer = json.loads(raw)
            rows = _rows(self.provider, answer)
        except (ValueError, TypeError, KeyError) as exc:
            why = _scrub(str(exc), self._key)
            raise self._fault(f"answered something that is not the {self.provider} embeddings JSON ({why})") from None
        if len(rows) != expected:
            raise self._fault(f"answered {len(rows)} vectors for {expected} texts")
        vectors = []
        for row in rows:
            if not isinstance(row, list) or not row or not all(_finite(value) for value in row):
                raise self._fault("answered a vector that is not a non-empty list of finite numbers")
            vectors.append(array("f", row))
        return vectors

    def _refused(self, exc: urllib.error.HTTPError) -> EmbedderFault:
        try:
            detail = exc.read(300).decode("utf-8", "replace").strip()
        except OSError:
            detail = ""
        why = {429: "refused for too many requests (rate limit); try again later",
               401: f"refused the key (check the variable {self.key_env})",
               403: f"refused the key (check the variable {self.key_env})",
               404: f"does not know the model or the path (is '{self.model}' served there?)"}.get(exc.code)
        if why is None:
            why = "failed" if exc.code >= 500 else "refused the request"
        tail = f": {_scrub(detail, self._key)}" if detail else ""
        return self._fault(f"{why} (HTTP {exc.code}){tail}", status=exc.code)

    def _fault(self, what: str, **details: Any) -> EmbedderFault:
        return EmbedderFault(f"the {self.provider} embedding server at {self.endpoint} {what}", provider=self.provider,
                             model=self.model, url=self.endpoint, **details)


def _rows(provider: str, answer: Any) -> list[Any]:
    if provider == "ollama":
        rows = answer["embeddings"]
        if not isinstance(rows, list):
            raise TypeError("'embeddings' is not a list")
        return rows
    data = answer["data"]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise TypeError("'data' is not a list of objects")
    return [item["embedding"] for item in sorted(data, key=lambda item: int(item.get("index", 0)))]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _scrub(text: str, key: str | None) -> str:
    """A server's words without the key, should it repeat what it was sent."""
    return text.replace(key, "***") if key else text


def cut(text: str) -> str:
    """`text` within MAX_TEXT_BYTES of UTF-8, cut at a character boundary."""
    data = text.encode("utf-8")
    return text if len(data) <= MAX_TEXT_BYTES else data[:MAX_TEXT_BYTES].decode("utf-8", "ignore")


def batches(texts: list[str]) -> Iterator[list[str]]:
    """Consecutive runs of at most BATCH_TEXTS texts and BATCH_BYTES bytes (one text alone when
    it is bigger: texts are already cut far below the cap)."""
    batch: list[str] = []
    size = 0
    for text in texts:
        length = len(text.encode("utf-8"))
        if batch and (len(batch) == BATCH_TEXTS or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += length
    if batch:
        yield batch

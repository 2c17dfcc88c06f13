"""`openai:<model>` and `ollama:<model>`: vectors from an embedding server over HTTP.

The two APIs differ only in the path and the shape of the answer, so one client serves both:
texts go in batches capped by count and by bytes (a server refuses a body or a batch too big,
and one huge request is one long wait), each text cut to `MAX_TEXT_BYTES` (servers refuse an
input longer than their model's context). Every failure is EMBEDDER_ERROR with a message that
says what the server did; the key is sent as `Authorization: Bearer` to the configured origin
only (a redirect is refused, never followed: embed/transport.py) and never appears in a
message, even when a server echoes it back. An answer is taken only whole and of the expected
shape: within the timeout (the whole request), 64 MiB and 32 levels of JSON, each vector
finite in float32 (docs/design.md §8b).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import EmbedderFault
from . import URL_ENV, Vector, fingerprint_of, float32_vector
from .transport import MAX_BODY, Reply, TimedOut, TooLarge, Unreachable, post

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
        """The server's vector size. Indexing, querying and `status` never ask for it before
        it is known (from a former run, or the first vectors: §8b); only `embed info` without a
        text, which asks to see the server answer, sends one short text for it."""
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
        try:
            reply = post(self.endpoint, body.encode("utf-8"), headers, self.timeout)
        except TimedOut:
            raise self._fault(f"did not answer within {self.timeout:g} s (OBSREPO_EMBEDDER_TIMEOUT)") from None
        except TooLarge:
            raise self._fault(f"answered more than {MAX_BODY // (1024 * 1024)} MiB") from None
        except Unreachable as exc:
            raise self._fault(f"could not be reached ({_scrub(str(exc), self._key)})") from None
        if 300 <= reply.status < 400:
            raise self._redirected(reply)
        if reply.status >= 400:
            raise self._refused(reply)
        if not 200 <= reply.status < 300:
            raise self._fault(f"answered HTTP {reply.status}", status=reply.status)
        return self._vectors(reply.body, len(texts))

    def _vectors(self, raw: bytes, expected: int) -> list[Vector]:
        if too_deep(raw, MAX_DEPTH):
            raise self._fault(f"answered JSON nested deeper than {MAX_DEPTH} levels, not the {self.provider} embeddings JSON")
        try:
            rows = _rows(self.provider, json.loads(raw))
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as exc:
            why = _scrub(_one_line(str(exc)), self._key)
            raise self._fault(f"answered something that is not the {self.provider} embeddings JSON ({why})") from None
        if len(rows) != expected:
            raise self._fault(f"answered {len(rows)} vectors for {expected} texts")
        vectors = []
        for row in rows:
            if not isinstance(row, list) or not row:
                raise self._fault("answered a vector that is not a non-empty list of numbers")
            try:
                vectors.append(float32_vector(row))
            except ValueError as exc:  # §8b: refused, never cached
                raise self._fault(f"answered a vector that {exc}") from None
        return vectors

    def _redirected(self, reply: Reply) -> EmbedderFault:
        """§8b: a redirect is never followed, so the key goes only to the configured origin."""
        target = _origin(urllib.parse.urljoin(self.endpoint, reply.location)) if reply.location else None
        where = f" to {target}" if target else ""
        return self._fault(f"redirected the request (HTTP {reply.status}){where}; obsrepo follows no redirect, so that the "
                           f"key goes only to the configured server: set {URL_ENV} to the address that answers",
                           status=reply.status, location=target)

    def _refused(self, reply: Reply) -> EmbedderFault:
        detail = _one_line(reply.body.decode("utf-8", "replace"))
        why = {429: "refused for too many requests (rate limit); try again later",
               401: f"refused the key (check the variable {self.key_env})",
               403: f"refused the key (check the variable {self.key_env})",
               404: f"does not know the model or the path (is '{self.model}' served there?)"}.get(reply.status)
        if why is None:
            why = "failed" if reply.status >= 500 else "refused the request"
        tail = f": {_scrub(detail, self._key)}" if detail else ""
        return self._fault(f"{why} (HTTP {reply.status}){tail}", status=reply.status)

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


MAX_DEPTH = 32  # §8b: the embeddings JSON is 4 levels deep; anything far deeper is not it
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_OPENERS = (ord("["), ord("{"))


def too_deep(raw: bytes, levels: int) -> bool:
    """Whether the JSON `raw` nests arrays and objects deeper than `levels` (Python's parser
    recurses once per level: a deep enough answer would exhaust its stack), counted over the
    brackets outside strings. The embeddings JSON has a few hundred of them; a hostile answer
    of 64 MiB of brackets costs about two seconds."""
    depth = 0
    for byte in _STRING.sub(b"", raw).translate(None, _NOT_BRACKET):
        if byte in _OPENERS:
            depth += 1
            if depth > levels:
                return True
        else:
            depth -= 1
    return False


def _origin(url: str) -> str | None:
    """scheme://host[:port] of `url` (no path, no user information), None when it has no host."""
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or parts.scheme not in ("http", "https"):
        return None
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _one_line(text: str) -> str:
    """A server's or a library's words as one line of at most 300 characters."""
    return " ".join(text.split())[:300]


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

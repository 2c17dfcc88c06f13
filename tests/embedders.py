"""Embedders for tests, real and offline: a tiny model2vec model written file by file, and a
loopback server speaking OpenAI's `/v1/embeddings` and Ollama's `/api/embed`.

    folder = write_model(tmp_path / "model")        # config.json, tokenizer.json, model.safetensors
    with EmbeddingServer() as server:               # http://127.0.0.1:<port>
        env = server.env("openai:toy")              # OBSREPO_EMBEDDER, OBSREPO_EMBEDDER_URL
        ...
        server.texts                                # every text it embedded, in order

Both embed with the same hand-made vectors: synonyms share a direction (invoice/bill, paid/
settled, shipment/parcel, late/delayed), so "bill settled" lies where "invoice paid" does and
far from "parcel late". Nothing here imports the product.
"""

from __future__ import annotations

import json
import math
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DIRECTIONS = {"invoice": 0, "bill": 0, "paid": 1, "settled": 1, "shipment": 2, "parcel": 2, "late": 3, "delayed": 3}
DIMENSION = 5  # the fifth axis holds the words of no concept
VOCABULARY = ["[UNK]", "[PAD]", *DIRECTIONS, "acme", "the", "was", "signed"]


def word_vector(word: str, scale: float = 1.0) -> list[float]:
    vector = [0.0] * DIMENSION
    vector[DIRECTIONS.get(word, DIMENSION - 1)] = scale
    return vector


def toy_vector(text: str) -> list[float]:
    """The mean of the known words' vectors (as a static model computes it), normalized."""
    words = [w for w in text.lower().split() if w in VOCABULARY[2:]]
    total = [sum(word_vector(w)[i] for w in words) for i in range(DIMENSION)]
    norm = math.sqrt(sum(v * v for v in total)) or 1.0
    return [v / norm for v in total]


def cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0


def write_model(folder: Path, scale: float = 1.0) -> Path:
    """A model2vec model in the library's layout: a word-level tokenizer (lowercase, split on
    white space and punctuation) and one float32 row per token, written as safetensors."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate(VOCABULARY)}
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                 "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "Whitespace"},
                 "post_processor": None, "decoder": None,
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}}
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"normalize": True, "hidden_dim": DIMENSION}), encoding="utf-8")
    rows = [[0.0] * DIMENSION if token.startswith("[") else word_vector(token, scale) for token in VOCABULARY]
    data = b"".join(struct.pack(f"<{DIMENSION}f", *row) for row in rows)
    header = json.dumps({"embeddings": {"dtype": "F32", "shape": [len(rows), DIMENSION], "data_offsets": [0, len(data)]}})
    header_bytes = header.encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header_bytes)) + header_bytes + data)
    return folder


LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def write_wordpiece_model(folder: Path, *, tokens: int = 30_000, dimension: int = 256, config: dict | None = None,
                          dtype: str = "F32", quantized: int = 0, seed: int = 7) -> Path:
    """potion-base-8M's shape with random rows: a WordPiece vocabulary of letters, pairs and
    triples (with and without `##`); `quantized`: that many rows, a token mapping and weights."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", *LETTERS, *(a + b for a in LETTERS for b in LETTERS)]
    vocab += [f"##{t}" for t in vocab[2:]]
    triples = (a + b + c for a in LETTERS for b in LETTERS for c in LETTERS)
    while len(vocab) < tokens:
        vocab.append(next(triples))
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                 "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                "strip_accents": None, "lowercase": True},
                 "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": None, "decoder": None,
                 "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                           "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}}}
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    settings = {"normalize": True} if config is None else config
    (folder / "config.json").write_text(json.dumps({"hidden_dim": dimension, **settings}), encoding="utf-8")
    import numpy as np

    rng = np.random.default_rng(seed)
    numpy_type = {"F32": "<f4", "F16": "<f2"}[dtype]
    tensors = {"embeddings": rng.standard_normal((quantized or len(vocab), dimension), dtype=np.float32).astype(numpy_type)}
    tensors["embeddings"][0] = 0.0  # [PAD]
    if quantized:
        tensors["mapping"] = rng.integers(0, quantized, len(vocab)).astype("<i8")
        tensors["weights"] = rng.uniform(0.1, 2.0, len(vocab)).astype("<f4")
    write_safetensors(folder / "model.safetensors", tensors)
    return folder


def write_safetensors(path: Path, tensors: dict[str, Any]) -> None:
    names = {"<f4": "F32", "<f2": "F16", "<i8": "I64"}
    header, data, at = {}, b"", 0
    for name, array in tensors.items():
        raw = array.tobytes()
        header[name] = {"dtype": names[array.dtype.str], "shape": list(array.shape), "data_offsets": [at, at + len(raw)]}
        data, at = data + raw, at + len(raw)
    encoded = json.dumps(header).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


class EmbeddingServer:
    """A loopback embedding server. `mode` decides its next answers: "ok", "429", "503",
    "401-echo" (refuses, repeating the Authorization header it got), "malformed", "wrong-dimension",
    "slow" (answers after `delay` seconds). With `hold_after` set, a request that comes once that
    many texts were embedded waits for `release` (then answers 503): its client stays blocked
    for as long as a test needs."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"
        self.delay = 3.0
        self.hold_after: int | None = None
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.answer(self, json.loads(body))

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._http.shutdown()
        self._http.server_close()

    def env(self, embedder: str) -> dict[str, str]:
        url = self.origin if embedder.startswith("ollama:") else self.origin + "/v1"
        return {"OBSREPO_EMBEDDER": embedder, "OBSREPO_EMBEDDER_URL": url}

    def answer(self, handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        self.requests.append({"path": handler.path, "model": request.get("model"), "texts": texts,
                              "authorization": handler.headers.get("Authorization")})
        if self.hold_after is not None and len(self.texts) >= self.hold_after:
            self.release.wait(60)
            return self._send(handler, 503, b'{"error": {"message": "held"}}')
        if self.mode in ("429", "503"):
            return self._send(handler, int(self.mode), b'{"error": {"message": "busy"}}')
        if self.mode == "401-echo":
            echoed = json.dumps({"error": f"bad key: {handler.headers.get('Authorization')}"})
            return self._send(handler, 401, echoed.encode())
        if self.mode == "malformed":
            return self._send(handler, 200, b'{"data": [ {"embedding": [0.1, ')
        if self.mode == "slow":
            time.sleep(self.delay)
        self.texts.extend(texts)
        vectors = [toy_vector(text) + ([0.5] if self.mode == "wrong-dimension" and i else []) for i, text in enumerate(texts)]
        if handler.path == "/api/embed":
            payload = {"model": request.get("model"), "embeddings": vectors}
        else:  # OpenAI's shape, answered out of order: the client sorts by index
            payload = {"object": "list", "model": request.get("model"),
                       "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in reversed(list(enumerate(vectors)))]}
        self._send(handler, 200, json.dumps(payload).encode())

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        try:
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting ("slow")
            pass



class ScriptedServer:
    """A loopback HTTP server that answers every request with `script(handler)`, a function
    writing whatever it likes to `handler.wfile` (a redirect, a trickle, a hostile body).
    `requests` records each request it received: path, headers (a dict) and body."""

    def __init__(self, script: Any = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script = script
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                try:
                    server.script(self)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass
                self.close_connection = True

            do_GET = do_POST  # noqa: N815 - a redirected POST may come back as a GET

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    def env(self, embedder: str = "openai:m") -> dict[str, str]:
        return {"OBSREPO_EMBEDDER": embedder, "OBSREPO_EMBEDDER_URL": self.origin + "/v1"}


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    """Send `body` with `status` and `headers` (underscores for dashes) to `handler`'s client."""
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


def openai_answer(vectors: list[list[Any]]) -> bytes:
    """OpenAI's embeddings JSON for `vectors` (numbers written as given: `1e39` stays `1e39`)."""
    rows = ", ".join(f'{{"object": "embedding", "index": {i}, "embedding": [{", ".join(map(str, v))}]}}'
                     for i, v in enumerate(vectors))
    return f'{{"object": "list", "data": [{rows}]}}'.encode()

"""A model2vec static model read from its folder without the model2vec library.

The library's import (its Hugging Face hub client above all) costs more than half a second per
process, which a command-line query or an `index` after a small commit pays whole for a handful
of texts (docs/recall.md, "What it costs"). A static model needs far less: the tokenizer
(the `tokenizers` library, tens of milliseconds), the token table (safetensors: a JSON header
and raw little-endian arrays, mapped, so only the rows a text uses are read) and the config.
`encode` repeats `StaticModel.encode` of model2vec step by step (character cut, token
truncation, no special tokens, the unknown token dropped, the optional token mapping and
weights, the mean, the optional normalization), so its vectors are the library's
(tests/test_static_model.py compares them).
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

DEFAULT_MAX_LENGTH = 512  # the library's, when the config names none
ROW_TYPES = ("F64", "F32", "F16", "I8")  # what a token table may be (I8: a quantized model's rows)
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1"}


class ModelFileError(ValueError):
    """One file of a model's folder is not what a static model needs: `file` names it."""

    def __init__(self, file: str, why: str) -> None:
        super().__init__(why)
        self.file = file
        self.why = why


class StaticTable:
    """A static model: `encode(texts)` is a float matrix, a row per text (the mean of its
    tokens' rows), as model2vec's `StaticModel.encode(texts)` returns it."""

    def __init__(self, folder: str) -> None:
        from tokenizers import Tokenizer

        config = _config(f"{folder}/config.json")
        try:
            tensors = read_safetensors(f"{folder}/model.safetensors")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelFileError("model.safetensors", str(exc)) from None
        try:
            self.tokenizer = Tokenizer.from_file(f"{folder}/tokenizer.json")
        except Exception as exc:  # noqa: BLE001 - the tokenizers library's errors are plain Exceptions
            raise ModelFileError("tokenizer.json", f"is not a tokenizer the tokenizers library reads ({exc})") from None
        self.tokens = self.tokenizer.get_vocab_size()  # the vocabulary's size, without making it (a dict)
        self.embedding, self.mapping, self.weights = _tensors(tensors, self.tokens)
        self._median_token_length: int | None = None
        self.unknown = _unknown_token_id(self.tokenizer)
        self.normalize = bool(config.get("normalize", False))
        self.max_length = config.get("max_length", DEFAULT_MAX_LENGTH)
        if self.max_length is not None and (not isinstance(self.max_length, int) or isinstance(self.max_length, bool)
                                            or self.max_length < 1):
            raise ModelFileError("config.json", f"gives max_length {self.max_length!r}, not a positive whole number")
        padding = self.tokenizer.padding
        if padding is not None:  # no padding, its token kept (as the library sets it)
            self.tokenizer.enable_padding(pad_id=padding["pad_id"], pad_token=padding["pad_token"],
                                          pad_type_id=padding["pad_type_id"], length=0)
        if self.max_length is None:
            self.tokenizer.no_truncation()
        else:
            self.tokenizer.enable_truncation(self.max_length)

    @property
    def dim(self) -> int:
        return int(self.embedding.shape[1])

    @property
    def median_token_length(self) -> int:
        """The median of the tokens' lengths (the library cuts a text at `max_length` times it),
        made when first needed: the vocabulary as a dict costs more than the rest of the load."""
        if self._median_token_length is None:
            import numpy as np

            self._median_token_length = int(np.median([len(token) for token in self.tokenizer.get_vocab()]))
        return self._median_token_length

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        # a vocabulary of 3 tokens or more has a median length of 1 or more (one token at most is
        # empty): a text of at most `max_length` characters is then never cut
        if self.max_length is not None and (self.tokens < 3 or any(len(text) > self.max_length for text in texts)):
            cut = self.max_length * self.median_token_length
            texts = [text[:cut] for text in texts]
        encodings = self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        ids = [[t for t in e.ids if t != self.unknown] if self.unknown is not None else e.ids for e in encodings]
        dtype = np.dtype(np.float32) if self.embedding.dtype == np.int8 else self.embedding.dtype
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        if self.mapping is None and self.weights is None:
            by_length: dict[int, list[int]] = defaultdict(list)  # texts of one length in one gather
            for i, tokens in enumerate(ids):
                if tokens:
                    by_length[len(tokens)].append(i)
            for rows in by_length.values():
                out[rows] = self.embedding[np.array([ids[i] for i in rows], dtype=np.int64)].mean(axis=1)
        else:
            for i, tokens in enumerate(ids):
                if tokens:
                    rows = self.embedding[tokens if self.mapping is None else self.mapping[tokens]]
                    out[i] = (rows if self.weights is None else rows * self.weights[tokens][:, None]).mean(axis=0)
        if self.normalize:
            out32 = out.astype(np.float32)
            return (out32 / (np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32)).astype(out.dtype)
        return out


def _config(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ModelFileError("config.json", f"is not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ModelFileError("config.json", "is not a JSON object")
    return config


def _tensors(tensors: dict[str, Any], tokens: int) -> tuple[Any, Any, Any]:
    """(embeddings, mapping, weights) of a static model, each checked against the vocabulary
    (docs/design.md §8b: a tensor missing, of the wrong dtype or shape is refused here, not met
    as an index out of bounds by the first text): a matrix of rows (float, or int8 when
    quantized), a row per token unless a `mapping` (integers, one per token, each a row) says
    which; `weights` (floats, one per token)."""
    import numpy as np

    def refused(why: str) -> ModelFileError:
        return ModelFileError("model.safetensors", why)

    embedding, mapping, weights = tensors.get("embeddings"), tensors.get("mapping"), tensors.get("weights")
    if embedding is None:
        raise refused("holds no 'embeddings' tensor")
    if embedding.ndim != 2 or 0 in embedding.shape:
        raise refused(f"holds 'embeddings' of shape {list(embedding.shape)}, not a matrix of rows")
    if embedding.dtype not in [np.dtype(DTYPES[name]) for name in ROW_TYPES]:
        raise refused(f"holds 'embeddings' of {embedding.dtype}, not {', '.join(ROW_TYPES)}")
    if mapping is None and len(embedding) != tokens:
        raise refused(f"holds {len(embedding)} rows of 'embeddings' for a vocabulary of {tokens} tokens")
    if mapping is not None:
        if mapping.dtype.kind not in "iu" or mapping.shape != (tokens,):
            raise refused(f"holds a 'mapping' of {mapping.dtype} {list(mapping.shape)}, not {tokens} integers (one per token)")
        if tokens and (int(mapping.min()) < 0 or int(mapping.max()) >= len(embedding)):
            raise refused(f"holds a 'mapping' naming rows beyond the {len(embedding)} of 'embeddings'")
    if weights is not None and (weights.dtype.kind != "f" or weights.shape != (tokens,)):
        raise refused(f"holds 'weights' of {weights.dtype} {list(weights.shape)}, not {tokens} numbers (one per token)")
    return embedding, mapping, weights


def read_safetensors(path: str) -> dict[str, Any]:
    """The tensors of a safetensors file, each a read-only array over the mapped file (only the
    rows a text uses are read): an 8-byte little-endian header length, the JSON header {name:
    {dtype, shape, data_offsets}}, then the data. A header that does not describe the file is
    ValueError."""
    import numpy as np

    header, length, size = _safetensors_header(path)
    data = np.memmap(path, dtype=np.uint8, mode="r")
    found = {}
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(tensor, dict) or not isinstance(tensor.get("shape"), list) \
                or not isinstance(tensor.get("data_offsets"), list) or len(tensor["data_offsets"]) != 2:
            raise ValueError(f"describes the tensor '{name}' without a shape and two data offsets")
        dtype = np.dtype(DTYPES[tensor["dtype"]]) if tensor.get("dtype") in DTYPES else None
        shape = [int(n) for n in tensor["shape"]]
        begin, end = (8 + length + int(n) for n in tensor["data_offsets"])
        if dtype is None or min(shape, default=0) < 0 or not 8 + length <= begin <= end <= size \
                or end - begin != math.prod(shape) * dtype.itemsize:
            raise ValueError(f"holds the tensor '{name}' ({tensor.get('dtype')}, {shape}) cut short or not as its header "
                             "describes it (a download that did not finish?)")
        found[name] = np.asarray(data[begin:end]).view(dtype).reshape(shape)
    return found


def embedding_dimension(path: str) -> int:
    """The dimensions of the 'embeddings' tensor of a safetensors file, from its header alone
    (nothing of the tensors is read): what naming a model's vectors needs before any text is
    embedded. A header that names no matrix of embeddings is ValueError."""
    header, _length, _size = _safetensors_header(path)
    tensor = header.get("embeddings")
    shape = tensor.get("shape") if isinstance(tensor, dict) else None
    if not isinstance(shape, list) or len(shape) != 2 or not all(isinstance(n, int) and n > 0 for n in shape):
        raise ModelFileError("model.safetensors", "holds no 'embeddings' matrix")
    return shape[1]


def _safetensors_header(path: str) -> tuple[dict[str, Any], int, int]:
    """The header of a safetensors file (an 8-byte little-endian length, then that much JSON),
    its length and the file's size."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        (length,) = struct.unpack("<Q", handle.read(8).ljust(8, b"\0"))
        if 8 + length > size:
            raise ModelFileError("model.safetensors", f"is cut short: its header says {length} bytes, the file has {size}")
        try:
            header = json.loads(handle.read(length).decode("utf-8"))
        except (ValueError, RecursionError):
            raise ModelFileError("model.safetensors", "does not start with a safetensors header (JSON)") from None
    if not isinstance(header, dict):
        raise ModelFileError("model.safetensors", "does not start with a safetensors header (a JSON object)")
    return header, length, size


def _unknown_token_id(tokenizer: Any) -> int | None:
    """The unknown token's id, dropped from every text (model2vec does so: a word-level model
    would otherwise average it in)."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):  # WordPiece, BPE, WordLevel
        return None if model.unk_token is None else tokenizer.token_to_id(model.unk_token)
    return json.loads(tokenizer.to_str())["model"].get("unk_id")  # Unigram

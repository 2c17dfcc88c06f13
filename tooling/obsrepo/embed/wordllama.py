"""A model2vec folder made from the weights the `wordllama` package ships (no network).

The `wordllama` wheel carries, for its `l2_supercat` model, a token table (`weights/
l2_supercat_<dims>.safetensors`, one float16 row per token of the Llama-2 tokenizer: the
token embeddings of several Llama-2-vocabulary models concatenated and trained down to
`<dims>` dimensions, MIT-licensed) and that tokenizer as a `tokenizers` JSON. WordLlama embeds a
text as the mean of its tokens' rows, normalized: exactly a model2vec static model's `encode`
with `normalize` on. So the conversion copies the tokenizer (no padding, no truncation, no
added special tokens at encoding: obsrepo's loader and the library encode without them), writes
the rows as float32 under the name `embeddings`, and a config saying `normalize: true`.
The source is the installed package's folder or a wheel file (a zip) of it.
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from typing import Any

PREFIX = "wordllama:"
MODELS = {"l2_supercat": "l2_supercat_tokenizer_config.json"}  # model name -> the tokenizer file it ships
MAX_LENGTH = 512


def parse(name: str) -> tuple[str, int]:
    """`l2_supercat_256` -> ("l2_supercat", 256); ValueError naming what is known otherwise."""
    model, _, dims = name.rpartition("_")
    if model not in MODELS or not dims.isdigit():
        raise ValueError(f"'{name}' is not a wordllama model this converts: "
                         + ", ".join(f"{m}_<dims> (e.g. {m}_256)" for m in MODELS))
    return model, int(dims)


def installed_package() -> str | None:
    """The installed `wordllama` package's folder, found without importing it (None: not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _reader(source: str) -> Any:
    """A function from a path inside the package (`weights/x.safetensors`) to its bytes."""
    if os.path.isfile(source):
        archive = zipfile.ZipFile(source)
        return lambda inner: archive.read(f"wordllama/{inner}")
    return lambda inner: open(os.path.join(source, inner), "rb").read()


def convert(source: str, name: str, folder: str) -> dict[str, Any]:
    """Write the model2vec folder of wordllama model `name` (e.g. `l2_supercat_256`) from
    `source` (the package's folder or its wheel) into `folder`: config.json, tokenizer.json,
    model.safetensors. Returns {name, tokens, dimension, sha256 of the source weights}.
    OSError/KeyError when the source lacks the files, ValueError for a bad name or table."""
    import hashlib

    import numpy as np

    model, dims = parse(name)
    read = _reader(source)
    weights = read(f"weights/{model}_{dims}.safetensors")
    tokenizer = json.loads(read(f"tokenizers/{MODELS[model]}"))
    table = _table(weights)
    tokenizer["padding"], tokenizer["truncation"] = None, None
    vocabulary = len(tokenizer["model"]["vocab"])
    if table.shape[0] != vocabulary or table.ndim != 2 or table.shape[1] != dims:
        raise ValueError(f"the weights of {name} are of shape {list(table.shape)}, not {vocabulary} × {dims}")
    os.makedirs(folder, exist_ok=True)
    rows = np.ascontiguousarray(table.astype("<f4"))
    _write_safetensors(os.path.join(folder, "model.safetensors"), {"embeddings": rows})
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as handle:
        json.dump(tokenizer, handle, ensure_ascii=False)
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": f"wordllama/{model}",
              "apply_pca": None, "apply_zipf": None, "hidden_dim": dims, "seq_length": 1000000,
              "normalize": True, "max_length": MAX_LENGTH,
              "source": f"wordllama {name}: token embeddings of the Llama-2 tokenizer's vocabulary (MIT)"}
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2, sort_keys=True)
    return {"name": name, "tokens": vocabulary, "dimension": dims, "source_sha256": hashlib.sha256(weights).hexdigest()}


def _table(data: bytes) -> Any:
    """The one matrix of a safetensors file's bytes (wordllama names it `embedding.weight`)."""
    import numpy as np

    from .static import DTYPES

    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    if len(tensors) != 1:
        raise ValueError(f"the weights hold {len(tensors)} tensors, not one table")
    (tensor,) = tensors.values()
    begin, end = tensor["data_offsets"]
    dtype = np.dtype(DTYPES[tensor["dtype"]])
    return np.frombuffer(data[8 + length + begin:8 + length + end], dtype=dtype).reshape(tensor["shape"])


def _write_safetensors(path: str, tensors: dict[str, Any]) -> None:
    """A safetensors file of float32 arrays: header length, JSON header, the data (8-aligned)."""
    header: dict[str, Any] = {}
    offset = 0
    for key, array in tensors.items():
        header[key] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)) + encoded)
        for array in tensors.values():
            handle.write(array.tobytes())
    os.replace(tmp, path)

"""The local provider reads a model2vec folder without the model2vec library (embed/static.py):
its vectors must be the library's own `StaticModel.encode`, text for text, on the tests' word
model and on a random model of potion-base-8M's shape (WordPiece, 30,000 tokens × 256), with
and without normalization, truncation, a token mapping with weights, and float16 rows."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import pytest
from embedders import LETTERS, write_model, write_wordpiece_model

pytestmark = pytest.mark.skipif(importlib.util.find_spec("model2vec") is None, reason="the semantic extra is not installed")

def texts() -> list[str]:
    rng = random.Random(11)
    made = ["", " ", "invoice paid", "Bill SETTLED!", "zzzz qqqq", "[UNK] [PAD]", "Ünïcödé café 日本語 🙂 ﬁ",
            "the parcel was late " * 400, "x" * 5000, "a\tb\nc\r\nd", "ab##cd ##ef", "\u200b\u00a0\ufeff"]
    alphabet = LETTERS + " .,;-'éß日🙂\n"
    made += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(150)]
    made += [" ".join(rng.choice(["invoice", "bill", "paid", "settled", "acme", "the", "zz"]) for _ in range(n))
             for n in range(0, 40)]
    return made


def assert_same_as_library(folder: Path) -> None:
    from model2vec import StaticModel
    from obsrepo.embed.local import Model2Vec

    given = texts()
    theirs = StaticModel.from_pretrained(str(folder), force_download=False).encode(given, use_multiprocessing=False)
    ours = np.array([np.frombuffer(v, dtype=np.float32) for v in Model2Vec.open(str(folder)).embed(given)])
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs.astype(np.float32)).max() <= 1e-6


def test_the_tests_word_model_encodes_as_the_library_does(tmp_path):
    assert_same_as_library(write_model(tmp_path / "words"))


@pytest.fixture(scope="module")
def potion(tmp_path_factory) -> Path:
    return write_wordpiece_model(tmp_path_factory.mktemp("potion") / "model")


@pytest.mark.parametrize("config", [{"normalize": True}, {"normalize": False, "max_length": 8}, {"max_length": None}])
def test_a_potion_shaped_model_encodes_as_the_library_does(potion, tmp_path, config):
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("tokenizer.json", "model.safetensors"):  # one model, its config changed
        (folder / name).hardlink_to(potion / name)
    (folder / "config.json").write_text(json.dumps({"hidden_dim": 256, **config}), encoding="utf-8")
    assert_same_as_library(folder)


def test_a_quantized_or_half_precision_model_encodes_as_the_library_does(tmp_path):
    assert_same_as_library(write_wordpiece_model(tmp_path / "mapped", tokens=3000, dimension=64, quantized=500,
                                                 config={"normalize": True}))
    assert_same_as_library(write_wordpiece_model(tmp_path / "half", tokens=3000, dimension=64, dtype="F16"))

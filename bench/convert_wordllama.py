#!/usr/bin/env python3
"""Convert the `wordllama` wheel's (or installed package's) weights into a model2vec folder.

    pip download wordllama --no-deps -d /tmp/wl
    python bench/convert_wordllama.py /tmp/wl/wordllama-*.whl OUT_FOLDER [--name l2_supercat_256]

The folder (config.json, tokenizer.json, model.safetensors) is what OBSREPO_EMBEDDER=model2vec:
OUT_FOLDER reads; `obsrepo embed pull wordllama:l2_supercat_256` makes the same folder from the
installed package. Without a source argument, the installed package is read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tooling"))
from obsrepo.embed import wordllama  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", nargs="?", help="a wordllama wheel or package folder (default: the installed one)")
    parser.add_argument("out")
    parser.add_argument("--name", default="l2_supercat_256")
    args = parser.parse_args()
    source = args.source or wordllama.installed_package()
    if source is None:
        parser.error("wordllama is not installed: give its wheel (pip download wordllama --no-deps)")
    print(json.dumps(wordllama.convert(source, args.name, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The JSON Schemas in `schemas/`, generated from the models (`python -m obsrepo.format.schemas`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from .model import Comprehension, Observation, json_schema

FILES: dict[str, type[BaseModel]] = {
    "observation.v1.schema.json": Observation,
    "comprehension.v1.schema.json": Comprehension,
}


def render() -> dict[str, str]:
    return {name: json.dumps(json_schema(model), indent=2, sort_keys=True) + "\n" for name, model in FILES.items()}


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (folder / name).write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    """`python -m obsrepo.format.schemas [FOLDER]`: write the schemas to FOLDER (default `schemas`)."""
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print("usage: python -m obsrepo.format.schemas [FOLDER]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    write(Path(argv[0] if argv else "schemas"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

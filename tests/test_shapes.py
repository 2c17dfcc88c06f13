"""The reads' answers are typed (ops/shapes.py): §9's generated list is the types' own, and real
answers of the command line and of the MCP tools validate against the JSON Schemas generated
from them, with no key the types leave out."""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, observation
from jsonschema import Draft202012Validator
from obsrepo.ops import OPERATIONS, Session
from obsrepo.ops.shapes import SHAPES, output_schema, shapes_markdown

ROOT = Path(__file__).resolve().parent.parent
ANSWERING_TOOLS = {"retrieve_entity_snapshot": "snapshot", "retrieve_entities": "entities",
                   "retrieve_entity_by_identifier": "find", "retrieve_field_intervals": "intervals",
                   "list_contested": "contested", "list_identity_candidates": "identities"}


@pytest.fixture(scope="module")
def demo(make_module_repo: Callable[..., Repo]) -> Repo:
    """The project's demo data, committed, and one observation more (so a field has a challenger)."""
    repo = make_module_repo()
    for folder in ("observations", "comprehension", "schemas/entities"):
        shutil.copytree(ROOT / folder, repo.path / folder)
    repo.commit("demo data")
    repo.add(observation("obs-20260601-090000-0001", entity="company/acme-corp", fields={"phone": "+44 1"}, priority=100,
                         source="agent:test", event="Acme's new phone"))
    repo.commit("acme's phone")
    return repo


def strict(shape: Any) -> dict[str, Any]:
    """The shape's schema with every object closed: a key the type does not name fails."""
    schema = copy.deepcopy(output_schema(shape))

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    Draft202012Validator.check_schema(schema)
    return schema


def valid(name: str, answer: Any) -> None:
    failures = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in
                Draft202012Validator(strict(SHAPES[name])).iter_errors(answer)]
    assert not failures, (name, failures[:5])


def test_the_generated_list_of_section_9_is_the_types_own() -> None:
    page = (ROOT / "docs/design/09-json.md").read_text("utf-8")
    generated = re.search(r"<!-- shapes: generated .*? -->\n(.*?)\n<!-- end of shapes -->", page, re.S)
    assert generated is not None
    assert generated.group(1) == shapes_markdown(), "run shapes_markdown() and paste its list into docs/design/09-json.md"
    assert set(SHAPES) <= set(OPERATIONS)


@pytest.mark.parametrize(("name", "args"), [
    ("query", ("query", "--limit", "20")),
    ("query", ("query", "--text", "invoice", "--limit", "5")),
    ("show", ("show", "obs-20260601-090000-0001")),
    ("snapshot", ("snapshot", "company/acme-corp", "--explain")),
    ("snapshot", ("snapshot", "company/acme-corp", "--as-of", "2026-05-01")),
    ("entities", ("entities", "--limit", "30")),
    ("find", ("find", "ACME corp")),
    ("intervals", ("intervals", "company/acme-corp")),
    ("contested", ("contested", "--window", "400d")),
    ("identities", ("identities", "--limit", "10")),
    ("status", ("status",)),
])
def test_the_command_lines_answers_are_of_their_shape(demo: Repo, name: str, args: tuple[str, ...]) -> None:
    done = demo.obsrepo(*args, *(() if name in ("intervals", "contested") else ("--format", "json")))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    valid(name, answer)
    if name == "contested":
        assert answer["contests"], "the demo data holds a contest within 400 days"


def test_the_tools_that_answer_with_an_operations_json_declare_its_schema(demo: Repo) -> None:
    from obsrepo.mcp.server import Service
    from obsrepo.mcp.tools import all_tools

    tools = all_tools()
    declared = {name for name, tool in tools.items() if tool.output_schema is not None}
    assert declared == set(ANSWERING_TOOLS)
    service = Service(Session(str(demo.path)), tools)
    arguments = {"retrieve_entity_snapshot": {"entity_id": "company/acme-corp", "explain": True},
                 "retrieve_entities": {"limit": 5}, "retrieve_entity_by_identifier": {"identifier": "ACME corp"},
                 "retrieve_field_intervals": {"entity_id": "company/acme-corp"}, "list_contested": {"window": "400d"},
                 "list_identity_candidates": {"limit": 3}}
    for tool, operation in ANSWERING_TOOLS.items():
        assert tools[tool].output_schema == output_schema(SHAPES[operation])
        text, structured, failed = service.answer(tool, arguments[tool])
        assert not failed, text
        Draft202012Validator(tools[tool].output_schema).validate(structured)
        valid(operation, structured)

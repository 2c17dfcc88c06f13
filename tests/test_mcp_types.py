"""What generic MCP clients need to send the right JSON (docs/design.md §8a), driven by the MCP
SDK's own client against a spawned `obsrepo mcp` over the project's demo data.

Every input-schema property has one JSON `type` or an `anyOf` of single-typed schemas, at every
depth (what `npx @modelcontextprotocol/inspector --cli … --method tools/list --strict` checks,
held here without Node). A correction of a number by the text "333" (what a client that
cannot tell the type sends) is refused with rule `type-change`; the number 333 is written as a
number. Date arguments take unix milliseconds as an integer or as digits.

The tools go through the door (docs/design.md §10): each input schema is generated from its
operation's request, so an argument says what the request field says (its description, its
bounds) under the tool's own name, and an error of the door, which names the request's field,
reaches the client naming the tool's argument.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from helpers import Repo
from obsrepo.mcp.tools import all_tools
from obsrepo.ops.fields import Field
from test_mcp import cli_json, demo, stdio_session
from test_mcp_write import BRANCH, Server, tip

SINGLE_TYPES = {"string", "number", "integer", "boolean", "null", "array", "object"}
BOUNDS = {"min_length": ("string", "minLength"), "max_length": ("string", "maxLength"), "pattern": ("string", "pattern"),
          "minimum": ("integer", "minimum"), "maximum": ("integer", "maximum"), "max_items": ("array", "maxItems"),
          "max_properties": ("object", "maxProperties")}


@pytest.fixture(scope="module")
def repo(make_module_repo: Callable[..., Repo]) -> Repo:
    return demo(make_module_repo)


@pytest.fixture(scope="module")
def server(repo: Repo) -> Iterator[Server]:
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(stdio_session(repo)) as session:
        yield Server(portal, session, BRANCH)


def untyped(schema: Any, where: str) -> list[str]:
    """The places in a property's schema, at any depth, without exactly one JSON type: each
    schema has one `type` string, or an `anyOf` (and no `type`) whose branches each have one."""
    if not isinstance(schema, dict):
        return [f"{where}: {schema!r} is no schema with a type"]
    if "anyOf" in schema:
        problems = [f"{where}: a type beside anyOf"] if "type" in schema else []
        for n, branch in enumerate(schema["anyOf"]):
            if isinstance(branch, dict) and "anyOf" in branch:
                problems.append(f"{where}.anyOf.{n}: an anyOf inside an anyOf")
            problems += untyped(branch, f"{where}.anyOf.{n}")
        return problems
    kind = schema.get("type")
    problems = [] if isinstance(kind, str) and kind in SINGLE_TYPES else [f"{where}: type {kind!r}"]
    for name, sub in schema.get("properties", {}).items():
        problems += untyped(sub, f"{where}.properties.{name}")
    for n, sub in enumerate(schema.get("prefixItems", ())):
        problems += untyped(sub, f"{where}.prefixItems.{n}")
    for key in ("items", "additionalProperties"):  # `additionalProperties: true/false` holds no schema
        if isinstance(schema.get(key), dict):
            problems += untyped(schema[key], f"{where}.{key}")
    return problems


def test_the_property_check_finds_what_the_inspector_warns_about() -> None:
    assert untyped({}, "value") and untyped({"type": ["string", "integer"]}, "afterDate")
    assert untyped({"type": "array", "items": {}}, "a") and untyped({"anyOf": [{"type": ["string", "null"]}]}, "b")
    assert untyped({"type": "object", "properties": {"x": {"description": "?"}}}, "c")
    assert not untyped({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}, "d")
    assert not untyped({"type": "array", "items": {"type": "string"}}, "e")


def test_every_tool_property_has_one_json_type_or_an_any_of_single_types(server: Server) -> None:
    tools = server.portal.call(server.session.list_tools).tools
    assert len(tools) >= 18
    problems = [f"{tool.name}: {problem}" for tool in tools
                for name, spec in tool.input_schema["properties"].items()
                for problem in untyped(spec, f"inputSchema.properties.{name}")]
    assert not problems, problems
    value = next(t for t in tools if t.name == "correct_field").input_schema["properties"]["value"]
    assert {branch["type"] for branch in value["anyOf"]} == SINGLE_TYPES


def _committed_fields(repo: Repo, result: dict[str, Any]) -> dict[str, Any]:
    text = repo.git("show", f"{result['commit']}:{result['path']}")
    return yaml.safe_load(text.removeprefix("---\n").split("\n---")[0])["fields"]


def test_correct_field_keeps_the_field_s_json_type(repo: Repo, server: Server) -> None:
    assert isinstance(cli_json(repo, "provenance", "company/acme-corp", "employee_count")["value"], int)
    proposed = tip(repo)
    refused = server.failure("correct_field", entity_id="company/acme-corp", field="employee_count", value="333",
                             reason="typed in the Inspector")
    assert refused["code"] == "VALIDATION_ERROR"
    assert [i["rule"] for i in refused["details"]["issues"]] == ["type-change"]
    assert "allow_type_change: true" in refused["message"] and "employee_count" in refused["message"]
    assert tip(repo) == proposed

    as_number = server.call("correct_field", entity_id="company/acme-corp", field="employee_count", value=333,
                            reason="the annual report")
    assert _committed_fields(repo, as_number) == {"employee_count": 333}
    assert "employee_count: 333" in repo.git("show", f"{as_number['commit']}:{as_number['path']}")
    cleared = server.call("correct_field", entity_id="company/acme-corp", field="employee_count", value=None,
                          reason="unknown")
    assert _committed_fields(repo, cleared) == {"employee_count": None}
    allowed = server.call("correct_field", entity_id="company/acme-corp", field="city", value=["Leeds", "York"],
                          reason="two sites", allow_type_change=True)
    assert _committed_fields(repo, allowed) == {"city": ["Leeds", "York"]}
    bad_flag = server.failure("correct_field", entity_id="company/acme-corp", field="city", value="Leeds",
                              reason="r", allow_type_change="yes")
    assert bad_flag["code"] == "VALIDATION_ERROR" and bad_flag["details"]["parameter"] == "allow_type_change"


def test_date_arguments_take_unix_milliseconds_as_integers_and_digits(repo: Repo, server: Server) -> None:
    ms = 1775001600000  # 2026-04-01T00:00:00Z
    query = [server.call("observation_query", mode="json", afterDate=when, limit=1000)
             for when in (ms, str(ms), "2026-04-01")]
    assert query[0] == query[1] == query[2] and 0 < query[0]["total"]
    timeline = [server.call("list_timeline_events", after=when, before=str(ms + 86_400_000 * 60))
                for when in (ms, str(ms))]
    assert timeline[0] == timeline[1] == cli_json(repo, "timeline", "--after", "2026-04-01",
                                                  "--before", "2026-05-31")
    assert timeline[0]["total"] > 0
    snapshots = [server.call("retrieve_entity_snapshot", entity_id="company/acme-corp", as_of=when)
                 for when in (ms, str(ms), "2026-04-01")]
    assert snapshots[0] == snapshots[1] == snapshots[2]
    for tool, arguments, parameter in (
        ("observation_query", {"afterDate": f"{ms}x"}, "afterDate"),
        ("observation_query", {"beforeDate": "253402300800000"}, "beforeDate"),
        ("observation_query", {"afterDate": True}, "afterDate"),
        ("observation_query", {"afterDate": "x" * 65}, "afterDate"),
        ("list_timeline_events", {"after": "1775001600000.0"}, "after"),
        ("list_timeline_events", {"before": 10**20}, "before"),
        ("retrieve_entity_snapshot", {"entity_id": "company/acme-corp", "as_of": "soon"}, "as_of"),
    ):
        error = server.failure(tool, **arguments)
        assert error["code"] == "VALIDATION_ERROR" and error["details"]["parameter"] == parameter, (tool, error)
    # a float that is a whole number is the integer it spells, as for every integer argument
    assert server.call("observation_query", mode="json", afterDate=float(ms), limit=1000) == query[0]


# -- the tools go through the door: schemas from the requests, errors in the tools' names ------
def _field_of(request: type, name: str) -> Field:
    hint = typing.get_type_hints(request, include_extras=True)[name]
    return next(meta for meta in getattr(hint, "__metadata__", ()) if isinstance(meta, Field))


def _branches(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return spec.get("anyOf", [spec])


def test_every_argument_says_what_its_request_field_says(server: Server) -> None:
    listed = {tool.name: tool.input_schema for tool in server.portal.call(server.session.list_tools).tools}
    declared = all_tools()
    assert set(listed) == set(declared)
    for name, tool in declared.items():
        properties = listed[name]["properties"]
        required = set(listed[name].get("required", ()))
        for field, argument in tool.names.items():
            spec, meta = properties[argument], _field_of(tool.request, field)
            assert spec["description"] == meta.description, (name, argument)
            for bound, (kind, keyword) in BOUNDS.items():
                if getattr(meta, bound) is not None:
                    kinds = {kind, "number"} if kind == "integer" else {kind}  # a bound of a float is a number's
                    assert [b.get(keyword) for b in _branches(spec) if b["type"] in kinds] == [getattr(meta, bound)], \
                        (name, argument, keyword)
            if argument not in required:  # leaving an optional argument out says "none"; null is no value
                assert "null" not in {branch["type"] for branch in _branches(spec)}, (name, argument)
        assert set(properties) == set(tool.names.values()) | set(tool.extras), name


def test_an_error_of_the_door_names_the_tool_s_argument(repo: Repo, server: Server) -> None:
    unnamed = server.failure("retrieve_entity_by_identifier", identifier="!!!")
    assert unnamed["details"]["parameter"] == "identifier" and unnamed["message"].startswith("identifier ")
    assert "IDENTIFIER has no letters or digits" in repo.obsrepo("find", "!!!").stderr  # the CLI's own name for it

    bad_date = server.failure("observation_query", afterDate="2026-13-01")
    assert bad_date["details"]["parameter"] == "afterDate" and bad_date["message"].startswith("afterDate ")
    bad_day = server.failure("list_timeline_events", before="2026-02-30")
    assert bad_day["details"]["parameter"] == "before"
    reversed_window = server.failure("observation_query", afterDate="2026-05-01", beforeDate="2026-04-01")
    assert reversed_window["message"] == "afterDate must be earlier than beforeDate"
    assert reversed_window["details"]["parameter"] == "afterDate"
    bad_rev = server.failure("retrieve_entity_snapshot", entity_id="company/acme-corp", at="no-such-revision")
    assert bad_rev["details"]["parameter"] == "at"


def test_seed_003_s_directions_are_the_door_s(server: Server) -> None:
    for tool, extra in (("list_relationships", {}), ("retrieve_related_entities", {"max_hops": 2})):
        for spelled, meant in (("outbound", "out"), ("inbound", "in")):
            answer = server.call(tool, entity_id="company/acme-corp", direction=spelled, **extra)
            assert answer == server.call(tool, entity_id="company/acme-corp", direction=meant, **extra)
        assert server.call(tool, entity_id="company/acme-corp", **extra)["total_relationships" if extra else "total"] > 0

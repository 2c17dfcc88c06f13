"""The MCP server: the tools of `tools/` over one `ops.Session`, through the SDK's low-level server.

Every call runs on a worker thread (DuckDB releases the interpreter, so calls overlap) and goes
through `answer`, the one place where results and failures take their shape:

* an answer is structured content plus the same JSON as text (a `Text` answer, the text alone);
* a failure is a result with `isError: true` whose text is the error envelope of
  docs/design.md §7, `{"error": {"code", "message", "details"}}`: an `ObsrepoError` keeps its
  code; anything else is INTERNAL_ERROR, with the traceback on the server's stderr and never in
  the answer. Unknown tools and unusable arguments are VALIDATION_ERROR results too, never
  protocol errors.

The session is kept open (`keep_open`): the index stays open between calls, and before each
call it is brought to HEAD in process when HEAD moved.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from typing import Any

from ..errors import INTERNAL_ERROR, ObsrepoError, UsageError, missing_extra
from ..ops import Query, Session, run
from .registry import Text, Tool
from .tools import all_tools

NAME = "obsrepo"


def instructions(tools: Mapping[str, Tool]) -> str:
    """What the server tells a client at the start; the write tools are named from the registry,
    so a tool added later is never left out."""
    writers = [name for name, tool in tools.items() if not tool.annotations["readOnlyHint"]]
    named = ", ".join(writers[:-1]) + f" and {writers[-1]}" if len(writers) > 1 else "".join(writers)
    return (
        "A git repository as a database of observations (immutable Markdown files). Query observations "
        "(observation_query), read entity snapshots reduced from them with field provenance, relationships, "
        "timelines and history, and check a document before proposing it (check_document). Answers reflect "
        f"the tip of the branch served, brought up to date before each call. Writing is proposing: {named} "
        "each add one commit on the server's proposal branch, checked first: a new observation, or a "
        "comprehension's next version (nothing is ever edited in place); a person merges that branch by pull "
        "request, and only then do reads show it."
    )


log = logging.getLogger("obsrepo.mcp")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class Service:
    """The tools bound to one session: what the transports serve."""

    def __init__(self, session: Session, tools: dict[str, Tool] | None = None) -> None:
        self.session = session
        self.tools = all_tools() if tools is None else tools

    def answer(self, name: str, arguments: dict[str, Any] | None) -> tuple[str, Any, bool]:
        """(text, structured content or None, is_error) for one call; never raises."""
        try:
            tool = self.tools.get(name)
            if tool is None:
                raise UsageError(f"unknown tool '{name[:80]}'; the tools are {', '.join(self.tools)}", parameter="name")
            result = tool.call(self.session, arguments)
            if isinstance(result, Text):
                return str(result), None, False
            return _dumps(result), result, False
        except ObsrepoError as exc:
            return _dumps(exc.envelope()), None, True
        except ModuleNotFoundError as exc:
            missing = missing_extra(exc, "mcp")
            if missing is not None:
                return _dumps(missing.envelope()), None, True
            return self._internal(name, exc)
        except Exception as exc:  # a bug: one envelope, the traceback on stderr only
            return self._internal(name, exc)

    @staticmethod
    def _internal(name: str, exc: BaseException) -> tuple[str, Any, bool]:
        log.error("tool %s failed", name, exc_info=(type(exc), exc, exc.__traceback__))
        failure = ObsrepoError(f"internal error (a bug in obsrepo): {type(exc).__name__}; the details are in the "
                               "server's log (stderr)", code=INTERNAL_ERROR, tool=name)
        return _dumps(failure.envelope()), None, True

    def warm_up(self) -> None:
        """Open the index (building or updating it first when needed) before the first call."""
        try:
            run(self.session, Query(limit=1))
        except Exception:  # noqa: BLE001 - the first call reports what is wrong, as an envelope
            log.debug("warming up failed", exc_info=True)


def build_server(service: Service) -> Any:
    """The SDK's low-level server with tools/list and tools/call."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    listed = [types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema,
                         output_schema=t.output_schema, annotations=types.ToolAnnotations.model_validate(t.annotations))
              for t in service.tools.values()]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        text, structured, is_error = await anyio.to_thread.run_sync(service.answer, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured, is_error=is_error)

    from mcp.shared.exceptions import MCPError

    from . import prompts

    listed_prompts = [types.Prompt(name=prompts.PROMPT, title="Recall: the session memory block",
                                   description=prompts.DESCRIPTION,
                                   arguments=[types.PromptArgument(name=name, description=about, required=False)
                                              for name, about in prompts.ARGUMENTS])]

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=listed_prompts)

    async def get_prompt(ctx: Any, params: Any) -> Any:
        """The recall tool's Markdown as the session's first (user) message."""
        if params.name != prompts.PROMPT:
            raise MCPError(prompts.INVALID_PARAMS, f"unknown prompt '{params.name[:80]}'; the prompt is {prompts.PROMPT}")
        arguments = prompts.tool_arguments(params.arguments)
        text, _, is_error = await anyio.to_thread.run_sync(service.answer, "recall", arguments)
        if is_error:
            raise MCPError(prompts.INVALID_PARAMS, *prompts.failure_data(text))
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        return types.GetPromptResult(description=prompts.DESCRIPTION, messages=[message])

    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("obsrepo")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        release = "0"
    return Server(NAME, version=release, instructions=instructions(service.tools), on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_prompts=list_prompts, on_get_prompt=get_prompt)


def run_stdio(service: Service) -> None:
    import threading

    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(service)
    threading.Thread(target=service.warm_up, daemon=True, name="obsrepo-warm-up").start()

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def configure_logging() -> None:
    """Warnings and tracebacks on stderr (stdout is the protocol's, over stdio)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("obsrepo mcp: %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

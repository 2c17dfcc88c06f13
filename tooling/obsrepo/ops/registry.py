"""The operations registry: name → (request type, function, response type, reads|writes).

An operation is a frozen request dataclass, one function `(Session, request) -> response` and
a typed response with `to_json()`. Adapters find operations here by name or run one by its
request (`run(session, request)`); the web view and the MCP server list them from here, so no
adapter keeps a list of its own.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

if typing.TYPE_CHECKING:
    from .session import Session

Kind = Literal["reads", "writes"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Answer:
    """A response whose JSON is the shape the CLI prints with --format json (docs/design.md §9)."""

    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


@dataclass(frozen=True)
class Operation:
    name: str
    request: type
    function: Callable[[Session, Any], Any]
    response: type
    kind: Kind


OPERATIONS: dict[str, Operation] = {}
_BY_REQUEST: dict[type, Operation] = {}


def operation(name: str, kind: Kind) -> Callable[[F], F]:
    """Register `function(session, request: R) -> S` under `name`."""

    def register(function: F) -> F:
        hints = typing.get_type_hints(function, globalns={**function.__globals__, "Session": object})
        entry = Operation(name, hints["request"], function, hints["return"], kind)
        if name in OPERATIONS or entry.request in _BY_REQUEST:
            raise ValueError(f"operation {name} is registered twice")
        OPERATIONS[name] = entry
        _BY_REQUEST[entry.request] = entry
        return function

    return register


def run(session: Session, request: Any) -> Any:
    """The operation of `request`'s type, run for `session`."""
    return _BY_REQUEST[type(request)].function(session, request)

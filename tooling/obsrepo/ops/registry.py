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
        # the annotations are names of the defining module (`from __future__ import annotations`):
        # a look-up, where typing.get_type_hints would cost ~0.3 ms an operation at every start
        request, response = (_named(function, function.__annotations__[key]) for key in ("request", "return"))
        entry = Operation(name, request, function, response, kind)
        if name in OPERATIONS or entry.request in _BY_REQUEST:
            raise ValueError(f"operation {name} is registered twice")
        OPERATIONS[name] = entry
        _BY_REQUEST[entry.request] = entry
        return function

    return register


def _named(function: Callable[..., Any], annotation: Any) -> type:
    found = function.__globals__.get(annotation, annotation) if isinstance(annotation, str) else annotation
    if not isinstance(found, type):
        raise TypeError(f"{function.__qualname__}: {annotation!r} is not a class of its module")
    return found


def run(session: Session, request: Any) -> Any:
    """The operation of `request`'s type, run for `session`."""
    return _BY_REQUEST[type(request)].function(session, request)

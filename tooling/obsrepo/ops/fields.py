"""What a request field is, said once for every adapter that describes or checks it.

A request field is annotated `Annotated[type, Field(description, bounds…)]`. pydantic's JSON
Schema of a request (`TypeAdapter(Request).json_schema()`) carries the description and the
bounds, so the MCP tools' input schemas and the web view's forms are generated from the
requests and cannot drift from them; the command line's options are generated from the same
`Field`s (cli/declare.py): name, type, default, choices, help and placeholder. A description
names another field in backquotes (`text`); each adapter spells it its own way (`--text`).
The bounds are what a caller may send, not new rules: the operations still parse every value
(values.py).

Nothing here imports pydantic (the command line starts without it): pydantic calls
`Field.__get_pydantic_json_schema__` when it builds a schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from ..format.vocabulary import CLASSIFICATIONS
from ..params import MAX_LIMIT
from ..times import MAX_MS, MIN_MS
from .values import MAX_OFFSET

JsonSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Field:
    """A field's description and the bounds of what a caller may send: lengths of text,
    the range of numbers, the size of lists and objects, the values allowed."""

    description: str = ""
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    max_items: int | None = None
    unique_items: bool = False
    min_properties: int | None = None
    max_properties: int | None = None
    choices: tuple[str, ...] = ()
    placeholder: str | None = None  # what a value looks like where a form or usage line shows one: REV, TIME

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Callable[[Any], JsonSchema]) -> JsonSchema:
        """The type's schema with the bounds on each branch of the JSON type they bound. A
        `datetime` is for library callers: a JSON caller sends text or milliseconds, so its
        `date-time` branch is left out."""
        schema = handler(core_schema)
        if "anyOf" in schema:
            schema["anyOf"] = [branch for branch in schema["anyOf"] if branch.get("format") != "date-time"]
        for branch in schema.get("anyOf", [schema]):
            branch.update(self._bounds(branch.get("type")))
        if self.description:
            schema["description"] = self.description
        return schema

    def _bounds(self, kind: str | None) -> JsonSchema:
        given: dict[str | None, JsonSchema] = {
            "string": {"minLength": self.min_length, "maxLength": self.max_length, "pattern": self.pattern,
                       "enum": list(self.choices) or None},
            "integer": {"minimum": self.minimum, "maximum": self.maximum},
            "number": {"minimum": self.minimum, "maximum": self.maximum},
            "array": {"maxItems": self.max_items, "uniqueItems": self.unique_items or None},
            "object": {"minProperties": self.min_properties, "maxProperties": self.max_properties},
        }
        return {key: value for key, value in given.get(kind, {}).items() if value is not None}


def text_field(description: str, max_length: int) -> Field:
    """Non-empty text of at most `max_length` characters."""
    return Field(description, min_length=1, max_length=max_length)


MOMENT_FORMS = "ISO 8601 (a date, or a timestamp with a timezone) or unix milliseconds (a number, or digits as text)."


def moment(description: str) -> Field:
    """A moment (values.Moment): ISO 8601 text, or unix milliseconds as an integer or as digits."""
    return Field(f"{description}: {MOMENT_FORMS}", min_length=1, max_length=64, minimum=MIN_MS, maximum=MAX_MS,
                 placeholder="TIME")


# -- fields many requests share ------------------------------------------------------------------
EntityId = Annotated[str, text_field("An entity id: type/key, e.g. company/acme.", 512)]
At = Annotated[str | None, Field("A git revision (commit, branch, tag, HEAD~3): answer as the repository was there. "
                                 "Default: the tip served.", min_length=1, max_length=256, placeholder="REV")]
Limit = Annotated[int, Field(f"At most this many (1..{MAX_LIMIT}).", minimum=1, maximum=MAX_LIMIT)]
Offset = Annotated[int, Field("Skip this many first (the next page).", minimum=0, maximum=MAX_OFFSET)]
EntityType = Annotated[str | None, text_field("Only entities of this type (the part before the slash).", 128)]
MaxClassification = Annotated[str | None, Field("Leave out anything classified above this level.", choices=CLASSIFICATIONS)]
AsOf = Annotated[str | int | None, moment(
    "Valid time: only observations whose period holds this (without a period: timestamp ≤ this)")]  # §19
Reason = Annotated[str, text_field("Why, in one line (it goes into the new observation's event).", 1000)]
Source = Annotated[str | None, text_field("Who makes the statement (default human/<your git user name>).", 256)]

__all__ = ["At", "EntityId", "EntityType", "Field", "Limit", "MaxClassification", "Offset", "Reason", "Source", "moment", "text_field"]

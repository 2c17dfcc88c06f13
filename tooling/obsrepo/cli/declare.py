"""A command declared once: `@command(Request, …)` over its renderer.

The request dataclass of the operation (ops/) is the only place where what a command takes is
written: each field becomes a click parameter, its name from the field (`max_classification`
→ `--max-classification`), its type from the annotation (text, a number, a flag, a repeatable
option for a tuple), its default from the dataclass, its choices, help and placeholder from
the field's `ops.fields.Field`, the same description the MCP tools show. A field without a
default is a positional argument. The command's own table only says where the command line
spells a field otherwise (`entity_type` → `--type`, `overlay` → `--committed-only`).

    @command(Show, names={"observation_id": argument("ID")}, options=(at_format, read_options),
             examples=("obsrepo show obs-1",))
    def show(answer: Shown, output_format: str) -> str | None:
        \"\"\"One observation as a reviewer reads it.\"\"\"   # the command's help
        return render_show(answer.to_json())

The command then builds the request from the values parsed, runs its one operation over the
door's Session (from the shared `--tenant`, `--index`, `--embedder`) and prints what the
renderer returns. Errors name the request's fields; `handled` renames them to the flags of
this table (errors.cli_names reads the generated parameters, whose names are the fields).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click

from .. import errors
from ..ops import run
from ..ops.fields import Field
from .app import main
from .errors import handled
from .options import examples as epilog
from .options import session


@dataclass(frozen=True)
class Spelling:
    """How the command line spells one field, where its name and `Field` do not say it."""

    flag: str | None = None  # "--type" (an option), or None: the field's own name
    argument: bool = False  # positional (a field without a default always is)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None  # fewer than the field allows (seed spellings left out)
    inverse: str | None = None  # a flag that sets a boolean field False, with its own help
    help: str | None = None  # where the command gives the field another sense (export's --text does not rank)


def flag(name: str, *, metavar: str | None = None, choices: tuple[str, ...] | None = None,
         help_text: str | None = None) -> Spelling:
    return Spelling(flag=name, metavar=metavar, choices=choices, help=help_text)


def inverse(name: str, help_text: str) -> Spelling:
    """`--committed-only` for `overlay`: given, the field is False; absent, its default."""
    return Spelling(flag=name, inverse=help_text)


def argument(metavar: str | None = None) -> Spelling:
    return Spelling(argument=True, metavar=metavar)


Names = Mapping[str, "Spelling | str | None"]  # field → its spelling, a flag's name, or None: not offered
Renderer = Callable[..., "str | None"]


@dataclass(frozen=True)
class Parameter:
    field: str
    param: click.Parameter
    inverse: bool
    default: Any


def parameters(request: type, names: Names | None = None) -> list[Parameter]:
    """The click parameters of `request`'s fields: arguments first (in the fields' order),
    then the options; a field named None is not offered."""
    names = names or {}
    hints = typing.get_type_hints(request, include_extras=True)
    fields = [f for f in dataclasses.fields(request) if names.get(f.name, "") is not None]
    hidden = {f.name for f in dataclasses.fields(request)} - {f.name for f in fields}
    spellings = {f.name: _spelling(f, names, _unwrap(hints[f.name])[1]) for f in fields}
    flags = {name: _label(name, spelling) for name, spelling in spellings.items()}
    made = [_parameter(f, hints[f.name], spellings[f.name], flags, hidden) for f in fields]
    return [p for p in made if isinstance(p.param, click.Argument)] + [p for p in made if isinstance(p.param, click.Option)]


def _spelling(field: dataclasses.Field, names: Names, meta: Field) -> Spelling:
    given = names.get(field.name)
    spelling = Spelling(flag=given) if isinstance(given, str) else (given or Spelling())
    if spelling.metavar is None and meta.placeholder is not None:
        spelling = dataclasses.replace(spelling, metavar=meta.placeholder)
    if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
        return dataclasses.replace(spelling, argument=True)
    return spelling


def _label(name: str, spelling: Spelling) -> str:
    """How the help names a field: an option by its flag, an argument as the usage line shows it."""
    if spelling.argument:
        return spelling.metavar or name.upper()
    return spelling.flag or _flag(name)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parameter(field: dataclasses.Field, hint: Any, spelling: Spelling, flags: Mapping[str, str],
               hidden: set[str]) -> Parameter:
    kind, meta = _unwrap(hint)
    multiple = typing.get_origin(kind) is tuple
    base = _base(typing.get_args(kind)[0] if multiple else kind)
    choices = spelling.choices or meta.choices
    value_type: Any = click.Choice(choices) if choices else {int: click.INT, float: click.FLOAT}.get(base, click.STRING)
    metavar = spelling.metavar
    if spelling.argument:
        return Parameter(field.name, click.Argument([field.name], type=value_type, metavar=metavar), False,
                         dataclasses.MISSING)
    default = field.default
    text = spelling.help or _help(meta.description, flags, hidden, multiple)
    if spelling.inverse is not None:
        param: click.Parameter = click.Option([spelling.flag or _flag(field.name), field.name], is_flag=True,
                                              help=spelling.inverse)
    elif base is bool:
        param = click.Option([spelling.flag or _flag(field.name), field.name], is_flag=True, help=text)
    else:
        param = click.Option([spelling.flag or _flag(field.name), field.name], type=value_type, multiple=multiple,
                             default=default, show_default=default not in (None, ()), metavar=metavar, help=text)
    return Parameter(field.name, param, spelling.inverse is not None, default)


def _unwrap(hint: Any) -> tuple[Any, Field]:
    """The type without `Annotated` and None, and the field's `Field` (an empty one if it has none)."""
    meta = Field()
    if typing.get_origin(hint) is typing.Annotated:
        meta = next((m for m in hint.__metadata__ if isinstance(m, Field)), meta)
        hint = hint.__origin__
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, _UnionType) and len(args) == 1:
        hint = args[0]
    return hint, meta


_UnionType = type(int | None)


def _base(kind: Any) -> type:
    """What the command line reads: a number or a flag as such; anything else (a moment's
    text, int or datetime included) as text, which the door parses."""
    if typing.get_origin(kind) is typing.Annotated:
        kind = kind.__origin__
    return kind if kind in (int, float, bool) else str


def _help(description: str, flags: Mapping[str, str], hidden: set[str], multiple: bool) -> str:
    """The field's description, another field named in backquotes spelt as its flag; a
    sentence about a field the command does not offer is left out."""
    sentences = [s for s in re.split(r"(?<=\.) (?=[A-Z])", description)
                 if not any(f"`{name}`" in s for name in hidden)]
    text = re.sub(r"`([a-z_]+)`", lambda m: flags.get(m.group(1), m.group(0)), " ".join(sentences))
    return f"{text} Repeatable." if multiple else text


def command(request: type, *, names: Names | None = None, options: Sequence[Callable[[Any], Any]] = (),
            examples: Sequence[str] = ()) -> Callable[[Renderer], click.Command]:
    """Declare the command named as the renderer over the operation of `request`.

    `options` are the shared decorators (`read_options`, a `--format`, `embedder_option`), in
    the order the help lists them after the request's own; their values other than the door's
    (`output_format`) go to the renderer, `render(answer, **those) -> text to print or None`."""
    table = parameters(request, names)

    def declare(render: Renderer) -> click.Command:
        def body(**given: Any) -> int:
            door = session(given.pop("index_path", None), given.pop("tenant", None), embedder=given.pop("embedder", None))
            values = {p.field: _value(p, given.pop(p.field)) for p in table}
            text = render(run(door, request(**values)), **given)
            if text is not None:
                click.echo(text)
            return errors.EXIT_OK

        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(body, attribute, getattr(render, attribute))
        callback: Any = handled(body)
        shared = _shared(options)
        callback.__click_params__ = list(reversed([p.param for p in table] + shared))
        return main.command(name=render.__name__, epilog=epilog(*examples))(callback)

    return declare


def options_of(request: type, names: Names | None = None) -> Callable[[Any], Any]:
    """The generated options of `request`'s fields on a command whose body does more than run
    one operation and render it (export writes a stream); the command receives each value under
    its field's name (`values_of` makes the request's values of them)."""
    table = parameters(request, names)

    def attach(func: Any) -> Any:
        func.__click_params__ = [*getattr(func, "__click_params__", []), *reversed([p.param for p in table])]
        return func

    return attach


def offered(request: type, *fields: str) -> Names:
    """`names` that offer only `fields` of `request` (the others are the command's own)."""
    return {f.name: None for f in dataclasses.fields(request) if f.name not in fields}


def values_of(request: type, names: Names | None, given: dict[str, Any]) -> dict[str, Any]:
    """The values of `options_of(request, names)` taken out of a command's `given` arguments."""
    return {p.field: _value(p, given.pop(p.field)) for p in parameters(request, names)}


def _value(parameter: Parameter, given: Any) -> Any:
    if parameter.inverse:
        return False if given else parameter.default
    return given


def _shared(options: Sequence[Callable[[Any], Any]]) -> list[click.Parameter]:
    """The parameters the shared decorators add, in the order they are listed."""

    def holder() -> None:
        """Carries the shared options' parameters."""

    for option in reversed(options):
        option(holder)
    return list(reversed(getattr(holder, "__click_params__", [])))


__all__ = ["Spelling", "argument", "command", "flag", "inverse", "options_of", "parameters", "values_of"]

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
import inspect
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click

from .. import errors
from ..ops import Session, run
from ..ops.fields import Field
from .app import main
from .errors import handled
from .options import examples as epilog
from .options import session


@dataclass(frozen=True)
class Spelling:
    """How the command line spells one field, where its name and `Field` do not say it."""

    flag: str | None = None  # "--type" (an option), or None: the field's own name
    argument: bool = False  # positional (a field without a default is, unless `required`)
    required: bool = False  # an option the command line requires (a field without a default)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None  # fewer than the field allows (seed spellings left out)
    inverse: str | None = None  # a flag that sets a boolean field False, with its own help
    help: str | None = None  # where the command gives the field another sense (export's --text does not rank)
    convert: Callable[[Any], Any] | None = None  # the field's value from the text given (correct's VALUE as JSON)


@dataclass(frozen=True)
class Composed:
    """A field the command line takes as several shared options and builds from their values
    (a write's `destination` from --commit and --branch)."""

    options: tuple[Callable[[Any], Any], ...]
    build: Callable[..., Any]  # (**the options' values) -> the field's value


@dataclass(frozen=True)
class Supplied:
    """A field the command fills itself, not offered (check's progress bar, its folder): built
    at run time from the values of the command's shared options."""

    make: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Exit:
    """What a renderer returns when the answer sets the exit code (check, diff: 1 on problems)."""

    code: int
    text: str | None = None


def flag(name: str, *, metavar: str | None = None, choices: tuple[str, ...] | None = None,
         help_text: str | None = None) -> Spelling:
    return Spelling(flag=name, metavar=metavar, choices=choices, help=help_text)


def required(name: str | None = None, help_text: str | None = None, metavar: str | None = None) -> Spelling:
    """A field without a default offered as an option the command line requires (`--reason`),
    not as a positional argument."""
    return Spelling(flag=name, argument=False, metavar=metavar, help=help_text, required=True)


def inverse(name: str, help_text: str) -> Spelling:
    """`--committed-only` for `overlay`: given, the field is False; absent, its default."""
    return Spelling(flag=name, inverse=help_text)


def argument(metavar: str | None = None) -> Spelling:
    return Spelling(argument=True, metavar=metavar)


Names = Mapping[str, "Spelling | Composed | Supplied | str | None"]  # field → its spelling, or None: not offered
Renderer = Callable[..., "str | Exit | None"]


@dataclass(frozen=True)
class Parameter:
    field: str
    param: click.Parameter | None  # None: a `Composed` or `Supplied` field
    inverse: bool
    default: Any
    convert: Callable[[Any], Any] | None = None
    composed: Composed | None = None
    supplied: Supplied | None = None

    def value(self, given: dict[str, Any]) -> Any:
        """The field's value, its parameters' values taken out of `given`."""
        if self.supplied is not None:
            return self.supplied.make(given)
        if self.composed is not None:
            return self.composed.build(**{p.name: given.pop(p.name) for p in _shared(self.composed.options) if p.name})
        value = given.pop(self.field)
        if self.inverse:
            return False if value else self.default
        return value if self.convert is None or value is None else self.convert(value)

    @property
    def params(self) -> list[click.Parameter]:
        return _shared(self.composed.options) if self.composed is not None else [self.param] if self.param else []


def parameters(request: type, names: Names | None = None) -> list[Parameter]:
    """The click parameters of `request`'s fields: arguments first (in the fields' order),
    then the options; a field named None is not offered."""
    names = names or {}
    hints = typing.get_type_hints(request, include_extras=True)
    fields = [f for f in dataclasses.fields(request) if names.get(f.name, "") is not None]
    hidden = {f.name for f in dataclasses.fields(request)} - {f.name for f in fields}
    other = {name: given for name, given in names.items() if isinstance(given, (Composed, Supplied))}
    hidden |= {name for name, given in other.items() if isinstance(given, Supplied)}
    offered = [f for f in fields if f.name not in other]
    spellings = {f.name: _spelling(f, names, _unwrap(hints[f.name])[1]) for f in offered}
    flags = {name: _label(name, spelling) for name, spelling in spellings.items()}
    made = [_parameter(f, hints[f.name], spellings[f.name], flags, hidden) for f in offered]
    built = [Parameter(name, None, False, None, composed=given if isinstance(given, Composed) else None,
                       supplied=given if isinstance(given, Supplied) else None) for name, given in other.items()]
    return ([p for p in made if isinstance(p.param, click.Argument)] + [p for p in made if isinstance(p.param, click.Option)]
            + built)


def _spelling(field: dataclasses.Field, names: Names, meta: Field) -> Spelling:
    given = names.get(field.name)
    spelling = Spelling(flag=given) if isinstance(given, str) else given if isinstance(given, Spelling) else Spelling()
    if spelling.metavar is None and meta.placeholder is not None:
        spelling = dataclasses.replace(spelling, metavar=meta.placeholder)
    if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING and not spelling.required:
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
        needed = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        positional: dict[str, Any] = {"required": True} if needed else {"default": field.default}
        argument = click.Argument([field.name], type=value_type, metavar=metavar, nargs=-1 if multiple else 1, **positional)
        return Parameter(field.name, argument, False, dataclasses.MISSING, spelling.convert)
    default = None if field.default is dataclasses.MISSING else field.default
    text = spelling.help or _help(meta.description, flags, hidden, multiple)
    if spelling.inverse is not None:
        param: click.Parameter = click.Option([spelling.flag or _flag(field.name), field.name], is_flag=True,
                                              help=spelling.inverse)
    elif base is bool:
        param = click.Option([spelling.flag or _flag(field.name), field.name], is_flag=True, help=text)
    else:
        given: dict[str, Any] = {"required": True} if spelling.required else {"default": default}  # a default is a value
        param = click.Option([spelling.flag or _flag(field.name), field.name], type=value_type, multiple=multiple,
                             show_default=default not in (None, ()), metavar=metavar, help=text, **given)
    return Parameter(field.name, param, spelling.inverse is not None, default, spelling.convert)


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


def _door(given: dict[str, Any]) -> Session:
    """The door of the shared `--index`, `--tenant` and `--embedder`, taken out of `given`."""
    return session(given.pop("index_path", None), given.pop("tenant", None), embedder=given.pop("embedder", None))


def command(request: type, *, names: Names | None = None, options: Sequence[Callable[[Any], Any]] = (),
            examples: Sequence[str] = (), name: str | None = None, group: click.Group = main,
            door: Callable[[dict[str, Any]], Session] = _door) -> Callable[[Renderer], click.Command]:
    """Declare the command named as the renderer (or `name`) over the operation of `request`.

    `options` are the shared decorators (`read_options`, a `--format`, `embedder_option`), in
    the order the help lists them after the request's own; their values other than the door's
    (`output_format`) go to the renderer, `render(answer, **those) -> text to print, None, or
    an Exit` (its code, and the text); a renderer with a `request` parameter also gets the
    request it answers. `door` makes the Session from the shared values; `group` is the command
    group it belongs to (`embed`)."""
    table = parameters(request, names)

    def declare(render: Renderer) -> click.Command:
        wants_request = "request" in inspect.signature(render).parameters  # correct's text names what it asked

        def body(**given: Any) -> int:
            values = {p.field: p.value(given) for p in table}
            opened = door(given)
            asked = request(**values)
            done = render(run(opened, asked), **given, **({"request": asked} if wants_request else {}))
            code, text = (done.code, done.text) if isinstance(done, Exit) else (errors.EXIT_OK, done)
            if text is not None:
                click.echo(text)
            return code

        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(body, attribute, getattr(render, attribute))
        callback: Any = handled(body)
        shared = _shared(options)
        callback.__click_params__ = list(reversed([q for p in table for q in p.params] + shared))
        return group.command(name=name or render.__name__, epilog=epilog(*examples))(callback)

    return declare


def options_of(request: type, names: Names | None = None) -> Callable[[Any], Any]:
    """The generated options of `request`'s fields on a command whose body does more than run
    one operation and render it (export writes a stream); the command receives each value under
    its field's name (`values_of` makes the request's values of them)."""
    table = parameters(request, names)

    def attach(func: Any) -> Any:
        func.__click_params__ = [*getattr(func, "__click_params__", []), *reversed([q for p in table for q in p.params])]
        return func

    return attach


def offered(request: type, *fields: str) -> Names:
    """`names` that offer only `fields` of `request` (the others are the command's own)."""
    return {f.name: None for f in dataclasses.fields(request) if f.name not in fields}


def values_of(request: type, names: Names | None, given: dict[str, Any]) -> dict[str, Any]:
    """The values of `options_of(request, names)` taken out of a command's `given` arguments."""
    return {p.field: p.value(given) for p in parameters(request, names)}


def _shared(options: Sequence[Callable[[Any], Any]]) -> list[click.Parameter]:
    """The parameters the shared decorators add, in the order they are listed."""

    def holder() -> None:
        """Carries the shared options' parameters."""

    for option in reversed(options):
        option(holder)
    return list(reversed(getattr(holder, "__click_params__", [])))


__all__ = ["Composed", "Exit", "Spelling", "Supplied", "argument", "command", "flag", "inverse", "options_of", "parameters",
           "required", "values_of"]

"""The tools the server offers: every module of this folder, each declaring one or a few tools
with `registry.read_tool` / `registry.write_tool`. Adding a tool is adding a module here."""

from __future__ import annotations

import importlib
import pkgutil

from ..registry import Tool


def all_tools() -> dict[str, Tool]:
    """Every declared tool by name, in a stable order (modules by name, tools as declared)."""
    found: dict[str, Tool] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Tool):
                if value.name in found:
                    raise RuntimeError(f"two tools are named {value.name}")
                found[value.name] = value
    return found

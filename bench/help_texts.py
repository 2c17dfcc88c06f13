"""Every command's `--help`, one after the other: diff two dumps to see what a change of the
command line's declarations did to options, defaults, choices and help texts.

    PYTHONPATH=tooling python bench/help_texts.py > /tmp/help-before.txt
"""

from __future__ import annotations

import click
from click.testing import CliRunner
from obsrepo.cli import main


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name in sorted(group.list_commands(click.Context(group))):
        command = group.get_command(click.Context(group), name)
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += commands(command, (*prefix, name))
    return found


def dump() -> str:
    runner = CliRunner()
    parts = []
    for path in commands(main):
        result = runner.invoke(main, [*path, "--help"], terminal_width=200)
        parts.append(f"=== obsrepo {' '.join(path)}\n{result.output}")
    return "\n".join(parts)


if __name__ == "__main__":
    print(dump())

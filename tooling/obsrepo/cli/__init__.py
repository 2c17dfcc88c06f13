"""The command line: arguments → one operation of the door (`ops`) → render → exit code.

    errors.py    the one place where failures become output and exit codes
    options.py   what every command shares: the Session, --index, --tenant, --at, paging
    app.py       the command group and the process around it
    gate.py      check                    reads.py     query, show, sql, status
    new.py       new
    entities.py  snapshot … history       review.py    diff
    live.py      index, watch, mcp        write.py     correct, retract, relate, merge
    steward.py   feedback, reclassify, retention, export, comprehend, comprehensions
    init.py      init
    embed.py     embed info, embed pull
    publish.py   publish (Apache Iceberg tables)
    serve.py     serve (the inspector, a web view)
"""

from __future__ import annotations

from typing import Any

from .app import run

__all__ = ["main", "run"]


def __getattr__(name: str) -> Any:
    # `main` with every command loaded; the program itself (`run`) loads the one it runs
    if name == "main":
        from .app import load_all

        return load_all()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

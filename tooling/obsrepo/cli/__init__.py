"""The command line: arguments → one operation of the door (`ops`) → render → exit code.

    errors.py    the one place where failures become output and exit codes
    options.py   what every command shares: the Session, --index, --tenant, --at, paging
    app.py       the command group and the process around it
    gate.py      check, new               reads.py     query, show, sql, status
    entities.py  snapshot … history       review.py    diff
    live.py      index, watch, mcp        write.py     correct, retract, relate, merge
    steward.py   feedback, reclassify, retention, export, comprehend, comprehensions
    init.py      init
    embed.py     embed info, embed pull
    publish.py   publish (Apache Iceberg tables)
"""

from __future__ import annotations

from . import embed, entities, gate, init, live, publish, reads, review, steward, write  # noqa: F401 - each registers its commands
from .app import main, run
from .errors import handled
from .options import examples

__all__ = ["examples", "handled", "main", "run"]

"""`obsrepo publish`: the index as Apache Iceberg tables (docs/design.md §16), an adapter over
the door: `ops.Publication` decides and produces the rows, this package only talks to the
catalog (pyiceberg, the `publish` extra, imported when a publish runs).

    catalog.py   the catalog by name (pyiceberg's own configuration), the tables, what they hold,
                 whether they are obsrepo's and of its shape
    faults.py    what the catalog, its database or its warehouse refused, in one line (exit 4)
    writer.py    one publish: the data tables first, `commits` last, one snapshot each
"""

from __future__ import annotations

from .writer import Published, publish

__all__ = ["Published", "publish"]

"""Which rows count at a valid time (docs/design.md §19), as SQL over the rows `o` of a read."""

from __future__ import annotations

from .scope import ReadScope


def counting(scope: ReadScope, as_of: str | None) -> str:
    """SQL over `o` true for the rows that count (docs/design.md §19): with `as_of`, those whose
    effective interval holds it; without, every row that wrote no period and the others whose
    period holds the committer time of the scope's commit."""
    from ..index.reducer_rows import commit_instant

    return counting_at(as_of, None if as_of is not None else commit_instant(scope.git, scope.at_commit))


def counting_at(as_of: str | None, valid_at: str | None) -> str:
    """`counting` at a valid time given (`as_of`), or at `valid_at` for the rows that wrote a period."""
    from ..index.sqlreduce import counts_clause

    return counts_clause(as_of, valid_at, vfrom="epoch_us(o.valid_from)", epoch="epoch_us(o.timestamp)",
                         vuntil="epoch_us(o.valid_until)")

"""Rows reachable by scope and by type without a scan (docs/design.md §5.1).

`obs_keys` holds one row per distinct scope of each observation version and one per version
with a type, keyed by the first 64 bits of the MD5 of `kind:value` and stored in key order:
a statement that compares `key` with a constant reads only the blocks whose min/max can hold
it, however large the index. Each row carries the version's range and the columns a query
filters and orders by, so a scoped query never touches `obs_versions` (stored by entity,
where one scope's rows are everywhere). The key is a hash, not a counter, so an index updated
commit by commit holds the same rows as a full build; `kind` and `value` are kept beside it,
and readers compare them too, so two values that share a key never mix.
"""

from __future__ import annotations

from typing import Any

from .columns import KEYED
from .schema import NOW

_COLUMNS = ", ".join(KEYED)


def add_keyed(con: Any, table: str, first_row: int = 0) -> None:
    """The keys of the rows of `table` (obs_versions' columns) from `first_row` on."""
    con.execute(
        f"INSERT INTO obs_keys (key, kind, value, {_COLUMNS}) SELECT md5_number_upper(kind || ':' || value), kind, value, "
        f"{_COLUMNS} FROM (SELECT 'scope' AS kind, unnest(list_distinct(scope)) AS value, {_COLUMNS} FROM {table} "
        f"WHERE row_id >= {int(first_row)} UNION ALL SELECT 'type', type, {_COLUMNS} FROM {table} "
        f"WHERE row_id >= {int(first_row)} AND type IS NOT NULL) ORDER BY 1, row_id")


def close_keyed(con: Any) -> None:
    """Give the keys the ranges their versions were just closed with (a commit removed them)."""
    con.execute(f"UPDATE obs_keys AS k SET removed_seq = v.removed_seq FROM obs_versions AS v "
                f"WHERE k.row_id = v.row_id AND k.removed_seq = {NOW} AND v.removed_seq <> {NOW}")


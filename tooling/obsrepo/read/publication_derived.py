"""The derived tables of publication (docs/design.md §16, §19, §20): `identity_candidates` and
`contested_fields`, as a reader of the publish's scope (its binding, its ceiling) sees them at
a commit, and the rows that bring what the tables hold to them.

Both are derived whole at the commit a publish ends at, not at each commit it reads: a row
holds from the `from_seq` of the publish that derived it; `withdrawn` says the row (its key:
the pair, or the whole contest row) holds no more from that seq on. As of seq `s`, a key's
row is the one with the highest `from_seq <= s`, if it is not withdrawn."""

from __future__ import annotations

import json
from typing import Any

from .scope import ReadScope

DERIVED = ("identity_candidates", "contested_fields")
IDENTITY_COLUMNS = ("entity_a", "entity_b", "entity_type", "score", "tier", "evidence")
CONTESTED_COLUMNS = ("entity_id", "field", "winner_observation_id", "challenger_observation_id")

Derived = dict[str, dict[tuple, tuple]]  # table → key → the row's values (IDENTITY_COLUMNS or CONTESTED_COLUMNS)


def derived(scope: ReadScope) -> Derived:
    """What the scope sees of both tables at its commit: the index's own rows where they are
    exactly its rows (unbound, nothing withheld, the indexed commit), else computed through
    the same reads `obsrepo identities` and `obsrepo contested` answer with."""
    from ..format.contested import DEFAULT_WINDOW, parse_window
    from . import contested, identity

    table = "identity_candidates" if scope.as_indexed else identity._computed(scope, None, None)
    pairs = {(a, b): (a, b, kind, score, tier, _canonical(evidence)) for a, b, kind, score, tier, evidence in
             scope.rows(f"SELECT {', '.join(IDENTITY_COLUMNS)} FROM {table}")}
    if scope.as_indexed:
        rows = scope.rows(f"SELECT {', '.join(CONTESTED_COLUMNS)} FROM contested_fields")
    else:
        rows = [(c["entity_id"], c["field"], c["winner"]["observation_id"], challenger["observation_id"])
                for c in contested.contests(scope, parse_window(DEFAULT_WINDOW)) for challenger in c["challengers"]]
    return {"identity_candidates": pairs, "contested_fields": {tuple(row): tuple(row) for row in rows}}


def changed(repo: str, seq: int, held: Derived, now: Derived) -> dict[str, Any]:
    """The rows of each table at `seq`: every key whose row differs from what the tables hold
    (`held`), and each key that holds no more, withdrawn."""
    import pyarrow as pa

    out = {}
    for name, columns in (("identity_candidates", IDENTITY_COLUMNS), ("contested_fields", CONTESTED_COLUMNS)):
        before, after = held.get(name, {}), now[name]
        rows = [{"repo": repo, **dict(zip(columns, values)), "from_seq": seq, "withdrawn": False}
                for key, values in sorted(after.items()) if before.get(key) != values]
        rows += [{"repo": repo, **dict(zip(columns, values)), "from_seq": seq, "withdrawn": True}
                 for key, values in sorted(before.items()) if key not in after]
        out[name] = pa.Table.from_pylist(rows, schema=_schemas()[name])
    return out


def _canonical(evidence: Any) -> str:
    value = json.loads(evidence) if isinstance(evidence, str) else evidence
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _schemas() -> dict[str, Any]:
    import pyarrow as pa

    head = [("repo", pa.string())]
    tail = [("from_seq", pa.int32()), ("withdrawn", pa.bool_())]
    return {"identity_candidates": pa.schema([*head, ("entity_a", pa.string()), ("entity_b", pa.string()),
                                              ("entity_type", pa.string()), ("score", pa.float64()),
                                              ("tier", pa.string()), ("evidence", pa.string()), *tail]),
            "contested_fields": pa.schema([*head, *((column, pa.string()) for column in CONTESTED_COLUMNS), *tail])}


"""Did-you-mean for a key nobody defined: the closest known key, when one is near (docs/design.md §8a)."""

from __future__ import annotations

from collections.abc import Iterable

# difflib's ratio (its own default cutoff): `evnt`/`event` 0.89, `tpye`/`type` 0.75, `ogr`/`org`
# 0.67; below it the "closest" key is a guess that misleads more than it helps (`zzz`, `note`)
CUTOFF = 0.6


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """"; did you mean 'event'?" for `evnt`, or "" when no known key is near. Case is ignored
    in the comparison (`Event` → `event`). difflib is imported here, on the path of a bad
    document only: `check` of valid ones starts without it."""
    import difflib

    by_lower = {name.lower(): name for name in known}
    near = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return f"; did you mean '{by_lower[near[0]]}'?" if near else ""

"""Feedback weights (docs/design.md §14): each feedback document moves its target's weight by
an exponential moving average, in (commit, timestamp, id) order.

    w' = w·(1−α) + s·α      w₀ = 1.0, s = 1 for `accepted`, else 0
    α = 0.1 for `accepted`, 0.15 for `rejected`, `rework` and `misleading`

and α is doubled for a target once it has 3 `misleading` outcomes: counting the one being
folded, so the third `misleading` outcome is itself folded with the doubled α (0.3), and so is
every later outcome of that target, whatever it is (an `accepted` then moves it by 0.2).

The index keeps `observation_weights` and `observation_weight_history` for the indexed commit
as an unbound caller sees it; a reader bound to a tenant, at another commit, or with a ceiling
folds the feedback it can see with the same `fold` (read/scope.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..gitstore import Git
from .schema import NOW

INITIAL_WEIGHT = 1.0
ALPHA_SUCCESS = 0.1
ALPHA_FAILURE = 0.15
MISLEADING_THRESHOLD = 3  # from the third `misleading` outcome on (that one included), α doubles

# (target, feedback id, session, outcome, commit) of the feedback in `relation` that is not
# retracted, in fold order
FEEDBACK_SQL = """SELECT o.feedback_target, o.id, o.feedback_session, o.feedback_outcome, o."commit"
FROM {relation} AS o WHERE o.feedback_target IS NOT NULL AND o.row_id NOT IN ({retracted})
ORDER BY o.added_seq, o.timestamp, o.id"""

History = tuple[str, str, str | None, str, float, float, float, str]


def fold(events: Iterable[tuple[str, str, str | None, str, str]]) -> tuple[dict[str, tuple[float, int]], list[History]]:
    """Feedback events in order → (target → (weight, feedback count), history rows)."""
    weights: dict[str, tuple[float, int]] = {}
    misleading: dict[str, int] = {}
    history: list[History] = []
    for target, feedback_id, session, outcome, commit in events:
        weight, count = weights.get(target, (INITIAL_WEIGHT, 0))
        if outcome == "misleading":
            misleading[target] = misleading.get(target, 0) + 1
        alpha = ALPHA_SUCCESS if outcome == "accepted" else ALPHA_FAILURE
        if misleading.get(target, 0) >= MISLEADING_THRESHOLD:
            alpha *= 2
        signal = 1.0 if outcome == "accepted" else 0.0
        new = weight * (1 - alpha) + signal * alpha
        weights[target] = (new, count + 1)
        history.append((target, feedback_id, session, outcome, weight, new, alpha, commit))
    return weights, history


def feedback_events(con: Any, relation: str) -> list[tuple]:
    from .stewardship import retracted_sql

    return con.execute(FEEDBACK_SQL.format(relation=relation, retracted=retracted_sql(relation))).fetchall()


def refresh_weights(git: Git, con: Any, target: str) -> None:
    """Fill the weight tables for the indexed commit (every tenant; expired feedback left out).
    Folding is cheap next to a build (one pass over the feedback rows), so it is done whole."""
    from .stewardship import effective_relation

    effective, _, _ = effective_relation(con, git, target, f"(SELECT * FROM obs_versions WHERE removed_seq = {NOW})",
                                      prefix="build")
    relation = f"({effective})"
    weights, history = fold(feedback_events(con, relation))
    stored = con.execute("SELECT * FROM observation_weight_history ORDER BY rowid").fetchall()
    if stored == history:
        return  # most updates bring no feedback: the tables stay as they are (nothing to checkpoint)
    con.execute("DELETE FROM observation_weights")
    con.execute("DELETE FROM observation_weight_history")
    if not history:
        return
    import pyarrow as pa

    con.register("new_weights", pa.table({
        "observation_id": list(weights), "weight": pa.array([w for w, _ in weights.values()], pa.float64()),
        "feedback_count": pa.array([n for _, n in weights.values()], pa.int32())}))
    con.execute("INSERT INTO observation_weights SELECT * FROM new_weights ORDER BY observation_id")
    con.unregister("new_weights")
    columns = list(zip(*history))
    con.register("new_history", pa.table({
        "observation_id": columns[0], "feedback_id": columns[1], "session": pa.array(columns[2], pa.string()),
        "outcome": columns[3], "previous_weight": pa.array(columns[4], pa.float64()),
        "new_weight": pa.array(columns[5], pa.float64()), "alpha": pa.array(columns[6], pa.float64()),
        "commit": columns[7]}))
    con.execute("INSERT INTO observation_weight_history SELECT * FROM new_history")
    con.unregister("new_history")

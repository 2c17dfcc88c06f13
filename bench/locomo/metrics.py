"""Evidence recall over LoCoMo's answerable questions (categories 1-4), and latency figures.

For each question: R@k is the share of its evidence turns among the first k answers; hit@5 is 1
when any is among the first 5; MRR is 1 / the place of the first evidence turn (0 past the list).
Evidence that names no turn of the conversation (a handful of malformed ids) is left out, and a
question without any valid evidence is not counted.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int
    evidence: frozenset  # observation ids


def questions(data: list[dict], ids: dict[tuple[str, str], str]) -> list[Question]:
    found = []
    for sample in data:
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            turns = {t for e in qa.get("evidence", []) for t in re.split(r"[;,\s]+", e) if t}
            evidence = frozenset(ids[(sample["sample_id"], t)] for t in turns if (sample["sample_id"], t) in ids)
            if evidence:
                found.append(Question(sample["sample_id"], qa["question"], qa["category"], evidence))
    return found


def score(question: Question, answers: list[str]) -> dict[str, float]:
    first = next((i + 1 for i, a in enumerate(answers) if a in question.evidence), None)
    n = len(question.evidence)
    return {"R@1": len(question.evidence & set(answers[:1])) / n, "R@5": len(question.evidence & set(answers[:5])) / n,
            "R@10": len(question.evidence & set(answers[:10])) / n, "hit@5": float(first is not None and first <= 5),
            "MRR": 1.0 / first if first else 0.0}


def table(qs: list[Question], runs: dict[str, list[list[str]]]) -> str:
    """Per method, per category and overall: R@1, R@5, R@10, hit@5, MRR in percent."""
    lines = ["| method | category | n | R@1 | R@5 | R@10 | hit@5 | MRR |", "|---|---|---|---|---|---|---|---|"]
    for method, answers in runs.items():
        scored = [score(q, a) for q, a in zip(qs, answers)]
        groups = [(CATEGORIES[c], [s for q, s in zip(qs, scored) if q.category == c]) for c in CATEGORIES]
        for name, group in groups + [("all", scored)]:
            means = [100 * statistics.fmean(s[m] for s in group) for m in ("R@1", "R@5", "R@10", "hit@5", "MRR")]
            lines.append(f"| {method} | {name} | {len(group)} | " + " | ".join(f"{v:.1f}" for v in means) + " |")
    return "\n".join(lines)


def overall(qs: list[Question], answers: list[list[str]]) -> dict[str, float]:
    scored = [score(q, a) for q, a in zip(qs, answers)]
    return {m: round(100 * statistics.fmean(s[m] for s in scored), 1) for m in ("R@1", "R@5", "R@10", "hit@5", "MRR")}


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {1000 * statistics.median(ordered):.1f} ms, p95 {1000 * p95:.1f} ms"

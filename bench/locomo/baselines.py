"""The baselines ranked in the same run: bm25s (its defaults, English stop words) per
conversation, and bm25s fused with the same static model's cosine by obsrepo's `cc` formula
(α·max(cos, 0) + (1−α)·bm25/max(bm25); candidates every BM25 hit and the 100 nearest)."""

from __future__ import annotations

from typing import Any

from .convert import Turn


def _text(turn: Turn) -> str:
    event = " ".join(turn.text.split()) or "(an image)"
    return event + ("\n\nShared an image: " + turn.caption if turn.caption else "")


def rank(turns: list[Turn], ids: dict, questions: list, embed: Any = None, alpha: float = 0.5,
         limit: int = 10) -> dict[str, list[list[str]]]:
    """{"bm25s": answers, "bm25s+dense": answers}: per question, observation ids best first."""
    import bm25s
    import numpy as np

    by_conversation: dict[str, list[Turn]] = {}
    for turn in turns:
        by_conversation.setdefault(turn.conversation, []).append(turn)
    models, vectors = {}, {}
    for name, group in by_conversation.items():
        model = bm25s.BM25()
        model.index(bm25s.tokenize([_text(t) for t in group], stopwords="en", show_progress=False), show_progress=False)
        models[name] = model
        if embed is not None:
            matrix = np.asarray(embed([_text(t) for t in group]), dtype=np.float64)
            vectors[name] = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    out: dict[str, list[list[str]]] = {"bm25s": []}
    if embed is not None:
        out["bm25s+dense"] = []
    for q in questions:
        group = by_conversation[q.conversation]
        names = [ids[(t.conversation, t.turn)] for t in group]
        tokens = bm25s.tokenize([q.text], stopwords="en", show_progress=False)
        scores = models[q.conversation].get_scores(_words(tokens))
        lexical = np.asarray(scores, dtype=np.float64)
        order = np.lexsort((np.arange(len(names)), -lexical))
        out["bm25s"].append([names[i] for i in order[:limit] if lexical[i] > 0])
        if embed is not None:
            vector = np.asarray(embed([q.text])[0], dtype=np.float64)
            vector = vector / max(np.linalg.norm(vector), 1e-12)
            cosine = vectors[q.conversation] @ vector
            top = lexical.max()
            norm = lexical / top if top > 0 else np.zeros_like(lexical)
            candidates = set(np.flatnonzero(lexical > 0).tolist()) | set(np.argsort(-cosine, kind="stable")[:100].tolist())
            fused = {i: alpha * max(cosine[i], 0.0) + (1 - alpha) * norm[i] for i in candidates}
            best = sorted(fused, key=lambda i: (-fused[i], i))[:limit]
            out["bm25s+dense"].append([names[i] for i in best])
    return out


def _words(tokens: Any) -> list[str]:
    inverse = {v: k for k, v in tokens.vocab.items()}
    return [inverse[i] for i in tokens.ids[0]]

"""One document, no I/O: bytes → front matter and body with positions (the strict YAML policy,
`document.py`, `subset.py`, `syntax.py`), the models and their validation, the per-document
rules and facts (`rules.py`, `analyze.py`), the entity and retention schemas, the reference
reducer and field intervals, the vocabulary, the rule list, and the JSON Schemas generated from
the models (docs/design.md §2–§4).

It owns what a document means. It never touches git, DuckDB or the disk: callers hand it bytes
and take back values and `Issue`s, so every room above judges a document the same way.
"""

"""The gate: `check`, what may enter the repository (docs/design.md §2.5–§2.7, §12). Repository
rules over a `Facts` protocol (`judge.py`, `graph.py`: one judge whoever asks), immutability
commit by commit, the sources a check lists, the check's plan and report, and the derived
stores that make it cost what a change touches: the analysis cache, the facts store and the
lookup store of a base tree (docs/design.md, "Derived stores").

It reads documents through `gitstore` and `format/`. It never imports the index or DuckDB:
`obsrepo check` in a pre-commit hook starts without them.
"""

"""The read path (docs/design.md §5.5–§6, §12, §15): the read scope (commit view, tenant binding
and ceiling, built once per request, `scope.py`), queries and ranking, snapshots and the entity
questions, `sql`, review (`diff`, `show`), export, recall blocks, valid time, identity, and the
rows publication writes.

Every answer is asked through a `ReadScope`, so no read function has tenant code. It never
writes: not the index (the index's writer brings it up to date first), not git, not the work
tree.
"""

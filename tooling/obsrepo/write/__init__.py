"""The write path (docs/design.md §11, §14): `new` and the statements (`correct`, `retract`,
`relate`, `merge`, `feedback`, `reclassify`, `distinct`), each one new document, judged by the
gate's rules before anything moves; into the work tree as a file written whole, or as one
commit on a proposal branch made from git objects and published by compare-and-swap; and the
next version of a comprehension document.

It only ever adds a file; it never edits one in place (a comprehension's next version replaces
it whole, by a rename or a new blob). It asks no reader: what a statement needs of the truth (a
field's winner) is handed in by the operation that calls it.
"""

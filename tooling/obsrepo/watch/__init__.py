"""`obsrepo watch`: keep the index at the checked-out branch's tip and, as an overlay, the work
tree's valid uncommitted drafts (docs/design.md §13). An adapter above the library: `plan`
turns file-system events into updates (pure, tested on its own), `drafts` finds and checks
the drafts, `loop` runs watchdog and carries the updates out."""

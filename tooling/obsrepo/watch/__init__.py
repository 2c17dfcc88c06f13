"""`obsrepo watch`: keep the index at the checked-out branch's tip and, as an overlay, the work
tree's valid uncommitted drafts (docs/design.md §13). An adapter, through the door only: `plan`
turns file-system events into updates (pure, tested on its own), `loop` runs watchdog and
carries the updates out over `ops.live.LiveTree` (the index, the drafts and their judge, the
overlay)."""

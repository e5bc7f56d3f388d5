"""Monthly snapshots: selection, freezing, exports and the builder service (see `layout` for the files)."""

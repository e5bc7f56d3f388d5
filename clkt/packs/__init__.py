"""Result packs: a model measured elsewhere on a published snapshot, as files anyone can read and this service can
verify (the third track of DESIGN.md, *submitted*).

`format.py` the public format (`FORMAT_VERSION`), `pack.py` writing and reading one (verified), `archive.py` the
`.tar.gz` form and its safe extraction, `metrics.py` the metrics computed from the predictions, `open_answers.py` and
`open_metrics.py` the open track's answers (carried as text, checked and scored by the taker) and figures, `runner.py`
`clkt evaluate` (the GPU queue's own jobs, run by the local engine, no store), `intake.py` `clkt submit` (checked
against this store's snapshot, then stored once: `storage.submissions`). Not `storage.result_packs`, which packs
this store's own jobs' answers for the leaderboard.
"""

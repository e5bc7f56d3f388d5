"""What ranks (`clkt.report.verified_ranks`): rows run here and reproduced submissions, ranked among themselves; a
submitted row never re-run or flagged is left off, or listed apart unranked when asked for, and never pushes a
verified row down; every submitted row is labelled "not probed here"."""

from __future__ import annotations

from clkt.report.leaderboard_data import LeaderRow
from clkt.report.verified_ranks import NOT_PROBED, partition
from tests.report.test_leaderboard import _row


def _sub(target: str, value: float, ci: tuple[float, float], verified: str) -> LeaderRow:
    return _row(target, value, ci).model_copy(update={"track": "submitted", "verified": verified})


ROWS = [
    _row("here", 0.50, (0.45, 0.55)),
    _sub("checked", 0.40, (0.35, 0.44), "reproduced"),
    _sub("claims", 0.99, (0.97, 1.0), "not reproduced"),
    _sub("liar", 0.95, (0.9, 0.99), "flagged"),
]


def test_only_rows_run_here_and_reproduced_submissions_rank() -> None:
    rows, notes = partition(ROWS, show_unverified=False)
    assert [(r.target, r.rank, r.probe) for r in rows] == [("here", 1, ""), ("checked", 2, NOT_PROBED)]
    assert notes == ["2 submitted row(s) not verified here (flagged, not reproduced) are not shown and never ranked "
                     "(--unverified lists them apart)"]


def test_unverified_rows_are_listed_apart_unranked_when_asked_for() -> None:
    rows, notes = partition(ROWS, show_unverified=True)
    assert [(r.target, r.rank, r.verified) for r in rows] == [
        ("here", 1, ""), ("checked", 2, "reproduced"), ("claims", None, "not reproduced"), ("liar", None, "flagged")]
    assert all(r.probe == NOT_PROBED for r in rows[1:]) and "listed after the ranked ones" in notes[0]
    assert partition(ROWS[:2], show_unverified=False)[1] == []

"""What ranks on the leaderboard: the rows run here and the submitted rows reproduced here, nothing else.

A submitted row whose packs were never re-run here ("not reproduced") or whose re-run disagreed ("flagged") is a
claim this service has not checked: it is never ranked. By default it is left off the board (a note says how many
and how to list them); with `LeaderboardQuery.unverified` (`clkt leaderboard --unverified`, the page's `unverified=1`)
it is listed apart, after every ranked row, labelled, with no rank. The ranks of the rows that do rank are computed
among them alone (`clkt.report.leaderboard.rank_rows`), so an unverified row never pushes a verified one down.

Every submitted row is also labelled with its probe (`clkt.report.probed`): "probed here (k of n excluded)" when its
packs carried probe answers judged at intake, else "not probed here": no entity its model already knew is excluded
from its scores (rows run here exclude them).
"""

from __future__ import annotations

from collections.abc import Sequence

from clkt.report.leaderboard import rank_rows
from clkt.report.leaderboard_data import LeaderRow
from clkt.report.probed import NOT_PROBED

__all__ = ["NOT_PROBED", "RANKED_SUBMISSIONS", "partition"]

RANKED_SUBMISSIONS = frozenset({"reproduced"})  # a submitted row's `verified` that ranks


def _ranks(r: LeaderRow) -> bool:
    return r.track != "submitted" or r.verified in RANKED_SUBMISSIONS


def partition(rows: Sequence[LeaderRow], *, show_unverified: bool) -> tuple[list[LeaderRow], list[str]]:
    """The board's rows (see the module docstring) and the note on the rows left off or listed apart."""
    labelled = [r.model_copy(update={"probe": NOT_PROBED}) if r.track == "submitted" and not r.probe else r for r in rows]
    ranked = rank_rows([r for r in labelled if _ranks(r)])
    apart = sorted((r.model_copy(update={"rank": None, "tied": False}) for r in labelled if not _ranks(r)),
                   key=lambda r: (r.strategy, r.scorer, r.target))
    if not apart:
        return ranked, []
    kinds = ", ".join(sorted({r.verified or "unverified" for r in apart}))
    if show_unverified:
        return ranked + apart, [f"{len(apart)} submitted row(s) not verified here ({kinds}) are listed after the ranked "
                                "ones and never ranked"]
    return ranked, [f"{len(apart)} submitted row(s) not verified here ({kinds}) are not shown and never ranked "
                    "(--unverified lists them apart)"]

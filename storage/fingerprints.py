"""What the leaderboard reads, in a few numbers that change whenever it does (`window_fingerprint`): the keys of
the page's results and of `clkt leaderboard`'s kept results (`clkt.report.board_cache`).

Plain SQL over the tables' stable columns, without the ORM models: a command that finds its result kept pays for
one engine and these eight aggregates, not for importing every table's model.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["window_fingerprint"]

_WINDOW = (
    "SELECT count(*), max(built_at), sum(CASE WHEN status = 'frozen' THEN 1 ELSE 0 END) FROM snapshot",
    "SELECT count(*), max(updated_at), max(id) FROM gpu_job WHERE status = 'done'",
    "SELECT count(*), max(updated_at), sum(CASE WHEN status = 'ready' THEN 1 ELSE 0 END) FROM snapshot_target",
    "SELECT count(*), max(probed_at) FROM snapshot_exclusion",
    "SELECT count(*), max(created_at) FROM result_pack",
    # a submitted pack joins the board, a re-run marks its row (`storage.submissions`)
    "SELECT count(*), max(submitted_at), max(reproduced_at) FROM submitted_pack",
    # a retracted question leaves every view (`storage.leaderboard.retracted_questions`)
    "SELECT count(*), max(retracted_at) FROM retraction",
    # the jury's verdicts are the open track's open-jury rows (`clkt.report.open_board`)
    "SELECT count(*), max(graded_at) FROM open_judgement",
)


async def window_fingerprint(session: AsyncSession) -> tuple[object, ...]:
    """Counts, latest times and statuses of the snapshots, the finished jobs, the validity rows, the exclusions,
    the result packs, the submitted packs and the retractions."""
    out: list[object] = []
    for sql in _WINDOW:
        out.extend((await session.execute(text(sql))).one())
    return tuple(out)

"""A window's paper tables (`clkt.report.by_domain`) read from the store: the leaderboard's window and draws
(`clkt.report.window`), the domains of its entities, then Table 2 per domain, the size view and the asymmetry; the
multiple-choice scorers' groups in `cells` / `sizes` / `asymmetry`, the open track's layers (`clkt.report.open_board`:
open-normaliser, open-jury where the jury graded) apart in `open_cells` / `open_sizes` / `open_asymmetry`, each
computed as an MCQ group is, with the same draws, never pooled with them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from clkt.report.by_domain import DomainBoard, TransferPairs, asymmetry_rows, domain_cells, size_points
from clkt.report.leaderboard import group_answers, window_draws
from clkt.report.leaderboard_data import LeaderboardQuery, WindowInfo
from clkt.report.open_board import is_open
from clkt.report.window import Window, resolve_window
from storage.entity_domains import entity_domains

if TYPE_CHECKING:
    from storage.engine import Store

__all__ = ["build_domain_board", "load_domain_board"]


def build_domain_board(
    w: Window, q: LeaderboardQuery, *, domain_of: Mapping[int, str], transfer_pairs: TransferPairs = "learned",
    sizes: Mapping[str, tuple[str | None, float]] | None = None,
) -> DomainBoard:
    """The window's paper tables (CPU work: run it off the event loop); `sizes`: target -> (family, size_b)."""
    draws = window_draws(w.data, seed=q.seed, samples=q.samples)
    groups = {g: a for g, a in group_answers(w.data).items() if not q.targets or g[0] in q.targets}
    seen = {lang for p in w.data.packs for lang in p.langs}
    languages = [x for x in q.languages if x in seen] + sorted(seen - set(q.languages))
    mcq = {g: a for g, a in groups.items() if not is_open(g[2])}
    opened = {g: a for g, a in groups.items() if is_open(g[2])}
    cells, open_cells = (domain_cells(part, languages, domain_of=domain_of, draws=draws, transfer_pairs=transfer_pairs,
                                      min_questions=q.min_questions) for part in (mcq, opened))
    notes = list(w.notes)
    if not cells and not open_cells:
        notes.append("no finished results in the window" + (f" of {q.strategy}" if q.strategy else ""))
    return DomainBoard(
        spec=q.spec, window_from=w.label_from, window_to=w.label_to,
        snapshots=[WindowInfo(snapshot_id=s.id, period=s.period) for s in w.snapshots], languages=languages,
        transfer_pairs=transfer_pairs, bootstrap=q.samples, seed=q.seed, cells=cells,
        sizes=size_points(cells, sizes or {}), asymmetry=asymmetry_rows(mcq, languages), notes=notes,
        min_questions=q.min_questions, open_cells=open_cells, open_sizes=size_points(open_cells, sizes or {}),
        open_asymmetry=asymmetry_rows(opened, languages),
    )


async def load_domain_board(
    store: Store, q: LeaderboardQuery, *, transfer_pairs: TransferPairs = "learned",
    sizes: Mapping[str, tuple[str | None, float]] | None = None,
) -> DomainBoard:
    """Check the query (`LeaderboardError` otherwise), read the window and its entities' domains, build."""
    import numpy as np

    w = await resolve_window(store, q)
    ids = {int(e) for p in w.data.packs for e in np.frombuffer(p.entity_ids, dtype="<i8").tolist()}
    async with store.session() as s:
        domain_of = await entity_domains(s, ids)
    return await asyncio.to_thread(build_domain_board, w, q, domain_of=domain_of, transfer_pairs=transfer_pairs,
                                   sizes=sizes)

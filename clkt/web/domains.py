"""What the `/leaderboard/domains` page shows: the paper's tables over the window of a plain GET form (from, to,
strategy, scorer, transfer = learned | all): Table 2 per domain, the size view and the directional asymmetry
(`clkt.report.domain_board`), computed afresh for each request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clkt.config import SnapshotSettings, SpecSettings
from clkt.report.by_domain import DomainBoard
from clkt.report.domain_board import load_domain_board
from clkt.report.window import LeaderboardError, LeaderboardQuery, stored_scorers
from storage.engine import Store
from storage.leaderboard import known_names, window_snapshots

__all__ = ["DOMAIN_FIELDS", "DomainsView", "domains_form", "domains_view"]

DOMAIN_FIELDS = ("from", "to", "strategy", "scorer", "transfer")
_MAX_FIELD = 200


@dataclass(frozen=True, kw_only=True)
class DomainsView:
    form: dict[str, str]
    periods: list[str]
    strategies: list[str]
    scorers: list[str]
    board: DomainBoard | None = None
    error: str | None = None


def domains_form(query: Mapping[str, str]) -> dict[str, str]:
    """The form's fields, stripped; ValueError when one is too long or `transfer` is neither learned nor all."""
    out: dict[str, str] = {}
    for k in DOMAIN_FIELDS:
        v = query.get(k, "").strip()
        if len(v) > _MAX_FIELD:
            raise ValueError(f"{k}: too long")
        out[k] = v
    if out["transfer"] not in ("", "learned", "all"):
        raise ValueError(f"transfer: {out['transfer']!r}; known: learned, all")
    return out


async def domains_view(
    store: Store, *, spec: SpecSettings, snapshot: SnapshotSettings, form: dict[str, str]
) -> DomainsView:
    """The page's data; a query the store cannot answer gives `error` (the page answers 400 then)."""
    async with store.session() as s:
        periods = sorted({w.period for w in await window_snapshots(s, spec.name)})
        names = await known_names(s)

    def view(board: DomainBoard | None = None, error: str | None = None) -> DomainsView:
        return DomainsView(form=form, periods=periods, strategies=sorted(names.strategies), scorers=sorted(stored_scorers(names)),
                           board=board, error=error)

    if not periods:
        return view()
    q = LeaderboardQuery(
        spec=spec.name, cadence=snapshot.cadence, rolling_days=snapshot.rolling_days, period_from=form["from"] or None,
        period_to=form["to"] or None, strategy=form["strategy"] or None, scorer=form["scorer"] or None,
        languages=tuple(spec.languages), names=("from", "to"),
    )
    sizes = {t.name: (t.family, t.size_b) for t in spec.targets if t.size_b is not None}
    try:
        board = await load_domain_board(store, q, transfer_pairs="all" if form["transfer"] == "all" else "learned",
                                        sizes=sizes)
    except LeaderboardError as e:
        return view(error=str(e))
    return view(board)

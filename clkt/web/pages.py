"""The status pages: server-rendered HTML (jinja2, autoescaped), read-only.

    /                           overview: sources, stage queue and failures, GPU jobs, disk, cost, this period's fill
    /entities                   the entity table: search, filters (domain, source, status, dates, fresh), pages
    /entities/{id}              one entity: its document in every language, its questions, its probes
    /snapshots                  every snapshot with its manifest's counts and quotas
    /snapshots/{id}             one snapshot: counts, quotas filled, files, and its report (Table 2, Learn, ...)
    /publish                    publishing to the Hub: the publish queue, the revisions committed, the retractions
    /leaderboard                results pooled over a window of snapshots per target, a paired comparison, the
                                known-rate curves (`clkt.web.leaderboard`); /leaderboard/domains: the paper's tables
                                over the window (`clkt.web.domains`); its trend.png, known-rate.png,
                                predictions.csv and open-predictions.csv
    /files/snapshot/{id}/{path} a snapshot folder's file (read-only, traversal-safe)
    /files/report/{id}/{path}   a report folder's file
    /static/{name}              the stylesheet and the refresh script

`PageContext` is what a page needs from where it runs: the store, the sections of the configuration the pages
read and, inside the daemon, the live source board (the pollers' own), the pause reason and the daemon's
identity (`clkt serve` has no board). The wiring builds it (`clkt.services.page_context`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from aiohttp import web

from clkt import clock
from clkt.config import AgentSettings, DaemonSettings, HttpSettings, SnapshotSettings, SourcesSettings, SpecSettings
from clkt.cutoff import fresh_after
from clkt.facts import Domain
from clkt.pipeline.flow import STAGE_ORDER
from clkt.report.leaderboard_data import LeaderRow, PairCell
from clkt.report.metric_table import HEATMAP, PAIR_METRICS
from clkt.report.open_board import layer_of
from clkt.report.open_track import OPEN_TITLE
from clkt.report.submitted import REPRODUCED_AT, board_packs
from clkt.report.window import LeaderboardError
from clkt.report.writer import report_dir
from clkt.sources.board import SourceBoard
from clkt.status import publish_status
from clkt.web import views
from clkt.web.domains import domains_form, domains_view
from clkt.web.files import file_response, safe_join
from clkt.web.leaderboard import (
    BoardCache,
    form_of,
    known_rate_image,
    leaderboard_view,
    open_predictions_rows,
    predictions_rows,
    trend_image,
)
from clkt.web.security import HostGuard, security_middlewares
from storage.engine import Store
from storage.enums import EntityStatus
from storage.status_pages import MAX_OFFSET, EntityFilter, snapshot_info

__all__ = ["STATIC_DIR", "TEMPLATE_DIR", "PageContext", "add_pages", "pages_app"]

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "templates" / "pages"
STATIC_DIR = Path(__file__).resolve().parents[1] / "templates" / "static"
_STATIC = {"pages.css": "text/css; charset=utf-8", "refresh.js": "text/javascript; charset=utf-8", "favicon.png": "image/png"}


@dataclass(frozen=True, kw_only=True)
class PageContext:
    store: Store
    http: HttpSettings  # the Host check, the entity table's page size, the overview's reload
    spec: SpecSettings  # the freshness rule and the languages
    snapshot: SnapshotSettings  # this period and its quotas
    sources: SourcesSettings  # the configured sources and their rates
    agents: AgentSettings  # the monthly budget
    daemon: DaemonSettings  # the disk limit
    data_dir: Path  # reports, GPU jobs' progress, the disk shown
    offline_demo: bool = False
    board: SourceBoard | None = None
    paused: Callable[[], str | None] = lambda: None
    owner: str | None = None
    restarts: dict[str, int] = field(default_factory=dict)


CTX_KEY = web.AppKey("clkt_pages", PageContext)
ENV_KEY = web.AppKey("clkt_jinja", jinja2.Environment)
BOARD_KEY = web.AppKey("clkt_leaderboard", BoardCache)


# --- formatting filters --------------------------------------------------------------------------------

def _ts(v: datetime | None) -> str:
    if v is None:
        return "—"
    return v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _date(v: datetime | None) -> str:
    return "—" if v is None else v.astimezone(UTC).date().isoformat()


def _ago(v: datetime | None, now: datetime | None = None) -> str:
    if v is None:
        return "—"
    now = now or clock.now()
    s = (now - v).total_seconds()
    future = s < 0
    s = abs(s)
    txt = f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h" if s < 172800 else f"{s / 86400:.0f} d"
    return f"in {txt}" if future else f"{txt} ago"


def _usd(v: float | None) -> str:
    if v is None:
        return "—"
    return f"${v:,.2f}" if v >= 1 else f"${v:.4f}"


def _pct(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.{digits}f}%"


def _mb(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 1024:,.1f} GiB" if v >= 1024 else f"{v:,.0f} MiB"


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.0f} KiB" if n < 10 * 2**20 else f"{n / 2**20:,.1f} MiB"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, auto_reload=False,
    )
    env.filters.update(ts=_ts, date=_date, ago=_ago, usd=_usd, pct=_pct, mb=_mb, size=_size)
    env.globals.update(metrics=PAIR_METRICS, heatmap=HEATMAP)  # the report's metrics, a column each
    env.globals.update(layer_name=layer_of, open_title=OPEN_TITLE)  # the open track's section and its layers' names
    return env


def _render(request: web.Request, name: str, status: int = 200, **data: Any) -> web.Response:
    ctx = request.app[CTX_KEY]
    html = request.app[ENV_KEY].get_template(name).render(
        offline_demo=ctx.offline_demo, mode="daemon" if ctx.board is not None else "serve",
        active=data.pop("active", ""), refresh_s=data.pop("refresh_s", 0), **data,
    )
    return web.Response(status=status, text=html, content_type="text/html", charset="utf-8")


def _error(request: web.Request, status: int, message: str) -> web.Response:
    return _render(request, "error.html", status=status, title=f"{status}", message=message)


# --- handlers ------------------------------------------------------------------------------------------

async def overview(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    ov = await views.overview(
        ctx.store, sources=ctx.sources, snapshot=ctx.snapshot, agents=ctx.agents, daemon=ctx.daemon,
        data_dir=ctx.data_dir, offline_demo=ctx.offline_demo, board=ctx.board, paused=ctx.paused(), owner=ctx.owner,
        restarts=ctx.restarts, spec=ctx.spec,
    )
    stages = list(STAGE_ORDER)  # the flow's order (clkt.pipeline.flow)
    stages += sorted(set(ov.status.stages) - set(stages))
    return _render(request, "overview.html", title="Overview", active="overview", ov=ov, stages=stages,
                   statuses=["pending", "leased", "done", "failed", "cancelled"], refresh_s=ctx.http.refresh_s)


def _parse_date(value: str, name: str) -> datetime:
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name}: {value[:40]!r} is not a date (YYYY-MM-DD)") from None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


async def entity_list(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    q = request.query
    size = ctx.http.page_size
    form = {k: q.get(k, "").strip()[:200] for k in ("q", "domain", "source", "status", "since", "until", "scope", "page")}
    form["scope"] = form["scope"] or "fresh"  # the table shows fresh entities unless asked for all
    try:
        if form["scope"] not in ("fresh", "all"):
            raise ValueError(f"scope: {form['scope'][:40]!r} is neither 'fresh' nor 'all'")
        if form["domain"] and form["domain"] not in {d.value for d in Domain}:
            raise ValueError(f"domain: unknown {form['domain'][:40]!r}")
        if form["status"] and form["status"] not in {s.value for s in EntityStatus}:
            raise ValueError(f"status: unknown {form['status'][:40]!r}")
        if len(form["source"]) > 64:
            raise ValueError("source: too long")
        since = _parse_date(form["since"], "since") if form["since"] else None
        until = _parse_date(form["until"], "until") + timedelta(days=1) if form["until"] else None
        page = int(form["page"]) if form["page"] else 1
        if page < 1:
            raise ValueError("page: must be 1 or more")
    except ValueError as e:
        return _error(request, 400, str(e))
    fresh_from = fresh_after(ctx.spec)
    if form["scope"] == "fresh":
        since = max(since, fresh_from) if since else fresh_from
    offset = min((page - 1) * size, MAX_OFFSET)
    f = EntityFilter(search=form["q"] or None, domain=form["domain"] or None, source=form["source"] or None,
                     status=form["status"] or None, occurred_after=since, occurred_before=until, offset=offset, limit=size)
    result = await views.entities(ctx.store, f)
    pages = max(1, math.ceil(result.total / size))
    last_page = min(pages, MAX_OFFSET // size + 1)
    keep = {k: v for k, v in form.items() if v and k != "page" and not (k == "scope" and v == "fresh")}

    def link(p: int) -> str:
        return "/entities?" + urlencode({**keep, "page": str(p)})

    return _render(
        request, "entities.html", title="Fresh entities", active="entities", form=form, result=result, page=page,
        pages=pages, last_page=last_page, link=link, domains=[d.value for d in Domain], statuses=[s.value for s in EntityStatus],
        sources=await views.sources_for_filter(ctx.store), fresh_from=fresh_from,
        buffer_days=ctx.spec.temporal_buffer_days,
    )


async def entity_page(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    raw = request.match_info["id"]
    if not raw.isdigit() or len(raw) > 18:
        return _error(request, 404, "no such entity")
    detail = await views.entity(ctx.store, int(raw))
    if detail is None:
        return _error(request, 404, "no such entity")
    langs = sorted({d.lang for d in detail.documents} | {t.lang for q in detail.questions for t in q.translations})
    return _render(request, "entity.html", title=detail.row.name[:80], active="entities", e=detail, langs=langs,
                   languages=list(ctx.spec.languages))


async def snapshot_list(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    snaps = await views.snapshot_list(ctx.store)
    return _render(request, "snapshots.html", title="Snapshots", active="snapshots", snaps=snaps)


async def snapshot_page(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    sid = request.match_info["id"]
    if len(sid) > 160:
        return _error(request, 404, "no such snapshot")
    view = await views.snapshot_view(ctx.store, sid, data_dir=ctx.data_dir)
    if view is None:
        return _error(request, 404, "no such snapshot")
    return _render(request, "snapshot.html", title=f"Snapshot {sid}", active="snapshots", v=view)


async def publish_page(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    return _render(request, "publish.html", title="Publishing", active="publish", pub=await publish_status(ctx.store))


async def snapshot_file(request: web.Request) -> web.StreamResponse:
    ctx = request.app[CTX_KEY]

    async with ctx.store.session() as s:
        info = await snapshot_info(s, request.match_info["id"][:160])
    root = Path(info.export_path) if info is not None and info.export_path else None
    path = safe_join(root, request.match_info["path"]) if root is not None else None
    if path is None:
        return _error(request, 404, "no such file")
    return file_response(path)


async def report_file(request: web.Request) -> web.StreamResponse:
    ctx = request.app[CTX_KEY]

    async with ctx.store.session() as s:
        info = await snapshot_info(s, request.match_info["id"][:160])
    path = safe_join(report_dir(ctx.data_dir, info.id), request.match_info["path"]) if info is not None else None
    if path is None:
        return _error(request, 404, "no such file")
    return file_response(path)


async def leaderboard(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    try:
        form = form_of(request.query)
    except ValueError as e:
        return _error(request, 400, str(e))
    v = await leaderboard_view(ctx.store, request.app[BOARD_KEY], spec=ctx.spec, snapshot=ctx.snapshot, form=form)
    return _render(request, "leaderboard.html", status=400 if v.error else 200, title="Leaderboard", active="leaderboard", v=v,
                   pairs_of=_pairs_of, submitted_packs=board_packs, reproduced_at=REPRODUCED_AT)


def _pairs_of(row: LeaderRow, languages: list[str]) -> list[tuple[str, list[PairCell | None]]]:
    """A row's language pairs as the heatmap's rows: (train language, the cell of each test language or None)."""
    by = {(p.train_lang, p.test_lang): p for p in row.pairs}
    return [(lt, [by.get((lt, ls)) for ls in languages]) for lt in row.train_langs]


async def leaderboard_image(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    try:
        form = form_of(request.query)
        if request.match_info["name"] == "trend.png":
            png = await trend_image(ctx.store, request.app[BOARD_KEY], spec=ctx.spec, snapshot=ctx.snapshot, form=form)
        else:
            png = await known_rate_image(ctx.store, request.app[BOARD_KEY], spec=ctx.spec)
    except (ValueError, LeaderboardError) as e:
        return web.Response(status=400, text=str(e), content_type="text/plain")
    return web.Response(body=png, content_type="image/png")


async def leaderboard_domains(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    try:
        form = domains_form(request.query)
    except ValueError as e:
        return _error(request, 400, str(e))
    v = await domains_view(ctx.store, spec=ctx.spec, snapshot=ctx.snapshot, form=form)
    return _render(request, "leaderboard_domains.html", status=400 if v.error else 200, title="Leaderboard by domain",
                   active="leaderboard", v=v)


async def leaderboard_csv(request: web.Request) -> web.StreamResponse:
    """`predictions.csv` (the MCQ answers) or `open-predictions.csv` (the open track's, with the jury's verdicts)."""
    import csv
    import io

    ctx = request.app[CTX_KEY]
    name = request.match_info.get("name", "predictions.csv")
    rows_of = open_predictions_rows if name == "open-predictions.csv" else predictions_rows
    try:
        rows = rows_of(ctx.store, spec=ctx.spec, snapshot=ctx.snapshot, form=form_of(request.query))
        first = await anext(rows)
    except (ValueError, LeaderboardError) as e:
        return web.Response(status=400, text=str(e), content_type="text/plain")
    resp = web.StreamResponse(headers={"Content-Type": "text/csv; charset=utf-8",
                                       "Content-Disposition": f'attachment; filename="{name}"'})
    await resp.prepare(request)
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(first)
    async for row in rows:
        out.writerow(row)
        if buf.tell() > 1 << 16:
            await resp.write(buf.getvalue().encode("utf-8"))
            buf.seek(0)
            buf.truncate()
    await resp.write(buf.getvalue().encode("utf-8"))
    await resp.write_eof()
    return resp


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info.get("name", "favicon.png")
    if name not in _STATIC:
        raise web.HTTPNotFound()
    return web.FileResponse(STATIC_DIR / name, headers={"Content-Type": _STATIC[name]})


def add_pages(app: web.Application, ctx: PageContext) -> None:
    """The pages' routes on an existing application (the daemon's endpoint)."""
    app[CTX_KEY] = ctx
    app[ENV_KEY] = _env()
    app[BOARD_KEY] = BoardCache()
    app.add_routes([
        web.get("/", overview),
        web.get("/entities", entity_list),
        web.get("/entities/{id}", entity_page),
        web.get("/snapshots", snapshot_list),
        web.get("/snapshots/{id}", snapshot_page),
        web.get("/publish", publish_page),
        web.get("/leaderboard", leaderboard),
        web.get("/leaderboard/domains", leaderboard_domains),
        web.get("/leaderboard/{name:trend\\.png|known-rate\\.png}", leaderboard_image),
        web.get("/leaderboard/{name:predictions\\.csv|open-predictions\\.csv}", leaderboard_csv),
        web.get("/files/snapshot/{id}/{path:.+}", snapshot_file),
        web.get("/files/report/{id}/{path:.+}", report_file),
        web.get("/static/{name}", static),
        web.get("/favicon.ico", static),
    ])


def pages_app(ctx: PageContext) -> web.Application:
    """A stand-alone application with the pages behind the guards (`clkt serve`, tests)."""
    guard = HostGuard(host=ctx.http.host, allowed=ctx.http.allowed_hosts)
    app = web.Application(middlewares=security_middlewares(guard))
    add_pages(app, ctx)
    return app

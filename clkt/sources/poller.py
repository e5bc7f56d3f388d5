"""`SourcePoller`: the daemon service (`source:<name>`) that crawls one source continuously.

One cycle reads the window `[watermark - overlap, now)` (or `[now - lookback_days, now)` the first time)
page by page. After every page the cursor (window, next page) is persisted, so a restart resumes at the
page it was on: no gap, no re-crawl. At the end of the window the watermark moves to its end.

For every reference of a page: fetch the record (bounded by the source's concurrency), render its English
canonical document, then in ONE transaction upsert the entity by (source, external id) and content hash,
store the document and enqueue the gate task. A `PayloadError` skips the record with a counted reason
(`SkipCount`, metric, log); it never stops the poller. So does ANY other exception one record raises
(`record_failed`, `render_failed`, `store_failed`, with its type), and a list page's items that do not
parse (`PollPage.skipped`): the page and its neighbours go on. Only a store that cannot be written
(locked, gone: `storage.entities.store_unavailable`) ends the cycle at its page, since skipping would lose good records.
Whatever else escapes a cycle is logged (redacted) and the poller waits and tries again: it never ends
the service. A record whose fetch fails transiently through the
client's retries ends the cycle at its page (retried next cycle), and is skipped (`fetch_failed`) only after
`FETCH_RETRY_CYCLES` cycles. A failing list page, a refused key (401/403) or a block
(`SourceBlocked`: rate limit, open circuit) ends the cycle without moving the cursor past the page, and
the poller waits (the block's own delay, or `poll_interval_s`) before trying the same page again. A list
page that keeps failing with a `PayloadError` (it does not decode, is too large, is not an object...) is
skipped (`page_failed`) after `FETCH_RETRY_CYCLES` cycles: the cursor moves to the next page (or, for a
single-page source, past the window), so no page stalls a source for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pydantic import SecretStr

from clkt._tasks import cancel_and_wait
from clkt.config import DaemonSettings, SecretLookup, SourceSettings, SourcesSettings
from clkt.context import ServiceContext
from clkt.documents import render_document
from clkt.errors import ClktError, ConfigError, PayloadError, SourceBlocked, SourceError, SourceHttpError
from clkt.facts import Domain, EntityRecord
from clkt.logs import redact
from clkt.sources.base import PollPage, Source, SourceRef, Window
from clkt.sources.board import SourceBoard
from clkt.sources.http import SourceClient
from clkt.sources.registry import SOURCE_TYPES
from storage.entities import (
    UpsertOutcome,
    existing_ids,
    load_cursor,
    record_skip,
    save_cursor,
    store_unavailable,
    upsert_entity,
)
from storage.enums import Stage
from storage.tasks import enqueue

__all__ = ["CycleReport", "SourcePoller", "source_services"]

log = logging.getLogger(__name__)


class CycleReport:
    """What one cycle did (returned by `run_cycle`, for tests and the bench)."""

    def __init__(self) -> None:
        self.pages = 0
        self.inserted = 0
        self.updated = 0
        self.unchanged = 0
        self.skipped: dict[str, int] = {}
        self.completed = False  # the window was read to its end

    def __repr__(self) -> str:
        return (f"CycleReport(pages={self.pages}, inserted={self.inserted}, updated={self.updated}, "
                f"unchanged={self.unchanged}, skipped={self.skipped}, completed={self.completed})")


class SourcePoller:
    MIN_BLOCK_WAIT_S: ClassVar[float] = 1.0
    FETCH_RETRY_CYCLES: ClassVar[int] = 5  # cycles a transiently failing record is retried before it is skipped
    MAX_SKIPPED_PAGE: ClassVar[int] = 1000  # past this page number a failing page ends the window instead

    def __init__(
        self, *, source_name: str, settings: SourceSettings, daemon: DaemonSettings, board: SourceBoard,
        api_key: SecretStr | None = None,
    ) -> None:
        """`settings`: this source's section (`settings.sources.<name>`); `daemon`: the gate tasks' `max_attempts`;
        `board`: where the status pages read what this poller does; `api_key`: the value of its `api_key_env`."""
        if source_name not in SOURCE_TYPES:
            raise ConfigError(f"sources.{source_name}", f"no crawler for this source; known: {sorted(SOURCE_TYPES)}")
        field = SourcesSettings.model_fields.get(source_name)
        expected = field.annotation if field is not None else None
        if isinstance(expected, type) and not isinstance(settings, expected):
            raise ConfigError(f"sources.{source_name}", f"takes {expected.__name__}, not {type(settings).__name__}")
        self.source_name = source_name
        self.settings = settings
        self.daemon = daemon
        self.board = board
        self.api_key = api_key
        self.name = f"source:{source_name}"
        self._source: Source[Any] | None = None
        self._fetch_failures: dict[str, int] = {}
        self._page_failures: dict[tuple[str, int], int] = {}

    def build_source(self, ctx: ServiceContext) -> Source[Any]:
        if self._source is None:
            client = SourceClient(
                name=self.source_name, settings=self.settings, session=ctx.http, metrics=ctx.metrics,
                api_key=self.api_key,
            )
            self._source = SOURCE_TYPES[self.source_name](client=client, settings=self.settings)
            self.board.register(self.source_name, client)
        return self._source

    async def run(self, ctx: ServiceContext) -> None:
        source = self.build_source(ctx)
        try:
            source.check()
        except ConfigError as e:
            log.error("%s disabled: %s", self.name, e)
            await ctx.stopping.wait()
            return
        while not ctx.stopping.is_set():
            wait = self.settings.poll_interval_s
            self.board.cycle_started(self.source_name)
            report: CycleReport | None = None
            result, detail = "ok", ""
            try:
                report = await self.run_cycle(ctx)
                log.info("%s cycle: %r", self.name, report)
                if not report.completed:
                    result = "partial"
            except SourceBlocked as e:
                wait = max(self.MIN_BLOCK_WAIT_S, e.retry_after_s or self.settings.breaker_reset_s)
                result, detail = "blocked", str(e)
                log.warning("%s blocked: %s; retrying in %.0fs", self.name, e, wait)
            except (SourceError, ClktError) as e:
                wait = min(wait, max(self.MIN_BLOCK_WAIT_S, self.settings.breaker_reset_s))
                result, detail = "failed", str(e)
                log.warning("%s cycle failed: %s; retrying in %.0fs", self.name, e, wait)
            except Exception as e:
                wait = min(wait, max(self.MIN_BLOCK_WAIT_S, self.settings.breaker_reset_s))
                result, detail = "failed", f"{type(e).__name__}: {e}"
                log.exception("%s cycle failed unexpectedly; retrying in %.0fs", self.name, wait)

            self.board.cycle_ended(
                self.source_name, result=result, detail=redact(detail), next_in_s=wait,
                pages=report.pages if report else 0, inserted=report.inserted if report else 0,
                updated=report.updated if report else 0, skipped=sum(report.skipped.values()) if report else 0,
            )
            if await ctx.sleep(wait):
                break

    async def _window(self, ctx: ServiceContext) -> tuple[Window, int, datetime | None]:
        async with ctx.store.session() as s:
            cur = await load_cursor(s, self.source_name)
        now = ctx.clock()
        if cur is not None and cur.page > 0 and cur.state.get("window_start") and cur.state.get("window_end"):
            w = Window(start=datetime.fromisoformat(cur.state["window_start"]),
                       end=datetime.fromisoformat(cur.state["window_end"]))
            return w, cur.page, cur.watermark
        watermark = cur.watermark if cur is not None else None
        start = (now - timedelta(days=self.settings.lookback_days) if watermark is None
                 else watermark - timedelta(hours=self.settings.overlap_hours))
        return Window(start=start, end=max(now, start)), 1, watermark

    async def run_cycle(self, ctx: ServiceContext) -> CycleReport:
        """Read one window to its end (or until stopping / a failure); persist the cursor after each page."""
        source = self.build_source(ctx)
        report = CycleReport()
        window, page, watermark = await self._window(ctx)
        state = {"window_start": window.start.isoformat(), "window_end": window.end.isoformat()}
        while not ctx.stopping.is_set():
            try:
                result = await source.poll(window, page)
            except PayloadError as e:
                key = (state["window_start"], page)
                n = self._page_failures[key] = self._page_failures.get(key, 0) + 1
                if n < self.FETCH_RETRY_CYCLES:
                    raise
                await self._skip(ctx, "page_failed", f"page {page} after {n} cycles: {e}", report)
                more = source.paged and page < self.MAX_SKIPPED_PAGE
                result = PollPage(refs=[], next_page=page + 1 if more else None)
            refs = result.refs
            if result.not_modified:
                async with ctx.store.session() as s:
                    known = await existing_ids(s, self.source_name, [r.external_id for r in refs])
                refs = [r for r in refs if r.external_id not in known]
            for reason, detail in result.skipped:
                await self._skip(ctx, reason, f"page {page}: {detail}", report)
            await self._ingest_page(ctx, source, refs, report)
            report.pages += 1
            async with ctx.store.transaction() as s:
                if result.next_page is None:
                    await save_cursor(s, self.source_name, watermark=window.end, page=0, state={})
                else:
                    await save_cursor(s, self.source_name, watermark=watermark, page=result.next_page, state=state)
            if result.next_page is None:
                report.completed = True
                break
            page = result.next_page
        return report

    async def _ingest_page(
        self, ctx: ServiceContext, source: Source[Any], refs: list[SourceRef], report: CycleReport
    ) -> None:
        sem = asyncio.Semaphore(self.settings.concurrency)

        async def one(ref: SourceRef) -> None:
            async with sem:
                try:
                    record = await source.fetch(ref)
                except PayloadError as e:
                    await self._skip(ctx, e.reason, f"{ref.external_id}: {e.detail}", report)
                    return
                except SourceHttpError as e:
                    if e.status in (401, 403):
                        raise  # the key or the User-Agent is refused: stop the cycle, nothing to skip
                    await self._skip(ctx, "fetch_failed", f"{ref.external_id}: {e}", report)
                    return
                except SourceBlocked:
                    raise  # the whole source is paused (rate limit, open circuit): retry this page later
                except SourceError as e:
                    # this one record kept failing (5xx, timeouts, bodies that do not decode) through the
                    # client's retries: end the cycle without moving the cursor past this page, so the next
                    # cycle fetches it again; only after FETCH_RETRY_CYCLES such cycles is it skipped, counted
                    n = self._fetch_failures[ref.external_id] = self._fetch_failures.get(ref.external_id, 0) + 1
                    if n < self.FETCH_RETRY_CYCLES:
                        raise
                    await self._skip(ctx, "fetch_failed", f"{ref.external_id}: {e}", report)
                    return
                except Exception as e:  # noqa: BLE001 - one record's failure, whatever it is, is its skip
                    await self._skip(ctx, "record_failed", f"{ref.external_id}: {type(e).__name__}: {e}", report)
                    return
                await self._ingest(ctx, record, report)

        tasks = [asyncio.create_task(one(r), name=f"{self.name}:{r.external_id}") for r in refs]
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_and_wait(tasks)

    async def _ingest(self, ctx: ServiceContext, record: EntityRecord, report: CycleReport) -> None:
        try:
            doc = render_document(record.facts, "en")
        except Exception as e:  # noqa: BLE001 - a record the renderer cannot take is that record's skip
            await self._skip(ctx, "render_failed", f"{record.external_id}: {type(e).__name__}: {e}", report)
            return
        try:
            async with ctx.store.transaction() as s:
                res = await upsert_entity(s, record, doc)
                if res.outcome is UpsertOutcome.inserted:
                    await enqueue(s, Stage.gate, res.entity_id, "", max_attempts=self.daemon.max_attempts)
        except Exception as e:
            if store_unavailable(e):
                raise  # the store itself fails (locked, gone): end the cycle at this page, lose nothing
            await self._skip(ctx, "store_failed", f"{record.external_id}: {type(e).__name__}: {e}", report)
            return
        if res.outcome is UpsertOutcome.inserted:
            report.inserted += 1
        elif res.outcome is UpsertOutcome.updated:
            report.updated += 1
        else:
            report.unchanged += 1
        if res.outcome is not UpsertOutcome.unchanged:
            ctx.metrics.entities_ingested.labels(self.source_name, res.outcome.value).inc()
            log.info("%s %s entity %s %r", self.name, res.outcome.value, record.external_id, record.name)

    async def _skip(self, ctx: ServiceContext, reason: str, detail: str, report: CycleReport) -> None:
        detail = redact(detail)
        report.skipped[reason] = report.skipped.get(reason, 0) + 1
        ctx.metrics.records_skipped.labels(self.source_name, reason).inc()
        log.info("%s skipped a record (%s): %s", self.name, reason, detail[:300])
        async with ctx.store.transaction() as s:
            await record_skip(s, self.source_name, reason, detail)


def source_services(
    *, sources: SourcesSettings, domains: Sequence[Domain], daemon: DaemonSettings, board: SourceBoard,
    secret: SecretLookup,
) -> list[SourcePoller]:
    """One poller per enabled source that has a crawler (and whose domain the spec asks for), all on `board`."""
    wanted = {d.value for d in domains}
    out = []
    for name, src in sorted(sources.items()):
        if not src.enabled or name not in SOURCE_TYPES:
            continue
        if SOURCE_TYPES[name].domain.value not in wanted:
            continue
        out.append(SourcePoller(source_name=name, settings=src, daemon=daemon, board=board,
                                api_key=secret(src.api_key_env)))
    return out

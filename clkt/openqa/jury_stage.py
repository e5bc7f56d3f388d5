"""Service `open-jury`: the open track's jury (issue 47 item 3), a daemon stage of its own beside the GPU queue.

A GPU job's commit stores each open answer with the normaliser's verdict (`storage.open_results`) and never waits on
an LLM, nor does the in-context track's short answers' run (`clkt.incontext.open_track`); this stage then grades the
answers of finished jobs and the in-context short answers (`clkt.openqa.jury_sources.SOURCES`: each kind read from
and written to its own tables, one after the other in a pass, by the same code and rules) with the configured jury
(`[agents.jury]`, `agents.jury.Jury`), every answer (the jury is a layer beside the normaliser, compared on the same answers; an empty
one is NOT_ATTEMPTED at no cost), in batches of `batch_size`, `concurrency` answers at a time. It runs only when a
jury is configured (`JuryStage.wanted`).

- **Through the agents' stack**: each judge's model is `CachedModel(RateLimitedModel(...))` from the daemon's LLM
  backend's `ModelFactory` when it has one (the providers' limiters and the budget shared with the agent roles),
  else a factory of its own over the store's call cache. The judges are asked online (never in provider batches).
- **Crash-safe and idempotent**: a batch's rows are written in one transaction, one row per (answer, judge) plus the
  jury's (a unique key; a re-grade writes over); a kill between the grading and the write grades the batch again
  from the call cache, at no cost. An answer graded by this jury (`panel_of`: its judges and prompt version) is not
  graded again; another jury grades everything again.
- **A judge's failure** (no verdict, malformed output, a timeout, an HTTP error after the provider's retries) is
  stored with its reason and the jury's verdict is the others' majority, or undecided (never guessed); the answer is
  graded again on a later pass (the failed judge's call is asked again, the others' replayed from the cache) until
  `max_attempts` passes. A malformed reply is in the call cache: asking again replays it, so only a transient
  failure (timeout, HTTP) can turn into a verdict.
- **A spent budget** (`BudgetExhausted`) stops the pass with the answers graded so far written and the one in
  progress not (no half rows), and pauses the stage until the next month, as the other paid stages.
- When a pass leaves no answer of a snapshot to grade, `on_graded(store, snapshot_id)` runs (the wiring rewrites the
  snapshot's report so that it shows the jury's figure: `clkt.services.jury_report_hook`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypeVar, cast

from agents.jury import Jury, JurySettings
from clkt.errors import UserError
from clkt.openqa.jury_grading import BatchOutcome, Gradable, GradedRows, QuestionBook, grade_batch, panel_of
from clkt.openqa.jury_sources import SOURCES, JurySource
from clkt.pipeline._entities import next_month
from storage.snapshots import find_snapshot

if TYPE_CHECKING:
    from clkt.config import AgentSettings, DaemonSettings, SecretLookup
    from clkt.context import ServiceContext
    from storage.engine import Store

__all__ = ["JuryPass", "JuryStage", "OnGraded"]

log = logging.getLogger(__name__)

OnGraded = Callable[["Store", str], Awaitable[None]]
A = TypeVar("A", bound=Gradable[GradedRows])
G = TypeVar("G", bound=GradedRows)


@dataclass
class JuryPass:
    """What one pass did."""

    graded: int = 0  # answers whose rows were written (those whose question was not found included)
    by_track: Counter[str] = field(default_factory=Counter)  # of those, per source ("parametric", "in-context")
    skipped: int = 0  # answers whose question could not be found (stored undecided, with why)
    verdicts: Counter[str] = field(default_factory=Counter)  # the jury's; "undecided" for no majority
    budget_spent: str | None = None
    touched: set[str] = field(default_factory=set)  # snapshots whose answers this pass graded
    completed: list[str] = field(default_factory=list)  # of those, the ones with nothing left to grade after it


class JuryStage:
    """Service `open-jury` (see the module)."""

    name = "open-jury"

    def __init__(
        self, *, agents: AgentSettings, daemon: DaemonSettings, secret: SecretLookup, burst: bool = False,
        on_graded: OnGraded | None = None,
    ) -> None:
        if not agents.jury.enabled:
            raise UserError("the open-jury stage needs a jury: [agents.jury] judges is empty")
        self.agents = agents
        self.config = agents.jury
        self.secret = secret
        self.poll_interval_s = daemon.poll_interval_s
        self.burst = burst
        self.on_graded = on_graded
        self.jury: Jury | None = None
        self.book = QuestionBook()
        self.paused_until: datetime | None = None  # a spent budget: no pass before then
        self.last_pass: JuryPass | None = None  # the latest only: a daemon passes every poll for a year

    @staticmethod
    def wanted(agents: AgentSettings) -> bool:
        """Whether the daemon runs it: a jury is configured."""
        return agents.jury.enabled

    @property
    def panel(self) -> str:
        return panel_of(self.config.judges, self._jury_or_raise().prompt_version)

    def build_jury(self, ctx: ServiceContext) -> Jury:
        """The jury over the daemon's LLM backend's factory when it has one, else over a factory of its own."""
        if self.jury is None:
            from agents.factory import ModelFactory
            from storage.llm_cache import SqlCallCache

            factory = getattr(ctx.agent_backend, "factory", None)
            if not isinstance(factory, ModelFactory):
                factory = ModelFactory(agents=self.agents, secret=self.secret, cache=SqlCallCache(ctx.store))
            self.jury = Jury(settings=JurySettings.of(self.config), factory=factory)
        return self.jury

    def _jury_or_raise(self) -> Jury:
        if self.jury is None:
            raise UserError("the jury is built by the first pass (build_jury)")
        return self.jury

    async def run(self, ctx: ServiceContext) -> None:
        while True:
            await self.run_once(ctx)
            if self.burst or await ctx.sleep(self.poll_interval_s):
                return

    async def run_once(self, ctx: ServiceContext) -> JuryPass:
        """One pass over what is left to grade (nothing while the budget is spent)."""
        done = JuryPass()
        if self.paused_until is not None and ctx.clock() < self.paused_until:
            return done
        self.build_jury(ctx)
        retry_before = ctx.clock() - timedelta(seconds=self.config.retry_after_s)
        parametric, incontext = SOURCES  # one after the other; a spent budget stops the pass
        if not await self._pass(ctx, parametric, done, retry_before):
            await self._pass(ctx, incontext, done, retry_before)
        await self._finish(ctx, done)
        return done

    async def _pass(self, ctx: ServiceContext, source: JurySource[A, G], done: JuryPass, retry_before: datetime) -> bool:
        """Grade what `source` has left, batch by batch; True when the budget stopped it."""
        cursor: A | None = None
        while not ctx.stopping.is_set():
            async with ctx.store.session() as s:
                batch = await source.pending(s, panel=self.panel, max_attempts=self.config.max_attempts,
                                             limit=self.config.batch_size, after=cursor, retry_before=retry_before)
            if not batch:
                return False
            cursor = batch[-1]
            if await self._grade(ctx, source, batch, done):
                return True
        return False

    async def _grade(self, ctx: ServiceContext, source: JurySource[A, G], batch: list[A], done: JuryPass) -> bool:
        """Grade and write one batch; True when the budget stopped it."""
        unread = sorted({a.snapshot_id for a in batch if not self.book.known(a.snapshot_id)})
        async with ctx.store.session() as s:
            for sid in unread:
                snap = await find_snapshot(s, sid)
                self.book.load(sid, snap.export_path if snap is not None else None)
        answers = cast("list[Gradable[G]]", batch)  # a source's answers build its own rows (A is Gradable[G])
        out: BatchOutcome[G] = await grade_batch(self._jury_or_raise(), answers, self.book,
                                                 concurrency=self.config.concurrency)
        async with ctx.store.transaction() as s:
            await source.write(s, out.graded, panel=self.panel)
        done.graded += len(out.graded)
        done.by_track[source.name] += len(out.graded)
        graded = {source.graded_key(g) for g in out.graded}
        done.touched.update(a.snapshot_id for a in batch if source.key(a) in graded)
        done.skipped += out.skipped
        done.verdicts.update(out.verdicts)
        if out.budget_spent is not None:
            done.budget_spent = out.budget_spent
            self.paused_until = next_month(ctx.clock())
            log.warning("open-jury paused until %s: %s", f"{self.paused_until:%Y-%m-%d}", out.budget_spent)
            return True
        return False

    async def _finish(self, ctx: ServiceContext, done: JuryPass) -> None:
        self.last_pass = done
        if not done.graded:
            return
        jury = self._jury_or_raise()
        log.info("open-jury: %d answer(s) graded (%s; %s); failed votes so far: %s", done.graded,
                 dict(done.by_track), dict(done.verdicts), dict(jury.stats.failed) or "none")
        left: Counter[str] = Counter()
        async with ctx.store.session() as s:
            for source in SOURCES:
                left.update(await source.left(s, panel=self.panel, max_attempts=self.config.max_attempts))
        done.completed = sorted(sid for sid in done.touched if not left.get(sid))
        if self.on_graded is not None:
            for sid in done.completed:
                await self.on_graded(ctx.store, sid)

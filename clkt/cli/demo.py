"""`clkt demo`: the daemon's whole flow on the embedded offline default, once; exits when the report exists, after
the embedded target's in-context track (`clkt.incontext.demo_track`) is in it.

The recorded data are re-dated into the days before "today" (`replay.redate`), and the dates are in the documents,
the questions and the snapshot's content hash (which seeds the options' order): on the system clock the demo's
figures would change from one day to the next. So the demo runs on a fixed calendar, `DEMO_DAY` at noon UTC
(`--date` another day, `--date today` the system clock): the same figures on any day, those the README quotes.

`--strategies A,B` runs the snapshot's GPU jobs with those injection strategies instead of the config's (the demo's
`cpt-lora`): `--strategies cpt-lora,memit` puts knowledge editing beside continual pretraining on the same
questions, and the report gets its strategy table (Learn, Transfer and kept % of each). The jobs run one after the
other and share the base model's answers (`InjectionJob.base_pass`). With more than one strategy the in-context
track is left out (a job per strategy already fills the demo's 20 minutes on 2 CPU cores); the command says how
to add it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clkt.cli.common import ConfigOption, console, fail, load_cli_settings, open_store, run_async

if TYPE_CHECKING:
    from clkt.config import Settings

__all__ = ["DEMO_DAY", "OPEN_ANSWERS_HELP", "register", "runs_incontext", "with_open_answers", "with_strategies"]

DEMO_DAY = date(2026, 12, 1)  # the demo's calendar day (the README's figures come from it)
# how long the open pass adds: `open_answer_s` of bench/open_answers.py's runs (bench/results/open_answers.json)
OPEN_ANSWERS_HELP = (
    "also ask the snapshot's short-answer questions (the open track) before and after each job, and give the report "
    "the open track's section; the open pass adds about 2.5 minutes to the demo's job on 2 CPU cores "
    "(open_answer_s in bench/results/open_answers.json)")


def register(app: typer.Typer) -> None:
    app.command("demo", help="Run crawl -> questions -> snapshot -> injection -> report once, offline, then exit.")(demo)


def demo(
    config: ConfigOption = None,
    timeout_min: Annotated[float, typer.Option("--timeout-min", help="give up after this many minutes")] = 60.0,
    day: Annotated[str | None, typer.Option(
        "--date", metavar="YYYY-MM-DD|today",
        help=f"the calendar day the demo runs on, the recorded data re-dated into the days before it (default: "
             f"{DEMO_DAY:%Y-%m-%d}, so that its figures are the same on any day; today: the system clock)")] = None,
    strategies: Annotated[str | None, typer.Option(
        "--strategies", metavar="A,B",
        help="the injection strategies of the snapshot's GPU jobs, comma-separated (default: the config's, cpt-lora); "
             "cpt-lora,memit compares continual pretraining with knowledge editing in the report")] = None,
    open_answers: Annotated[bool, typer.Option(
        "--open-answers", help=OPEN_ANSWERS_HELP)] = False,
) -> None:
    from clkt.daemon import Daemon
    from clkt.errors import ClktError
    from clkt.logs import setup_logging
    from clkt.progress import DemoWatcher

    settings = with_open_answers(with_strategies(load_cli_settings(config), strategies), open_answers)
    pinned = _pin_calendar(settings, day)
    setup_logging(settings.log_level, secrets=settings.secrets.values())
    result: dict[str, object] = {}
    holder: dict[str, Daemon] = {}

    def done(snapshot_id: str, report: Path) -> None:
        result.update(snapshot_id=snapshot_id, report=report)
        holder["d"].request_stop("demo finished: report written")

    watcher = DemoWatcher(on_done=done, gpu_enabled=settings.gpu.enabled, data_dir=settings.data_dir)
    daemon = Daemon(settings=settings, extra_services=[watcher])
    holder["d"] = daemon

    async def run_demo() -> int:
        task = asyncio.create_task(daemon.run())
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout=timeout_min * 60)
        except TimeoutError:
            daemon.request_stop("demo timed out")
            await task
            return 1

    try:
        rc = asyncio.run(run_demo())
    except ClktError as e:
        raise fail(str(e), 2) from None
    if not result:
        raise fail(f"the demo did not finish within {timeout_min:g} minutes; see `clkt status`", 1)
    report = Path(str(result["report"]))
    if settings.gpu.enabled and rc == 0:
        if runs_incontext(settings):
            _incontext(settings, str(result["snapshot_id"]), report)
        else:  # a job per strategy already fills the demo's time
            console.print(f"In-context track not run beside {len(settings.spec.strategies)} strategies (to keep the demo "
                          f"within its time); add it with `clkt incontext {result['snapshot_id']}` then `clkt report "
                          f"{result['snapshot_id']}`", soft_wrap=True)
    console.print(f"\n[bold green]Demo finished[/] — snapshot [bold]{result['snapshot_id']}[/]")
    exports = sorted(Path(settings.snapshot.out_dir).glob("*/*/manifest.json"))
    for m in exports:
        console.print(f"  snapshot export: {m.parent}", soft_wrap=True)
    for f in sorted(report.iterdir()):
        console.print(f"  report file:     {f}", soft_wrap=True)
    on = f" on the fixed calendar day {pinned:%Y-%m-%d} (--date)" if pinned else ""
    console.print(f"[yellow]Offline demonstration: recorded data re-dated{on} and a 270M model; the numbers say "
                  "nothing about real models.[/]")
    raise typer.Exit(rc)


def runs_incontext(settings: Settings) -> bool:
    """Whether the demo runs the embedded target's in-context track after its jobs: with GPU jobs of one strategy
    (with several, a job per strategy already fills the demo's time)."""
    return settings.gpu.enabled and len(settings.spec.strategies) == 1


def with_strategies(settings: Settings, given: str | None) -> Settings:
    """`settings` with `[spec] strategies` set to the comma-separated names `given` (None: unchanged); an unknown
    name (the declared ones listed), a repeated one or none at all is refused in one line, exit 2."""
    from clkt.config.spec import Strategy
    from clkt.config.strategies import UnknownStrategyError, check_strategy

    if given is None:
        return settings
    names = [x.strip() for x in given.split(",") if x.strip()]
    if not names:
        raise fail(f"--strategies {given!r} names no strategy (e.g. cpt-lora,memit)", 2)
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise fail(f"--strategies names {', '.join(twice)} more than once", 2)
    try:
        checked = [Strategy(check_strategy(x)) for x in names]
    except UnknownStrategyError as e:
        raise fail(f"--strategies: {e}", 2) from None
    return settings.model_copy(update={"spec": settings.spec.model_copy(update={"strategies": checked})})


def with_open_answers(settings: Settings, on: bool) -> Settings:
    """`settings` with `[gpu] open_answers` on when `on` (the demo's config leaves the open pass off to keep within
    its 20 minutes); unchanged otherwise, so a user's config that turns it on keeps it."""
    if not on:
        return settings
    return settings.model_copy(update={"gpu": settings.gpu.model_copy(update={"open_answers": True})})


def _pin_calendar(settings: Settings, day: str | None) -> date | None:
    """Install the demo's fixed calendar (`day` at noon UTC, at real speed) when the config serves re-dated
    recordings on the system clock; the day pinned, or None (the system clock, or the config's own calendar)."""
    from clkt import clock

    rep = settings.replay
    redated = rep.enabled and rep.redate and rep.mode != "generator" and rep.redate_end is None
    if day is not None and day.strip().lower() == "today":
        return None
    if not redated or settings.daemon.clock_start is not None:
        if day is not None:
            why = "the config sets daemon.clock_start" if redated else "the config serves no recordings re-dated to today"
            raise fail(f"--date {day}: {why}, so the demo has no calendar of its own to set", 2)
        return None
    try:
        pinned = DEMO_DAY if day is None else date.fromisoformat(day.strip())
    except ValueError:
        raise fail(f"--date {day!r} is neither a day (YYYY-MM-DD) nor 'today'", 2) from None
    clock.install(clock.SimulatedClock(start=datetime.combine(pinned, time(12), tzinfo=UTC), speed=1.0))
    return pinned


def _incontext(settings: Settings, snapshot_id: str, report: Path) -> None:
    """The embedded target's in-context track after its GPU jobs, then the report again with its section."""
    from clkt.incontext.demo_track import DemoTrack, demo_context_langs, run_demo_track

    async def go() -> DemoTrack:
        async with open_store(settings) as store:
            return await run_demo_track(
                store, spec=settings.spec, agents=settings.agents, gpu=settings.gpu, data_dir=Path(settings.data_dir),
                secret=settings.secret, snapshot_id=snapshot_id, report=report,
            )

    langs = demo_context_langs(list(settings.spec.train_langs))
    console.print(f"In-context track of the embedded target ({', '.join(langs)} documents and none)...")
    done = run_async(go)
    asked = sum(r.counts.asked for r in done.runs)
    reused = sum(r.counts.from_jobs for r in done.runs)
    console.print(f"In-context track: {asked + reused} answers with {', '.join(done.contexts)} documents and without"
                  + (f" ({reused} of those without: the job's base answers, not asked again)" if reused else "")
                  + f", report written again ({done.wall_s:.0f} s)")
    stopped = [r for r in done.runs if r.error]
    if stopped:
        raise fail(stopped[0].error or "", 1)

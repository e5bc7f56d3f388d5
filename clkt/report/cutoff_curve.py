"""The cutoff a target really has, from its stored probe verdicts (`storage.knowledge`): its known-rate by month of
occurrence, the month after which it stays at its floor (the effective cutoff), and a contamination alarm.

- **Known-rate** of a month: entities of that month the target knew / entities it was asked about, with a
  Wilson 95% interval. A target that was never asked about an entity (the full probe stops at the first target
  that knows it) does not count in that month's n.
- **Floor**: the pooled known-rate of the `FLOOR_MONTHS` most recent months with verdicts, which no declared
  cutoff reaches: what the probe and its judge say of entities the target cannot know (false positives,
  guessable facts). At least `MIN_FLOOR_N` entities, else there is no floor, no estimate and no alarm.
- **Above the floor**: a month (other than the floor months, with at least `MIN_MONTH_N` entities) whose
  known-rate exceeds the floor's by a one-sided Fisher exact test (the month against the floor months) at
  p < `ALARM_ALPHA` / m, m the months tested (Bonferroni: a long history does not raise false alarms).
- **Effective cutoff**: the latest month above the floor; every later month stays at the floor. None when no
  month is above it (the verdicts then put the target's knowledge before the first month held).
- **Contamination alarm**: a month inside the target's window (its first day on or after the declared cutoff
  + the spec's buffer, the first day the gate admits) is above the floor: the target knows entities the gate
  took for unseen, so the declared cutoff is probably too early.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from clkt.config import SpecSettings
from clkt.cutoff import cutoff_for, first_eligible_day
from clkt.errors import ConfigError
from clkt.report.stats import wilson_ci
from storage.knowledge import KnownMonth

__all__ = [
    "ALARM_ALPHA",
    "FLOOR_MONTHS",
    "MIN_FLOOR_N",
    "MIN_MONTH_N",
    "RULE",
    "MonthRate",
    "TargetKnowledge",
    "TargetWindow",
    "knowledge_curves",
    "knowledge_windows",
]

FLOOR_MONTHS = 3
MIN_FLOOR_N = 20
MIN_MONTH_N = 5
ALARM_ALPHA = 0.05
RULE = (
    f"floor = known-rate of the {FLOOR_MONTHS} latest months with verdicts (n >= {MIN_FLOOR_N}); a month with n >= "
    f"{MIN_MONTH_N} is above it when a one-sided Fisher exact test gives p < {ALARM_ALPHA} / months tested; effective "
    "cutoff = the latest month above the floor; alarm = a month inside the window (after declared cutoff + buffer) above it. "
    "A target never asked about an entity (the probe stops at the first target that knows it) is not counted."
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TargetWindow(_Frozen):
    declared_cutoff: date | None
    window_start: date | None  # the first day the gate admits: declared cutoff + buffer


class MonthRate(_Frozen):
    month: str
    asked: int
    known: int
    rate: float | None
    ci: tuple[float, float] | None
    in_window: bool
    floor_month: bool = False
    p_value: float | None = None  # against the floor; None when not tested
    above_floor: bool = False


class TargetKnowledge(_Frozen):
    target: str
    declared_cutoff: date | None
    window_start: date | None
    months: list[MonthRate]
    floor: float | None
    floor_ci: tuple[float, float] | None = None
    floor_n: int = 0
    floor_months: list[str] = Field(default_factory=list)
    tested: int = 0  # months tested against the floor
    effective_cutoff: str | None = None  # the latest month above the floor
    alarm: bool = False
    alarm_months: list[str] = Field(default_factory=list)
    note: str = ""

    @property
    def summary(self) -> str:
        """One line: the floor, the estimate and the alarm."""
        if self.floor is None:
            return f"{self.target}: {self.note}"
        fl = f"floor {100 * self.floor:.1f}% (n={self.floor_n}, {', '.join(self.floor_months)})"
        est = (f"knowledge through {self.effective_cutoff}" if self.effective_cutoff
               else f"no month above the floor (knowledge before {self.months[0].month})")
        decl = f"declared cutoff {self.declared_cutoff.isoformat()}" if self.declared_cutoff else "declared cutoff unknown"
        text = f"{self.target}: {fl}; {est}; {decl}"
        if self.alarm:
            text += (f"; CONTAMINATION ALARM: {', '.join(self.alarm_months)} inside the window (from "
                     f"{self.window_start.isoformat() if self.window_start else '?'}) above the floor: the declared cutoff is probably too early")
        return text


def knowledge_windows(spec: SpecSettings, extra: Mapping[str, date | None] | None = None) -> dict[str, TargetWindow]:
    """Each spec target's declared cutoff and window start (cutoff + `temporal_buffer_days`); `extra`: other
    targets of the store (no longer in the spec) with their stored cutoff."""
    out: dict[str, TargetWindow] = {}
    for name, cutoff in (extra or {}).items():
        out[name] = TargetWindow(declared_cutoff=cutoff, window_start=first_eligible_day(cutoff, spec.temporal_buffer_days) if cutoff else None)
    for t in spec.targets:
        try:
            c: date | None = cutoff_for(t)
        except ConfigError:
            c = None
        out[t.name] = TargetWindow(declared_cutoff=c, window_start=first_eligible_day(c, spec.temporal_buffer_days) if c else None)
    return out


def _month_start(month: str) -> date:
    y, m = month.split("-")
    return date(int(y), int(m), 1)


def _fisher_greater(k: int, n: int, k0: int, n0: int) -> float:
    from scipy.stats import fisher_exact

    return float(fisher_exact([[k, n - k], [k0, n0 - k0]], alternative="greater").pvalue)


def _one(target: str, months: Sequence[KnownMonth], window: TargetWindow | None) -> TargetKnowledge:
    start = window.window_start if window else None
    declared = window.declared_cutoff if window else None
    rows = sorted((m for m in months if m.asked > 0), key=lambda m: m.month)
    floor_rows = rows[-FLOOR_MONTHS:]
    k0, n0 = sum(m.known for m in floor_rows), sum(m.asked for m in floor_rows)
    floor_set = {m.month for m in floor_rows}
    base = [
        MonthRate(month=m.month, asked=m.asked, known=m.known, rate=m.known / m.asked, ci=wilson_ci(m.known, m.asked),
                  in_window=start is not None and _month_start(m.month) >= start, floor_month=m.month in floor_set)
        for m in rows
    ]
    if n0 < MIN_FLOOR_N:
        return TargetKnowledge(
            target=target, declared_cutoff=declared, window_start=start, months=base, floor=None, floor_n=n0,
            note=f"too few verdicts for a floor ({n0} entities in its latest months, {MIN_FLOOR_N} needed): no estimate, no alarm",
        )
    tested = [r for r in base if not r.floor_month and r.asked >= MIN_MONTH_N]
    threshold = ALARM_ALPHA / max(1, len(tested))
    out: list[MonthRate] = []
    for r in base:
        if r.floor_month or r.asked < MIN_MONTH_N:
            out.append(r)
            continue
        p = _fisher_greater(r.known, r.asked, k0, n0)
        out.append(r.model_copy(update={"p_value": p, "above_floor": p < threshold}))
    above = [r.month for r in out if r.above_floor]
    alarm = [r.month for r in out if r.above_floor and r.in_window]
    return TargetKnowledge(
        target=target, declared_cutoff=declared, window_start=start, months=out, floor=k0 / n0, floor_ci=wilson_ci(k0, n0),
        floor_n=n0, floor_months=sorted(floor_set), tested=len(tested), effective_cutoff=above[-1] if above else None,
        alarm=bool(alarm), alarm_months=alarm,
        note="" if start is not None else "no declared cutoff known for this target: its window is unknown (no alarm)",
    )


def knowledge_curves(rows: Sequence[KnownMonth], windows: Mapping[str, TargetWindow]) -> list[TargetKnowledge]:
    """One `TargetKnowledge` per target with verdicts (by name)."""
    by: dict[str, list[KnownMonth]] = defaultdict(list)
    for r in rows:
        by[r.target].append(r)
    return [_one(t, ms, windows.get(t)) for t, ms in sorted(by.items())]

"""Knowledge cutoffs and the freshness rule (the temporal gate's rule; its worker is `clkt.pipeline.gate`):
an entity is fresh for a model only if it occurred at least `buffer_days` after the
model's knowledge cutoff.

`CUTOFFS` is a small registry of common open models, matched by the longest pattern found in the
target's `model` id (or `family`, or `name`). Where a vendor published a cutoff we use it (end of the
stated month); where none was published we use the model's release date, which can only be later than
the real cutoff, so the gate errs on the side of excluding entities. `TargetSettings.cutoff` overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from clkt.config import SpecSettings, TargetSettings
from clkt.errors import ConfigError

__all__ = ["CUTOFFS", "KnownCutoff", "check_cutoffs", "cutoff_for", "eligible", "first_eligible_day", "fresh_after", "lookup_cutoff"]


@dataclass(frozen=True, slots=True)
class KnownCutoff:
    pattern: str  # lower-case substring of a model id / family / name
    cutoff: date
    basis: str  # where the date comes from


CUTOFFS: tuple[KnownCutoff, ...] = (
    KnownCutoff("qwen2.5", date(2024, 9, 19), "release date (no cutoff published; Qwen2 data ran to end-2023)"),
    KnownCutoff("qwen2", date(2023, 12, 31), "maintainers: training data as late as the end of 2023"),
    KnownCutoff("llama-3.1", date(2023, 12, 31), "model card: pretraining data cutoff December 2023"),
    KnownCutoff("llama-3.2", date(2023, 12, 31), "model card: pretraining data cutoff December 2023"),
    KnownCutoff("llama-3.3", date(2023, 12, 31), "model card: pretraining data cutoff December 2023"),
    KnownCutoff("llama-3", date(2023, 12, 31), "model card: March 2023 (8B) / December 2023 (70B); the later"),
    KnownCutoff("gemma-3", date(2024, 8, 31), "model card: knowledge cutoff August 2024"),
    KnownCutoff("gemma-2", date(2024, 6, 27), "release date (no cutoff published)"),
    KnownCutoff("mistral-7b", date(2024, 5, 22), "release date of v0.3 (no cutoff published)"),
    KnownCutoff("mistral-nemo", date(2024, 7, 18), "release date (no cutoff published)"),
    KnownCutoff("mistral-small", date(2025, 1, 30), "release date of 24B-2501 (no cutoff published)"),
    KnownCutoff("mistral", date(2024, 7, 18), "latest small open release (no cutoff published)"),
    KnownCutoff("olmo-2", date(2024, 11, 26), "release date (no cutoff published)"),
    KnownCutoff("smollm2", date(2024, 11, 1), "release date (no cutoff published)"),
)


def _norm(s: str) -> str:
    return s.lower().replace("_", "-").replace(" ", "-")


def lookup_cutoff(model: str) -> KnownCutoff | None:
    """The registry entry whose pattern is the longest substring of `model` (case-insensitive)."""
    m = _norm(model)
    hits = [k for k in CUTOFFS if k.pattern in m or k.pattern.replace("-", "") in m.replace("-", "")]
    return max(hits, key=lambda k: len(k.pattern)) if hits else None


def cutoff_for(target: TargetSettings) -> date:
    """The target's knowledge cutoff: its own `cutoff`, else the registry; unknown → `ConfigError`."""
    if target.cutoff is not None:
        return target.cutoff
    for key in (target.model, target.family or "", target.name):
        hit = lookup_cutoff(key) if key else None
        if hit is not None:
            return hit.cutoff
    raise ConfigError(
        f"spec.targets[{target.name}].cutoff",
        f"no known knowledge cutoff for model {target.model!r}; set `cutoff = YYYY-MM-DD` for this target",
    )


def check_cutoffs(spec: SpecSettings) -> None:
    """Every target has a knowledge cutoff (its own or a known one); the first that has none is a `ConfigError`.
    Run at startup by every command that reads a config, before anything starts or is written."""
    for target in spec.targets:
        cutoff_for(target)


def first_eligible_day(cutoff: date, buffer_days: int) -> date:
    return cutoff + timedelta(days=buffer_days)


def eligible(occurred_at: datetime, cutoff: date, buffer_days: int) -> bool:
    """True when `occurred_at` (aware) is at least `buffer_days` after the end of the cutoff day."""
    if occurred_at.tzinfo is None:
        raise ValueError("occurred_at must be timezone-aware")
    return occurred_at.astimezone(UTC).date() >= first_eligible_day(cutoff, buffer_days)


def fresh_after(spec: SpecSettings) -> datetime:
    """The earliest time an entity is fresh for every target of the spec: max(cutoff) + buffer."""
    latest = max(cutoff_for(t) for t in spec.targets)
    start = datetime(latest.year, latest.month, latest.day, tzinfo=UTC)
    return start + timedelta(days=spec.temporal_buffer_days)

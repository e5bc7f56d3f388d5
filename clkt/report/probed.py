"""A submitted pack's probe, as judged at intake (`clkt.packs.probe`), and the label its leaderboard row carries.

`ProbeVerdicts` is what intake stores beside a pack's recomputed metrics (`PackMetrics.probe`): the entities
probed, the languages, the judge and the entities the model knew (public ids), which the pack's figures and its
board row leave out. A row whose every pack carried probe answers reads "probed here (k of n excluded)" (k and n
summed over its packs' snapshots); any other submitted row reads "not probed here" (`NOT_PROBED`): no entity its
model already knew is excluded from its scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NOT_PROBED", "ProbeVerdicts", "probe_label"]

NOT_PROBED = "not probed here"


class ProbeVerdicts(BaseModel):
    """The taker's judgement of a pack's probe answers (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge: str
    entities: int = Field(ge=0)
    languages: list[str]
    excluded: list[int] = Field(default_factory=list)  # public entity ids, sorted


def probe_label(probes: Sequence[ProbeVerdicts | None]) -> str:
    """The row's label from its packs' verdicts (None: a pack without probe answers); see the module docstring."""
    if not probes or any(p is None for p in probes):
        return NOT_PROBED
    excluded = sum(len(p.excluded) for p in probes if p is not None)
    entities = sum(p.entities for p in probes if p is not None)
    return f"probed here ({excluded} of {entities} excluded)"

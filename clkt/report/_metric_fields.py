"""The records that carry one figure per metric of `clkt.report.metric_table.PAIR_METRICS`, in one dict field,
read and written in the flat shape the report's and the leaderboard's JSON have always had.

- `PerMetric` (a leaderboard row, a snapshot column, a pair cell): `metrics: {key: Estimate}`, written as one
  field per metric (`"overall": {...}, "transfer": {...}`) where the dict field stands.
- `PerMetricSummary` (a Table 2 cell): `values: {key: MetricSummary}`, written as `<key>_mean`, `<key>_std` of
  every metric, then `<key>_ci` of every metric (`overall_mean, overall_std, transfer_mean, transfer_std,
  overall_ci, transfer_ci`).

Both read either shape back, and give a metric's figure as `record.metric(key)`; tests may write the
shorthand `record.overall` / `cell.overall_mean` (not seen by the type checker: product code loops over the
table and calls `metric`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializationInfo, model_serializer, model_validator

from clkt.report.metric_table import PAIR_METRICS

__all__ = ["Estimate", "MetricSummary", "PerMetric", "PerMetricSummary"]

_SUFFIXES = ("_mean", "_std", "_ci")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


_SEED_FIELDS = ("seed_std", "sampling_ci")  # written only when set: a one-seed figure reads as it always did


class Estimate(_Frozen):
    value: float | None
    ci: tuple[float, float] | None = None
    n: int = 0  # what it rests on: Overall, question x pair units; Transfer, A+B; Learn, train-language questions
    # pooled over several training seeds (`clkt.report.seeds`): `value` is the mean over the seeds, `ci` covers
    # entities and seeds, `sampling_ci` entities only (the seeds fixed), `seed_std` the between-seed std
    seed_std: float | None = None
    sampling_ci: tuple[float, float] | None = None

    @model_serializer(mode="wrap")
    def _seedless(self, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        dumped = handler(self)
        return {k: v for k, v in dumped.items() if k not in _SEED_FIELDS or v is not None}


class MetricSummary(_Frozen):
    """Mean ± std over language pairs, and its bootstrap interval."""

    mean: float | None = None
    std: float | None = None
    ci: tuple[float, float] | None = None


def _keys(present: Mapping[str, object]) -> list[str]:
    """The table's metrics, then any other this record holds (read back from a file of another table)."""
    table = PAIR_METRICS.ordered_keys()
    return table + [k for k in present if k not in table]


def _spliced(dumped: dict[str, Any], field: str, flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in dumped.items():
        if k == field:
            out.update(flat)
        else:
            out[k] = v
    return out


class PerMetric(_Frozen):
    """A record with an `Estimate` per metric (see the module docstring). A subclass declares the field
    `metrics: dict[str, Estimate] = Field(default_factory=dict)` where the metrics stand in its JSON."""

    HIDDEN_WHEN_NONE: ClassVar[tuple[str, ...]] = ()  # fields left out of the JSON while None (added later)

    if TYPE_CHECKING:
        metrics: dict[str, Estimate]

    def metric(self, key: str) -> Estimate:
        got = self.metrics.get(key)
        return got if got is not None else Estimate(value=None)

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: Any) -> Any:
        """Metrics given one field each (the JSON's shape) go into `metrics`; every metric of the table is there
        (an `Estimate` without value where none was given), so a record read back equals the one written."""
        if not isinstance(data, dict):
            return data
        fields = set(cls.model_fields)
        table = PAIR_METRICS.ordered_keys()
        moved = {k: v for k, v in data.items() if k not in fields and (k in table or isinstance(v, Estimate)
                                                                       or (isinstance(v, dict) and "value" in v))}
        given = {**moved, **dict(data.get("metrics") or {})}
        full = {**{k: Estimate(value=None) for k in table if k not in given}, **given}
        ordered = {k: full[k] for k in _keys(full)}
        return {**{k: v for k, v in data.items() if k not in moved}, "metrics": ordered}

    @model_serializer(mode="wrap")
    def _flat(self, handler: Callable[[Any], dict[str, Any]], info: SerializationInfo) -> dict[str, Any]:
        dumped = handler(self)
        if "metrics" not in dumped:
            return dumped
        got = dumped["metrics"]
        empty = Estimate(value=None).model_dump(mode=info.mode)
        out = _spliced(dumped, "metrics", {k: got.get(k, empty) for k in _keys(got)})
        return {k: v for k, v in out.items() if v is not None or k not in self.HIDDEN_WHEN_NONE}

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("_") and name in PAIR_METRICS.ordered_keys():
                return self.metric(name)
            return super().__getattr__(name)


class PerMetricSummary(_Frozen):
    """A record with a `MetricSummary` per metric (see the module docstring). A subclass declares the field
    `values: dict[str, MetricSummary] = Field(default_factory=dict)` where the metrics stand in its JSON."""

    if TYPE_CHECKING:
        values: dict[str, MetricSummary]

    def metric(self, key: str) -> MetricSummary:
        got = self.values.get(key)
        return got if got is not None else MetricSummary()

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "values" in data:
            return data
        fields = set(cls.model_fields)
        values: dict[str, dict[str, Any]] = {}
        rest: dict[str, Any] = {}
        for k, v in data.items():
            suffix = next((s for s in _SUFFIXES if k.endswith(s)), None)
            if k in fields or suffix is None:
                rest[k] = v
            else:
                values.setdefault(k[: -len(suffix)], {})[suffix[1:]] = v
        return {**rest, "values": values} if values else data

    @model_serializer(mode="wrap")
    def _flat(self, handler: Callable[[Any], dict[str, Any]], info: SerializationInfo) -> dict[str, Any]:
        dumped = handler(self)
        if "values" not in dumped:
            return dumped
        got = dumped["values"]
        keys = _keys(got)
        flat: dict[str, Any] = {}
        for k in keys:
            flat[f"{k}_mean"] = got.get(k, {}).get("mean")
            flat[f"{k}_std"] = got.get(k, {}).get("std")
        for k in keys:
            flat[f"{k}_ci"] = got.get(k, {}).get("ci")
        return _spliced(dumped, "values", flat)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("_"):
                for suffix in _SUFFIXES:
                    if name.endswith(suffix) and name[: -len(suffix)] in PAIR_METRICS.ordered_keys():
                        return getattr(self.metric(name[: -len(suffix)]), suffix[1:])
            return super().__getattr__(name)

"""How far the demo's headline figures move (issue 45 item 5), and whether a new run falls inside that spread.

The observations are kept one JSON object per line in `bench/results/demo-spread.json`; each says what produced it:

- `run`: a whole `clkt demo` (`bench/demo.py --write`): two of them on one machine give the run-to-run spread;
- `seed`: the demo's GPU job again with another training seed (`bench/seeds.py --record`);
- `deterministic`: the job with deterministic kernels on one thread (`bench/seeds.py --deterministic --record`);
- `processor`: a run on another processor (the GPU check, when a machine with one is lent).

Each carries the commit, the processor's name, the torch thread count and the load beside its figures. A figure's
spread is the range of its observed values; a new run holds when every figure it shares with the spread lies in that
range, widened by `SLACK` for rounding (the README prints whole percentage points). Nothing here claims two runs are
byte-identical: where two observations agree exactly the rendering says so, because it was observed.

A figure is named `<what>/<scorer>`: `learn_base`, `learn_injected`, `learn_gain` (train language, real entities,
every domain), `control_injected` (the fictional control entities), `overall` and `transfer` (every domain pooled,
Table 2's `all pooled` column, the leaderboard's row).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPREAD_FILE = ROOT / "bench" / "results" / "demo-spread.json"
SLACK = 0.005  # half a percentage point: the README's rounding
KINDS = ("run", "seed", "deterministic", "processor")
LABELS = {"learn_base": "Learn, base", "learn_injected": "Learn, injected", "learn_gain": "Learn, gain",
          "control_injected": "Learn on the control entities, injected", "overall": "Overall", "transfer": "Transfer"}


def headline(metrics: Mapping[str, Any], train_lang: str = "en", strategy: str = "cpt-lora") -> dict[str, float]:
    """The headline figures of a demo report's `metrics.json`, per scorer (`strategy`'s, real entities), of the first
    model the report names (the demo has one target)."""
    out: dict[str, float] = {}
    models = [r["model"] for r in metrics.get("learn", []) if r.get("model")]
    model = models[0] if models else None
    for row in metrics.get("learn", []):
        if (row["domain"] != "all" or row["control"] or row["train_lang"] != train_lang or row.get("stat") is None
                or row.get("strategy", strategy) != strategy or row.get("model", model) != model):
            continue
        st, sc = row["stat"], row["scorer"]
        out |= {f"learn_base/{sc}": st["base_accuracy"], f"learn_injected/{sc}": st["injected_accuracy"],
                f"learn_gain/{sc}": st["gain"]}
    for row in metrics.get("control_learn", []):
        if (row.get("domain", "all") == "all" and row["train_lang"] == train_lang and row.get("stat") is not None
                and row.get("strategy", strategy) == strategy and row.get("model", model) == model):
            out[f"control_injected/{row['scorer']}"] = row["stat"]["injected_accuracy"]
    for row in metrics.get("table2", []):
        if row["domain"] != "all" or row.get("strategy", strategy) != strategy or row.get("model", model) != model:
            continue
        for m in ("overall", "transfer"):
            if row.get(f"{m}_mean") is not None:
                out[f"{m}/{row['scorer']}"] = row[f"{m}_mean"]
    return out


def seed_headline(per_seed: Mapping[str, Any], scorer: str) -> dict[str, float]:
    """The same figures from one seed's row of `bench/seeds.py` (its leaderboard row over the demo's snapshot)."""
    names = ("learn_base", "learn_injected", "learn_gain", "overall", "transfer")  # the same names in both
    return {f"{k}/{scorer}": float(per_seed[k]) for k in names if per_seed.get(k) is not None}


def commit(*, dirty: bool = False) -> str:
    """The commit a run measured: its short hash ("unknown" outside git); with `dirty`, "+dirty" when the working
    tree has changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True, timeout=10)
        changed = dirty and subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                                           check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if changed else "")


def processor() -> str:
    """The processor's model name (Linux `/proc/cpuinfo`), else what `platform` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass(frozen=True)
class Observation:
    label: str
    kind: str
    figures: dict[str, float]
    meta: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps({"label": self.label, "kind": self.kind, "figures": self.figures, **self.meta},
                          ensure_ascii=False, sort_keys=True)


def observation(label: str, kind: str, figures: Mapping[str, float], **meta: Any) -> Observation:
    if kind not in KINDS:
        raise ValueError(f"unknown observation kind {kind!r} (one of {', '.join(KINDS)})")
    base = {"commit": commit(), "processor": processor(), "cpus": os.cpu_count(),
            "load_1m": round(os.getloadavg()[0], 2), "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    return Observation(label, kind, {k: round(float(v), 6) for k, v in figures.items()}, base | meta)


def load(path: Path = SPREAD_FILE) -> list[Observation]:
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(Observation(d.pop("label"), d.pop("kind"), {k: float(v) for k, v in d.pop("figures").items()}, d))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise SystemExit(f"{path}:{n}: not an observation ({type(e).__name__}: {e})") from None
    return out


def append(obs: Observation, path: Path = SPREAD_FILE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(obs.to_json() + "\n")


def ranges(observations: Iterable[Observation]) -> dict[str, tuple[float, float, int]]:
    """Per figure: its lowest and highest observed value and how many observations have it."""
    seen: dict[str, list[float]] = {}
    for o in observations:
        for k, v in o.figures.items():
            seen.setdefault(k, []).append(v)
    return {k: (min(v), max(v), len(v)) for k, v in seen.items()}


def outside(figures: Mapping[str, float], observations: list[Observation], slack: float = SLACK) -> list[str]:
    """The figures of a new run outside the spread (each with its value and the range); [] when it holds.
    Only figures observed at least twice are judged (one observation is a value, not a spread)."""
    out = []
    for k, (lo, hi, n) in sorted(ranges(observations).items()):
        if n < 2 or k not in figures:
            continue
        v = figures[k]
        if not lo - slack <= v <= hi + slack:
            out.append(f"{k} = {100 * v:.1f} % outside {100 * lo:.1f}-{100 * hi:.1f} %")
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def render(observations: list[Observation], scorer: str = "option-loglik") -> list[str]:
    """The README's spread lines: per headline figure on `scorer`, the range and what each kind of observation gave."""
    if not observations:
        return []
    by_kind: dict[str, list[Observation]] = {}
    for o in observations:
        by_kind.setdefault(o.kind, []).append(o)
    counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items(), key=lambda kv: KINDS.index(kv[0])))
    procs = sorted({str(o.meta.get("processor", "?")) for o in observations})
    lines = [f"- Spread of the figures above (`{scorer}`, {counts} observation(s) in `bench/results/demo-spread.json`; "
             f"processor(s): {'; '.join(procs)}):"]
    for name, label in LABELS.items():
        key = f"{name}/{scorer}"
        got = [(o, o.figures[key]) for o in observations if key in o.figures]
        if not got:
            continue
        lo, hi = min(v for _, v in got), max(v for _, v in got)
        parts = []
        for kind in KINDS:
            vals = [v for o, v in got if o.kind == kind]
            if not vals:
                continue
            what = {"run": "whole demo runs", "seed": "training seeds", "deterministic": "deterministic kernels, 1 thread",
                    "processor": "another processor"}[kind]
            same = len(vals) > 1 and max(vals) == min(vals)
            shown = ", ".join(_pct(v) for v in vals)
            parts.append(f"{what} {shown}{' (identical)' if same else ''}")
        span = _pct(lo) if lo == hi else f"{_pct(lo)} to {_pct(hi)}"
        lines.append(f"  - {label}: {span} ({'; '.join(parts)})")
    return lines

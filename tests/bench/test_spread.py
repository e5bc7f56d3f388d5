"""The demo's spread (issue 45 item 5, `bench.support.spread`): the headline figures read from a report, the range
of each over the recorded observations, a new run judged inside or outside it, and the README's lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.support import spread

GOLDEN = Path(__file__).resolve().parents[1] / "report" / "golden" / "metrics.json"


def _obs(kind: str, **figures: float) -> spread.Observation:
    return spread.observation(f"test {kind}", kind, {k.replace("__", "/"): v for k, v in figures.items()})


def test_the_headline_figures_are_the_reports_own() -> None:
    metrics = json.loads(GOLDEN.read_text(encoding="utf-8"))
    head = spread.headline(metrics)
    first = metrics["learn"][0]["model"]
    learn = next(r for r in metrics["learn"] if r["domain"] == "all" and not r["control"] and r["train_lang"] == "en"
                 and r["model"] == first)
    sc = learn["scorer"]
    assert {r["model"] for r in metrics["learn"]} != {first}  # the golden report has two models: only the first counts
    assert head[f"learn_injected/{sc}"] == learn["stat"]["injected_accuracy"]
    assert head[f"learn_gain/{sc}"] == learn["stat"]["gain"]
    t2 = next(r for r in metrics["table2"] if r["domain"] == "all" and r["scorer"] == sc and r["model"] == first)
    assert head[f"transfer/{sc}"] == t2["transfer_mean"]
    # another strategy's rows are not this strategy's figures
    assert spread.headline(metrics, strategy="no-such-strategy") == {}


def test_a_run_inside_the_range_holds_and_one_outside_is_named() -> None:
    seen = [_obs("run", learn_injected__s=0.60, transfer__s=0.70), _obs("seed", learn_injected__s=0.70, transfer__s=0.70),
            _obs("seed", learn_injected__s=0.66)]
    assert spread.ranges(seen)["learn_injected/s"] == (0.60, 0.70, 3)
    assert spread.outside({"learn_injected/s": 0.65, "transfer/s": 0.703}, seen) == []  # within the rounding slack
    off = spread.outside({"learn_injected/s": 0.72, "transfer/s": 0.70}, seen)
    assert off == ["learn_injected/s = 72.0 % outside 60.0-70.0 %"]


def test_a_figure_seen_once_is_a_value_not_a_spread() -> None:
    seen = [_obs("run", gain__s=0.5)]
    assert spread.outside({"gain/s": 0.9}, seen) == []  # not judged: one observation


def test_the_readme_lines_say_what_each_kind_gave_and_never_claim_identity_unobserved() -> None:
    seen = [_obs("run", learn_injected__s=0.69), _obs("run", learn_injected__s=0.69),
            _obs("seed", learn_injected__s=0.64), _obs("seed", learn_injected__s=0.74),
            _obs("deterministic", learn_injected__s=0.69)]
    lines = spread.render(seen, scorer="s")
    assert lines[0].startswith("- Spread of the figures above (`s`, 2 run, 2 seed, 1 deterministic observation(s)")
    line = next(x for x in lines if "Learn, injected" in x)
    assert "64 % to 74 %" in line
    assert "whole demo runs 69 %, 69 % (identical)" in line
    assert "training seeds 64 %, 74 %;" in line and "(identical)" not in line.split("training seeds")[1]
    assert spread.render([], scorer="s") == []


def test_observations_round_trip_and_a_bad_line_is_named(tmp_path: Path) -> None:
    f = tmp_path / "spread.json"
    spread.append(_obs("seed", overall__s=0.5), f)
    spread.append(_obs("run", overall__s=0.25), f)
    got = spread.load(f)
    assert [(o.kind, o.figures) for o in got] == [("seed", {"overall/s": 0.5}), ("run", {"overall/s": 0.25})]
    assert {"commit", "processor", "load_1m", "at"} <= set(got[0].meta)
    with f.open("a", encoding="utf-8") as fh:
        fh.write('{"label": "x", "figures": {}}\n')
    with pytest.raises(SystemExit, match=r"spread.json:3: not an observation \(KeyError"):
        spread.load(f)
    with pytest.raises(ValueError, match="unknown observation kind 'guess'"):
        spread.observation("x", "guess", {})

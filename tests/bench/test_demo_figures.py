"""The README's demo figures are the rendering of a recorded demo run (`bench/results/demo-metrics.json`, written
by `bench/demo.py --write` from the report the demo wrote) followed by the figures' spread
(`bench/results/demo-spread.json`): a figure edited by hand, or a renderer changed without a new run, fails here.
`bench/demo.py` (no `--write`) reruns the demo and says whether its figures fall inside the spread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.demo import BEGIN, END, README, STORED, readme_block, readme_lines, render_figures, write_block
from bench.support import spread

GOLDEN = Path(__file__).resolve().parents[1] / "report" / "golden" / "metrics.json"


def test_the_readme_quotes_the_recorded_demo_run_and_its_spread() -> None:
    metrics = json.loads(STORED.read_text(encoding="utf-8"))
    observed = spread.load()
    block = readme_block(README.read_text(encoding="utf-8"))
    assert block == readme_lines(metrics, observed)
    # the recorded run is one of the spread's observations (issue 45 item 5: the figure with its spread)
    assert any(o.kind == "run" and o.figures == {k: round(v, 6) for k, v in spread.headline(metrics).items()}
               for o in observed)
    assert any(ln.startswith("- Spread of the figures above") for ln in block)


def test_the_recorded_run_is_a_whole_demo_report() -> None:
    metrics = json.loads(STORED.read_text(encoding="utf-8"))
    lines = render_figures(metrics)
    assert any(ln.startswith("- Base model,") for ln in lines)
    assert any(ln.startswith("- Learn, real entities") for ln in lines)
    assert any(ln.startswith("- Transfer,") for ln in lines)
    # the scorer every figure comes from is named
    assert all(row["scorer"] in "\n".join(lines) for row in metrics["base"])


def test_rendering_names_the_flagged_languages_and_the_summary_verbatim() -> None:
    metrics = json.loads(GOLDEN.read_text(encoding="utf-8"))
    metrics["base"][1] |= {"flagged": True}
    lines = render_figures(metrics)
    flagged = metrics["base"][1]
    assert any(f"flagged above chance in {flagged['lang']}" in ln and ln.startswith(f"- Base model, {flagged['model']}")
               for ln in lines)
    transfer = [s for s in metrics["summary"] if s.startswith("Transfer,")]
    assert transfer and all(f"- {s}" in lines for s in transfer)
    assert not any("Control, other languages" in ln for ln in lines)  # not quoted by the README


def test_the_block_is_rewritten_in_place_and_refused_when_missing() -> None:
    text = f"intro\n{BEGIN}\n- old\n{END}\nafter\n"
    new = write_block(text, ["- a", "- b"])
    assert new == f"intro\n{BEGIN}\n- a\n- b\n{END}\nafter\n"
    assert readme_block(new) == ["- a", "- b"]
    with pytest.raises(SystemExit, match="no demo-figures block"):
        readme_block("intro without markers\n")

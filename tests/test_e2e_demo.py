"""The embedded default end to end at reduced size, as a real `clkt demo` process: crawl (replay server)
-> gate -> probe with Gemma 3 270M -> template questions -> snapshot -> LoRA injection -> evaluation ->
report. Checks real content, not just that files exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clkt.snapshots.layout import load_snapshot_dir
from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2700)]


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.replace("\u202f", " ").replace("\xa0", " ")).strip().casefold()


def test_demo_end_to_end_reduced(tmp_path: Path, shared_models_dir: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "models").symlink_to(shared_models_dir)
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f"""
offline_demo = true
data_dir = "{data}"
[agents]
questions_per_entity = 2
[spec]
languages = ["en", "fr"]
[snapshot]
out_dir = "{tmp_path / 'snapshots'}"
quotas = {{ movies = 0, music = 1, sports = 1, disasters = 1 }}
[gpu]
epochs = 1
max_new_tokens = 4
"""
    )
    res = subprocess.run(
        [sys.executable, "-m", "clkt.cli", "demo", "--config", str(cfg), "--timeout-min", "25"],
        capture_output=True, text=True, cwd=REPO, timeout=1800,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "HF_HUB_OFFLINE": "1"},
    )
    log = res.stdout + res.stderr
    assert res.returncode == 0, log[-4000:]
    assert "Demo finished" in res.stdout
    assert "OFFLINE DEMONSTRATION" in log and "RE-DATED" in log

    [manifest] = list((tmp_path / "snapshots").glob("*/*/manifest.json"))
    snap = load_snapshot_dir(manifest.parent)
    assert snap.manifest.redated is True
    assert snap.languages == ["en", "fr"]
    # counts: one entity per filled domain, questions present in every language with the same ids
    domains = {d.domain for d in snap.docs_for("en")}
    assert domains == {"music", "sports", "disasters"}
    assert snap.manifest.counts["total"].entities == 3
    qids = {lang: sorted(q.qid for q in snap.questions_for(lang)) for lang in snap.languages}
    assert qids["en"] and qids["en"] == qids["fr"]
    total = snap.manifest.counts["total"]
    assert total.fact_qas == len(qids["en"])
    assert total.val + total.test == 2 * len(qids["en"])
    # every question's answer is stated in its entity's document, in that language
    for lang in snap.languages:
        docs = {d.entity_id: _norm(d.text) for d in snap.docs_for(lang)}
        for q in snap.questions_for(lang):
            assert q.options[q.answer_index] == q.options["ABCD".index(q.answer)]
            assert _norm(q.options[q.answer_index]) in docs[q.entity_id], (lang, q.question, q.options)
            distractors = [o for i, o in enumerate(q.options) if i != q.answer_index]
            assert len(set(distractors)) == 3

    # the report: every ordered language pair, Table 2, a heatmap PNG that decodes
    reports = list((data / "reports").glob("*/metrics.json"))
    assert len(reports) == 1
    metrics = json.loads(reports[0].read_text())
    pairs = {(p["train_lang"], p["test_lang"]) for p in metrics["pairs"] if not p["missing"]}
    assert {("en", "fr"), ("fr", "en")} <= pairs
    assert (reports[0].parent / "table2.csv").read_text().count("\n") >= 2
    pngs = list(reports[0].parent.glob("*.png")) + list(reports[0].parent.glob("*/*.png"))
    assert pngs
    import matplotlib.image as mpimg

    img = mpimg.imread(pngs[0])
    assert img.shape[0] > 50 and img.shape[1] > 50
    md = (reports[0].parent / "report.md").read_text()
    assert ".png" in md

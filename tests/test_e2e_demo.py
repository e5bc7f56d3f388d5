"""The embedded default end to end at reduced size, as a real `clkt demo` process: crawl (replay server)
-> gate -> probe with Gemma 3 270M -> template questions (every one the engine can ask) + the control split
-> snapshot -> LoRA injection (the demo's rate and epochs, one train language) -> option-loglik evaluation
-> report. Checks real content, not just that files exist, and what the report concludes: injection learned
the control split, the base model is not flagged above chance, and every flag agrees with its numbers.
At the root of tests/ because it is cross-cutting: every area of the product in one run."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from clkt.cli.demo import DEMO_DAY
from clkt.report.metrics import BASE_FLAG_P
from clkt.snapshots.layout import load_snapshot_dir
from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3300)]


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
[spec]
languages = ["en", "fr"]
train_languages = ["en"]
[snapshot]
out_dir = "{tmp_path / 'snapshots'}"
quotas = {{ movies = 0, music = 1, sports = 1, disasters = 1, science = 1, spaceflight = 1 }}
control_entities = 1
"""
    )
    res = subprocess.run(
        [sys.executable, "-m", "clkt.cli", "demo", "--config", str(cfg), "--timeout-min", "45"],
        capture_output=True, text=True, cwd=REPO, timeout=3000,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "HF_HUB_OFFLINE": "1"},
    )
    log = res.stdout + res.stderr
    assert res.returncode == 0, log[-4000:]
    assert "Demo finished" in res.stdout
    assert "OFFLINE DEMONSTRATION" in log and "RE-DATED" in log

    [manifest] = list((tmp_path / "snapshots").glob("*/*/manifest.json"))
    snap = load_snapshot_dir(manifest.parent)
    assert snap.manifest.redated is True
    # the demo's fixed calendar: the same day (so the same dates and figures) whatever day it runs on
    # (the rolling window of complete days that ends the day before it: labelled by its last day)
    assert snap.manifest.period == f"{DEMO_DAY - timedelta(days=1):%Y-%m-%d}", snap.manifest.period
    assert f"fixed calendar day {DEMO_DAY:%Y-%m-%d}" in _norm(res.stdout)
    assert snap.languages == ["en", "fr"]
    # counts: one entity per filled domain, questions present in every language with the same ids
    domains = {d.domain for d in snap.docs_for("en")}
    assert domains == {"music", "sports", "disasters", "science", "spaceflight"}
    assert snap.manifest.counts["total"].entities == 5
    qids = {lang: sorted(q.qid for q in snap.questions_for(lang)) for lang in snap.languages}
    assert qids["en"] and qids["en"] == qids["fr"]
    total = snap.manifest.counts["total"]
    assert total.fact_qas == len(qids["en"])
    assert total.val + total.test == 2 * len(qids["en"])
    assert total.fact_qas >= 4 * 3  # every question the engine can ask (4 to 7 per recorded entity), not 2
    # the control split: one fictional entity per domain, every language, apart from the real questions
    ctl = snap.manifest.control
    assert ctl is not None and ctl.entities == 6 and ctl.questions >= 20
    control = {lang: snap.control_questions_for(lang) for lang in snap.languages}
    assert [q.qid for q in control["en"]] == [q.qid for q in control["fr"]]
    assert not {q.qid for q in control["en"]} & set(qids["en"])
    # every question's answer is stated in its entity's document, in that language
    for lang in snap.languages:
        docs = {d.entity_id: _norm(d.text) for d in snap.docs_for(lang) + snap.control_docs_for(lang)}
        for q in snap.questions_for(lang) + control[lang]:
            assert q.options[q.answer_index] == q.options["ABCD".index(q.answer)]
            assert _norm(q.options[q.answer_index]) in docs[q.entity_id], (lang, q.question, q.options)
            distractors = [o for i, o in enumerate(q.options) if i != q.answer_index]
            assert len(set(distractors)) == 3

    # the report: every ordered language pair, Table 2, a heatmap PNG that decodes
    reports = list((data / "reports").glob("*/metrics.json"))
    assert len(reports) == 1
    metrics = json.loads(reports[0].read_text())
    pairs = {(p["train_lang"], p["test_lang"]) for p in metrics["pairs"] if not p["missing"]}
    assert pairs == {("en", "fr")}  # one train language (spec.train_languages), tested in both
    assert [j["train_lang"] for j in metrics["jobs"]] == ["en"] and metrics["jobs"][0]["status"] == "done"
    # the base model (a 270M base model, scored by option log-likelihood): a language is flagged exactly when its
    # accuracy is above chance by the exact one-sided binomial test (BASE_FLAG_MEANS), computed here again
    assert metrics["base"]
    for b in metrics["base"]:
        k = round(b["accuracy"] * b["n"])
        p_above = sum(math.comb(b["n"], i) * 0.25**i * 0.75 ** (b["n"] - i) for i in range(k, b["n"] + 1))
        assert b["p_above_chance"] == pytest.approx(p_above, rel=1e-6), b
        assert b["flagged"] == (p_above < BASE_FLAG_P), b
    assert "option-loglik" in {b["scorer"] for b in metrics["base"]} <= {"option-loglik", "option-loglik-norm"}
    # the positive control: injection moved the fictional entities the right way in the train language (at this
    # reduced size, 30 questions and a best epoch picked on 4, significance is not expected: the flag must say so)
    [ctl_learn] = [t for t in metrics["control_learn"] if t["scorer"] == "option-loglik"]
    st = ctl_learn["stat"]
    assert st["n"] == len(control["en"])
    assert st["injected_correct"] > st["base_correct"] and st["gained"] > st["lost"], st  # the direction
    # every Learn flag agrees with its numbers, and a job that did not learn is said to be not interpretable
    md = (reports[0].parent / "report.md").read_text()
    for t in metrics["learn"] + metrics["control_learn"]:
        s = t["stat"]
        assert s["learned"] == (s["injected_correct"] > s["base_correct"] and s["p_value"] < 0.05), t
    real = [t for t in metrics["learn"] if t["scorer"] == "option-loglik" and t["domain"] == "all"]
    assert len(real) == 1 and real[0]["stat"]["n"] == total.test // 2
    if not real[0]["stat"]["learned"]:
        assert "not interpretable" in md
    assert "Control split" in md and "Learn" in md
    assert (reports[0].parent / "table2.csv").read_text().count("\n") >= 2
    pngs = list(reports[0].parent.glob("*.png")) + list(reports[0].parent.glob("*/*.png"))
    assert pngs
    import matplotlib.image as mpimg

    img = mpimg.imread(pngs[0])
    assert img.shape[0] > 50 and img.shape[1] > 50
    assert ".png" in md
    _assert_incontext(metrics, md, res.stdout, n=total.test // 2)


def _assert_incontext(metrics: dict[str, Any], md: str, stdout: str, *, n: int) -> None:
    """The embedded target's in-context track (after its GPU jobs, en documents, option-loglik-norm: a base model),
    in its own section with numbers: accuracy per test language with and without the document, n and 95% CIs,
    Overall and Transfer with entity-bootstrap CIs, beside the parametric Transfer."""
    assert "In-context track:" in stdout
    [ic] = metrics["incontext"]
    assert ic["scorers"] == ["option-loglik-norm"] and ic["contexts"] == ["en"]
    assert ic["unparsed"] == 0 and ic["skipped"] == 0 and ic["answered"] == 2 * 2 * n  # (en document, none) x 2 langs
    acc = {(a["context_lang"], a["lang"]): a for a in ic["accuracy"]}
    assert set(acc) == {("en", "en"), ("en", "fr"), ("", "en"), ("", "fr")}
    for a in acc.values():
        assert a["n"] == n and a["ci"] is not None and a["ci"][0] <= a["accuracy"] <= a["ci"][1], a
    assert ic["overall"]["mean"] is not None and ic["overall"]["ci"] is not None
    assert ic["transfer"]["mean"] is None or ic["transfer"]["ci"] is not None
    [helps] = ic["helps"]
    assert helps["context_lang"] == "en" and helps["n"] == n and 0 <= helps["p_value"] <= 1
    section = md[md.index("## In-context track (contextual, not pooled with the parametric results)"):]
    row = next(line for line in section.splitlines() if line.startswith(f"| {ic['target']} | option-loglik-norm | en |"))
    assert "cpt-lora/option-loglik" in row  # the parametric Transfer beside the in-context one
    assert f"| en | fr | {n} |" in section and f"| none (floor) | fr | {n} |" in section

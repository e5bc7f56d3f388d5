from __future__ import annotations

import csv
from pathlib import Path

from clkt.evaluate.metrics import Outcome
from clkt.evaluate.report import JobInfo, build_report, render_tables, write_report_files


def _outcomes(model: str, strategy: str) -> list[Outcome]:
    out: list[Outcome] = []
    for train in ("en", "ja"):
        for lang in ("en", "ja", "fr"):
            for q in range(1, 9):
                right = (q % 2 == 0) if lang == train else (q % 4 == 0)
                if train == "ja" and lang == "ja":
                    right = False  # A + B = 0 for ja->* : Transfer undefined
                out.append(Outcome(model=model, strategy=strategy, scorer="generate", variant="injected", train_lang=train,
                                   lang=lang, qid=q, domain="movies" if q <= 4 else "music", correct=right,
                                   predicted=None if q == 1 else "A"))
                out.append(Outcome(model=model, strategy=strategy, scorer="generate", variant="base", train_lang=train,
                                   lang=lang, qid=q, domain="movies" if q <= 4 else "music", correct=q == 3, predicted="A"))
    return out


def test_report_files_both_scenarios_and_figures(tmp_path: Path) -> None:
    outcomes = _outcomes("small", "cpt-lora") + _outcomes("large", "cpt-lora") + _outcomes("small", "sft-lora")
    jobs = [
        JobInfo(job_id=i, model=m, strategy=s, train_lang=t, status="done", family="fam", size_b=size)
        for i, (m, s, t, size) in enumerate(
            [("small", "cpt-lora", "en", 0.3), ("small", "cpt-lora", "ja", 0.3), ("large", "cpt-lora", "en", 1.5),
             ("large", "cpt-lora", "ja", 1.5), ("small", "sft-lora", "en", 0.3), ("small", "sft-lora", "ja", 0.3)]
        )
    ]
    data = build_report("snap-1", ["en", "ja", "fr", "zh"], jobs, outcomes)
    paths = write_report_files(data, tmp_path / "r")
    md = paths.markdown.read_text()
    assert "Model comparison — cpt-lora, generate" in md and "Strategy comparison — small, generate" in md
    assert "undefined" in md  # ja-trained jobs have A + B = 0
    assert "missing pairs" in md and "en->zh" in md  # no zh answers: missing, not zero
    rows = list(csv.DictReader(paths.pairs_csv.open()))
    ja_en = [r for r in rows if r["train_lang"] == "ja" and r["test_lang"] == "en" and r["domain"] == "all"]
    assert ja_en and all(r["transfer"] == "undefined" for r in ja_en)
    import matplotlib.image as mpimg

    heat = [f for f in paths.figures if f.name.startswith("heatmap-")]
    size = [f for f in paths.figures if f.name.startswith("size-")]
    assert len(heat) == 3 and len(size) == 1  # one per model x strategy; one family with two sizes
    for f in paths.figures:
        assert mpimg.imread(f).ndim == 3 and f.name in md
    assert len(render_tables(data)) >= 3

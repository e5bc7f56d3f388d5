"""The open audit form holds a model's answers, hostile text like crawled text: the HTML form's script stays one
script, a cell a spreadsheet would run is neutralised (and still matches its stored answer at score time), both files
are written whole or not at all, and an empty sample writes nothing."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.snapshots.audit_open import LABELS, OPEN_COLUMNS, OpenAuditRow, write_open_form
from clkt.snapshots.audit_open_score import OpenLabels, score_open
from storage.open_results import OpenResultRow
from tests.snapshots.test_audit_hostile import HOSTILE

SID = "snap1"


def _row(i: int, text: str) -> OpenAuditRow:
    return OpenAuditRow(snapshot_id=SID, language="en", domain="movies", entity=text, qid=i, question=text, gold=text,
                        aliases=(text, "b"), answer=text, job_id=1, variant="injected")


def test_hostile_answers_stay_text_in_both_files(tmp_path: Path) -> None:
    rows = [_row(i, t) for i, t in enumerate(HOSTILE)]
    c, h = write_open_form(rows, tmp_path / "form")
    assert (c.name, h.name) == ("form.csv", "form.html")
    page = h.read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 1 and "<!--" not in scripts[0] and "\u2028" not in scripts[0]
    assert page.count("<script>") == 1 and page.count("</script>") == 1
    assert all(page.count(f'data-g="{g}"') == len(rows) for g in LABELS)  # one grade to give per answer
    assert "injected" not in page and "injected" not in c.read_text(encoding="utf-8")  # blind to the variant
    with c.open(encoding="utf-8", newline="") as fh:
        got = list(csv.DictReader(fh))
    assert list(got[0]) == OPEN_COLUMNS
    assert [r["answer"] for r in got if r["answer"][:1] in "=+-@\t"] == []  # every formula start neutralised
    # the neutralised cell is the stored answer at score time
    stored = [OpenResultRow(open_qid=a.qid, entity_id=a.qid, domain="movies", fact="f", lang="en", variant="injected",
                            scorer="open-normaliser", split="test", verdict="CORRECT", other_language=False,
                            answer=a.answer, job_id=1, target_model="t", strategy="s", train_lang="en", seed=0)
              for a in rows]
    labels = OpenLabels(snapshot_id=SID, files=["form.csv"], annotators=1,
                        labels={r["sample_id"]: "CORRECT" for r in got}, answers={r["sample_id"]: r["answer"] for r in got},
                        no_majority=0)
    assert score_open(labels, stored, seed=0).agreement[-1].n == len(rows)
    assert not list(tmp_path.glob(".*tmp*"))


def test_an_empty_sample_or_a_missing_folder_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="the sample is empty"):
        write_open_form([], tmp_path / "form.csv")
    with pytest.raises(UserError, match="no folder"):
        write_open_form([_row(0, "x")], tmp_path / "nope" / "form.csv")
    assert list(tmp_path.iterdir()) == []

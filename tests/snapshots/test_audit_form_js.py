"""The audit forms' Save button, run by node on a stand-in of the page: what it saves is the CSV `clkt audit score`
reads (the MCQ sheet's ticks, the open form's grades), hostile cells neutralised as in the CSV the command writes.
Without node on the machine the test is skipped (it needs a JavaScript engine, nothing else)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.snapshots.audit import AuditPair, _html, score_files
from clkt.snapshots.audit_open import OpenAuditRow
from clkt.snapshots.audit_open import _html as open_html
from clkt.snapshots.audit_open_score import read_open_forms

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the form's script")

# a page with `sections` (one per row: its checked boxes or radio, its notes), the Save button and the download
STAND_IN = """
let saved = null;
const save = {};
const sections = SECTIONS_IN.map((s, i) => ({
  dataset: {i: String(i)},
  querySelector(sel) {
    if (sel === 'input.notes') return {value: s.notes};
    const radio = sel.startsWith('input[type="radio"]');
    if (radio) return s.grade ? {dataset: {g: s.grade}} : null;
    const c = /data-c="([^"]+)"/.exec(sel)[1];
    return {checked: s.ticked.includes(c)};
  },
}));
globalThis.document = {
  getElementById: (id) => (id === 'save' ? save : {value: 'ann'}),
  querySelectorAll: () => sections,
  createElement: () => ({click() {}}),
};
globalThis.Blob = class { constructor(parts) { saved = parts.join(''); } };
globalThis.URL = {createObjectURL: () => 'blob:'};
"""


def _saved(page: str, sections: Sequence[Mapping[str, object]]) -> str:
    (script,) = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    code = f"const SECTIONS_IN = {json.dumps(sections)};\n{STAND_IN}\n{script}\nsave.onclick();\nprocess.stdout.write(saved);"
    return subprocess.run(["node", "-e", code], capture_output=True, text=True, check=True, timeout=60).stdout


def test_the_mcq_form_saves_the_sheet_score_reads(tmp_path: Path) -> None:
    pairs = [AuditPair(snapshot_id="snap1", language="en", domain="music", qid=i, entity="=e", document="d",
                       question="q", options=["a", "b", "c", "d"], answer="a") for i in range(3)]
    sections = [{"ticked": ["correct"], "notes": ""}, {"ticked": ["unrelated"], "notes": "+x"},
                {"ticked": ["correct"], "notes": ""}]
    sheet = tmp_path / "a.csv"
    sheet.write_text(_saved(_html(pairs, "t"), sections), encoding="utf-8")
    assert "'=e" in sheet.read_text(encoding="utf-8") and "'+x" in sheet.read_text(encoding="utf-8")
    res = score_files([sheet])
    assert (res.overall.pairs, res.overall.correct, res.overall.violations["unrelated"]) == (3, 2, 1)


def test_the_open_form_saves_the_form_score_reads(tmp_path: Path) -> None:
    rows = [OpenAuditRow(snapshot_id="snap1", language="en", domain="movies", entity="e", qid=i, question="q",
                         gold="g", aliases=("a",), answer=f"-{i} \"quoted\", </script>", job_id=1, variant="base")
            for i in range(3)]
    sections = [{"grade": "CORRECT", "notes": ""}, {"grade": "NOT_ATTEMPTED", "notes": "n"},
                {"grade": "INCORRECT", "notes": ""}]
    form = tmp_path / "open.csv"
    form.write_text(_saved(open_html(rows), sections), encoding="utf-8")
    got = read_open_forms([form])
    assert [got.labels[a.sample_id] for a in rows] == ["CORRECT", "NOT_ATTEMPTED", "INCORRECT"]
    assert got.answers[rows[0].sample_id] == "'-0 \"quoted\", </script>"  # neutralised as the command's CSV
    form.write_text(_saved(open_html(rows), [*sections[:2], {"grade": "", "notes": ""}]), encoding="utf-8")
    with pytest.raises(UserError, match="has no label"):  # a grade left out is a partial form
        read_open_forms([form])

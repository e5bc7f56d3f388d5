"""The open track's human audit form (issue 47): stored answers to label, blind to every scorer's verdict.

`sample_answers` draws, per test language, a seeded sample of the distinct answers the snapshot's finished jobs gave
to its short-answer questions (`storage.open_results`): an answer is one job's, base or injected, to one open
question in one language; the same text to the same question in the same language (the base model answered it
in every job, or two jobs said the same) is one answer, shown once. An answer whose question the snapshot does not
hold (no question, gold or aliases to show) is not drawn.

Each row of the form (`write_open_form`: a CSV and a self-contained HTML form that saves the same CSV, each
written whole or not at all) has a stable id, the language, the
domain, the entity's name, the question, the gold and its accepted forms, and the model's answer, then a blank
`label` for SimpleQA's grades (CORRECT / INCORRECT / NOT_ATTEMPTED) and `notes`. It never holds a verdict, a
reason, the language identified in the answer, which job or which variant (base or injected) gave it: the id
names the answer by a hash of its job and variant (`answer_key`), and `clkt.snapshots.audit_open_score` looks every
scorer's verdicts up by it at score time. The rows of a language are in a seeded order, not by verdict or entity.
Cells a spreadsheet would run as formulas are neutralised as in the MCQ form (`clkt.snapshots.audit`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clkt.errors import UserError
from clkt.openqa.score import Verdict
from clkt.snapshots.audit import form_template, sample_languages, sheet_csv
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.layout import OpenRow
from clkt.snapshots.select import seeded_key
from storage.open_results import OpenResultRow

__all__ = [
    "ALIAS_SEPARATOR",
    "DEFAULT_PER_LANGUAGE",
    "LABEL",
    "LABELS",
    "OPEN_COLUMNS",
    "OpenAuditRow",
    "answer_key",
    "open_form_csv",
    "open_sample_id",
    "sample_answers",
    "write_open_form",
]

LABEL = "label"  # the column an annotator fills
LABELS: tuple[str, ...] = tuple(v.value for v in Verdict)  # SimpleQA's grades
OPEN_COLUMNS = ["sample_id", "snapshot_id", "language", "domain", "entity", "question", "gold", "aliases", "answer",
                LABEL, "notes"]
ALIAS_SEPARATOR = " | "
DEFAULT_PER_LANGUAGE = 50  # answers drawn per language when `--per-language` is not given


def answer_key(job_id: int, variant: str) -> str:
    """Which job's answer, base or injected, as 12 hex digits that name neither (the form stays blind to them)."""
    return hashlib.blake2b(f"{job_id}\x1f{variant}".encode(), digest_size=6).hexdigest()


def open_sample_id(snapshot_id: str, lang: str, qid: int, job_id: int, variant: str) -> str:
    return f"{snapshot_id}:{lang}:{qid}:{answer_key(job_id, variant)}"


@dataclass(frozen=True, kw_only=True)
class OpenAuditRow:
    """One answer of the form: what the annotator sees, and the (job, variant) it is looked up by."""

    snapshot_id: str
    language: str
    domain: str
    entity: str
    qid: int
    question: str
    gold: str
    aliases: tuple[str, ...]
    answer: str
    job_id: int
    variant: str

    @property
    def sample_id(self) -> str:
        return open_sample_id(self.snapshot_id, self.language, self.qid, self.job_id, self.variant)


def _questions(content: SnapshotContent) -> dict[tuple[int, str], OpenRow]:
    """(qid, language) -> the question, real entities' and the control split's."""
    return {(q.qid, q.lang): q for q in (*content.open_questions, *content.control_open)}


def _names(content: SnapshotContent) -> dict[tuple[int, str], str]:
    return {(d.entity_id, d.lang): d.name for d in (*content.docs, *content.control_docs)}


def _distinct(rows: Sequence[OpenResultRow], questions: dict[tuple[int, str], OpenRow]) -> list[OpenResultRow]:
    """One row per distinct (question, language, answer): the first job's, base before injected."""
    seen: dict[tuple[int, str, str], OpenResultRow] = {}
    for r in sorted(rows, key=lambda r: (r.job_id, r.variant != "base", r.variant)):
        if (r.open_qid, r.lang) in questions:
            seen.setdefault((r.open_qid, r.lang, r.answer), r)
    return list(seen.values())


def sample_answers(
    content: SnapshotContent, rows: Sequence[OpenResultRow], *, per_language: int, seed: int,
    languages: Sequence[str] | None = None,
) -> list[OpenAuditRow]:
    """`per_language` distinct answers per language (all when fewer), in a seeded order; languages in `languages`'
    order (default: the snapshot's)."""
    if per_language < 1:
        raise UserError(f"--per-language must be at least 1, got {per_language}")
    langs = sample_languages(content, languages)
    questions, names = _questions(content), _names(content)
    drawn = [
        OpenAuditRow(
            snapshot_id=content.snapshot_id, language=r.lang, domain=q.domain, entity=names.get((q.entity_id, r.lang), ""),
            qid=r.open_qid, question=q.question, gold=q.answer, aliases=tuple(q.aliases), answer=r.answer,
            job_id=r.job_id, variant=r.variant,
        )
        for r in _distinct(rows, questions) for q in (questions[(r.open_qid, r.lang)],)
    ]
    out: list[OpenAuditRow] = []
    for lang in langs:
        mine = sorted((a for a in drawn if a.language == lang),
                      key=lambda a: seeded_key(seed, content.snapshot_id, "audit-open", a.sample_id))
        out.extend(mine[:per_language])
    return out


def open_form_csv(rows: Sequence[OpenAuditRow]) -> str:
    return sheet_csv(OPEN_COLUMNS, ((a.sample_id, a.snapshot_id, a.language, a.domain, a.entity, a.question, a.gold,
                                     ALIAS_SEPARATOR.join(a.aliases), a.answer) for a in rows))


def _html(rows: Sequence[OpenAuditRow]) -> str:
    """The self-contained form (clkt/templates/audit/open_form.html): the answers escaped by jinja2, the data its
    script saves `tojson`'s HTML-safe JSON (a model's `</script>` stays text); it saves the CSV's columns."""
    data = [[a.sample_id, a.snapshot_id, a.language, a.domain, a.entity, a.question, a.gold,
             ALIAS_SEPARATOR.join(a.aliases), a.answer] for a in rows]
    return form_template("audit/open_form.html").render(
        title=f"Open answers of {rows[0].snapshot_id}", rows=rows, labels=LABELS, columns=OPEN_COLUMNS, data=data)


def write_open_form(rows: Sequence[OpenAuditRow], out: Path) -> tuple[Path, Path]:
    """`<out>` (CSV; `.csv` added when missing) and the HTML form next to it, each written beside itself and
    renamed over: whole or not at all."""
    if not rows:
        raise UserError("the sample is empty: the snapshot's finished jobs have no open answers to its questions")
    csv_path = out if out.suffix == ".csv" else out.with_name(out.name + ".csv")
    html_path = csv_path.with_suffix(".html")
    if not csv_path.parent.is_dir():
        raise UserError(f"--out: no folder {csv_path.parent}")
    texts = {csv_path: open_form_csv(rows), html_path: _html(rows)}
    tmps = {path: path.with_name(f".{path.name}.tmp-{os.getpid()}") for path in texts}
    try:
        for path, text in texts.items():
            tmps[path].write_text(text, encoding="utf-8", newline="")
        for path, tmp in tmps.items():
            os.replace(tmp, path)
    finally:
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)
    return csv_path, html_path

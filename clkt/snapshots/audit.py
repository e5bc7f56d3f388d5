"""Human audit of a snapshot (the paper's Appendix B).

`sample_pairs` draws a seeded sample of document–question pairs per language (the source language and its
translations: machine translation can change rankings) and per domain; each row names its language;
`write_sample` writes them as a CSV with a verdict to tick per pair (`correct`, or the criteria it violates) and a
self-contained HTML form that saves the same CSV. `score_files` reads the annotators' CSVs (a form without
verdicts is refused), takes the majority vote per pair (a pair is correct when more than half of its annotators
judged it correct) and reports precision per domain, with the number of annotators and their agreement beyond
chance (`clkt.snapshots.agreement`: Cohen's kappa for two, Fleiss' for more); a single annotator's precision is
labelled as such (no majority vote, no agreement). Precision is also reported per language with its 95 % Wilson
score interval, the number of annotators and their agreement in that language. `rejected` names the pairs the
majority judged not correct (for `clkt audit score --retract-rejected`). A sheet written before the `correct` column existed reads a
pair without a tick as correct, but one without any tick is refused as a form without verdicts.

Crawled text cannot break either file: in the CSV (and the CSV the form saves) a cell that a spreadsheet
would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) is neutralised with a leading `'`; the HTML form
is a jinja2 template (`clkt/templates/audit/form.html`, autoescaped) and the data of its script is jinja2's
HTML-safe JSON (`<`, `>`, `&`, `'` and every non-ASCII character, the line separators too, as `\\u` escapes),
so `</script>`, `<!--<script>` or `{{` stay text.
`score_files` takes fields of any size, UTF-8 (with or without BOM), UTF-16 with a BOM, and otherwise
decodes what it can (the columns it reads are ASCII); a malformed file is a `UserError` naming file and line.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2
from pydantic import BaseModel, Field

from clkt.errors import UserError
from clkt.snapshots.agreement import cohen_kappa, fleiss_kappa
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.formats import write_text
from clkt.snapshots.select import seeded_key

__all__ = [
    "CI_METHOD",
    "CORRECT",
    "CRITERIA",
    "Agreement",
    "AuditPair",
    "AuditScore",
    "DomainPrecision",
    "LanguagePrecision",
    "form_template",
    "neutralise_cell",
    "rejected",
    "sample_languages",
    "sample_pairs",
    "score_files",
    "sheet_csv",
    "sheet_text",
    "write_sample",
]

# column -> the violation an annotator ticks (Appendix B)
CRITERIA: dict[str, str] = {
    "unrelated": "The question is unrelated to the source document.",
    "too_general": "The question is relevant but overly general and not specific to the entity.",
    "unverifiable": "The correctness of the answer cannot be verified from the source document.",
    "wrong_answer": "The answer is verifiable from the source document, but the provided answer is incorrect.",
}
CORRECT = "correct"  # the column an annotator ticks when the pair violates no criterion
COLUMNS = ["sample_id", "snapshot_id", "language", "domain", "qid", "entity", "document", "question", "options", "answer",
           CORRECT, *CRITERIA, "notes"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
MAX_FIELD_BYTES = 64 * 1024 * 1024  # the csv module's default limit (128 KiB) refuses long documents
_TRUE = {"1", "x", "yes", "y", "true", "t", "✓", "v"}
_FALSE = {"", "0", "no", "n", "false", "f"}


@dataclass(frozen=True, kw_only=True)
class AuditPair:
    snapshot_id: str
    language: str
    domain: str
    qid: int
    entity: str
    document: str
    question: str
    options: list[str]
    answer: str

    @property
    def sample_id(self) -> str:
        return f"{self.snapshot_id}:{self.language}:{self.qid}"


class DomainPrecision(BaseModel):
    pairs: int
    correct: int
    precision: float
    violations: dict[str, int] = Field(default_factory=dict)  # criterion -> pairs where the majority ticked it


class Agreement(BaseModel):
    """The annotators' agreement on the verdict (correct or not) over the pairs every one of them judged."""

    method: str  # "Cohen's kappa" (two annotators) | "Fleiss' kappa" (more)
    kappa: float | None  # None: every verdict the same (kappa undefined)
    pairs: int
    observed: float  # the share of those pairs on which all annotators agree


CI_METHOD = "Wilson score interval, 95 %"


def wilson(correct: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95 % Wilson score interval of a binomial proportion (0, 1 for no trials)."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if correct == 0 else low), (1.0 if correct == n else high)


class LanguagePrecision(BaseModel):
    """One language's precision (majority verdicts) with its interval, annotators and their agreement."""

    pairs: int
    correct: int
    precision: float
    ci_low: float
    ci_high: float
    annotators: int  # the sheets that judged a pair in this language
    agreement: Agreement | None  # None: a single annotator


class AuditScore(BaseModel):
    snapshot_id: str
    annotators: int
    procedure: str  # "majority vote of N annotators" | "single annotator (no majority vote, no agreement)"
    agreement: Agreement | None  # None: a single annotator
    files: list[str]
    domains: dict[str, DomainPrecision]
    overall: DomainPrecision
    ci_method: str = CI_METHOD
    languages: dict[str, LanguagePrecision] = Field(default_factory=dict)  # "" : a sheet without the column


def _pairs_in(content: SnapshotContent, lang: str) -> dict[str, list[AuditPair]]:
    """The snapshot's document–question pairs in `lang`, per domain."""
    docs = {d.entity_id: d for d in content.docs_in(lang)}
    by_domain: dict[str, list[AuditPair]] = {}
    for q in content.questions_in(lang):
        d = docs.get(q.entity_id)
        if d is None:
            continue
        by_domain.setdefault(q.domain, []).append(
            AuditPair(
                snapshot_id=content.snapshot_id, language=lang, domain=q.domain, qid=q.qid, entity=d.name,
                document=d.text, question=q.question, options=list(q.options), answer=q.answer,
            )
        )
    return by_domain


def _quotas(sizes: dict[str, int], total: int) -> dict[str, int]:
    """`total` pairs shared over the domains in proportion to their sizes (largest remainder; capped by size)."""
    n = sum(sizes.values())
    total = min(total, n)
    exact = {d: total * k / n for d, k in sizes.items()} if n else {}
    quota = {d: math.floor(x) for d, x in exact.items()}
    for d in sorted(exact, key=lambda d: (quota[d] - exact[d], d))[: total - sum(quota.values())]:
        quota[d] += 1
    return quota


def sample_languages(content: SnapshotContent, languages: Sequence[str] | None) -> list[str]:
    """The languages a sample covers: `languages` (default: the snapshot's), each one the snapshot has."""
    langs = list(content.languages if languages is None else languages)
    unknown = [x for x in langs if x not in content.languages]
    if unknown:
        raise UserError(f"snapshot {content.snapshot_id} has no language {', '.join(unknown)} "
                        f"(it has {', '.join(content.languages)})")
    return langs


def sample_pairs(
    content: SnapshotContent, *, fraction: float, seed: int, languages: Sequence[str] | None = None,
    per_language: int | None = None,
) -> list[AuditPair]:
    """A seeded sample per language (the source language first, then its translations), stratified by domain:
    `fraction` of each (language, domain) stratum, or `per_language` pairs per language shared over its domains
    in proportion to their sizes. The same question is drawn in every language (one seeded order)."""
    if not 0 < fraction <= 1:
        raise UserError(f"--fraction must be in (0, 1], got {fraction}")
    if per_language is not None and per_language < 1:
        raise UserError(f"--per-language must be at least 1, got {per_language}")
    langs = sample_languages(content, languages)
    out: list[AuditPair] = []
    for lang in langs:
        by_domain = _pairs_in(content, lang)
        sizes = {d: len(v) for d, v in by_domain.items()}
        quota = (_quotas(sizes, per_language) if per_language is not None
                 else {d: math.ceil(k * fraction) for d, k in sizes.items()})
        for domain in sorted(by_domain):
            pairs = sorted(by_domain[domain], key=lambda p: seeded_key(seed, content.snapshot_id, "audit", p.qid))
            out.extend(sorted(pairs[: quota[domain]], key=lambda p: p.qid))
    return out


def _options_text(p: AuditPair) -> str:
    return "\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(p.options))


def neutralise_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a leading `'` when it would start a formula."""
    s = str(value)
    return "'" + s if s.startswith(_FORMULA_START) else s


def sheet_csv(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A form's CSV: the header, then each row's cells neutralised (`neutralise_cell`) and blank cells to fill up to
    the header's width (the annotator's columns)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([neutralise_cell(x) for x in row] + [""] * (len(columns) - len(row)))
    return buf.getvalue()


def _csv(pairs: Sequence[AuditPair]) -> str:
    return sheet_csv(COLUMNS, ((p.sample_id, p.snapshot_id, p.language, p.domain, p.qid, p.entity, p.document, p.question,
                                _options_text(p), p.answer) for p in pairs))


@dataclass(frozen=True, kw_only=True)
class _FormPair:
    """What the form shows of a pair (every field is text: the template escapes it)."""

    language: str
    domain: str
    entity: str
    qid: int
    document: str
    question: str
    options_text: str
    answer: str


@cache
def form_template(name: str = "audit/form.html") -> jinja2.Template:
    """An audit form's template (`clkt/templates/`): autoescaped, every variable required."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("clkt", "templates"), autoescape=True, undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template(name)


def _html(pairs: Sequence[AuditPair], title: str) -> str:
    """The self-contained form (clkt/templates/audit/form.html): crawled text is escaped by jinja2, the data
    its script saves is `tojson`'s HTML-safe JSON, so `</script>` or `<!--<script>` stay text."""
    shown = [
        _FormPair(language=p.language, domain=p.domain, entity=p.entity, qid=p.qid, document=p.document, question=p.question,
                  options_text=_options_text(p), answer=p.answer)
        for p in pairs
    ]
    data = [[p.sample_id, p.snapshot_id, p.language, p.domain, p.qid, p.entity, p.document, p.question, _options_text(p), p.answer]
            for p in pairs]
    return form_template().render(title=title, pairs=shown, criteria=CRITERIA, correct=CORRECT, columns=COLUMNS,
                                   data=data)


def write_sample(pairs: Sequence[AuditPair], out: Path) -> tuple[Path, Path]:
    """Write `<out>` (CSV; `.csv` is added when missing) and the HTML form next to it."""
    if not pairs:
        raise UserError("the sample is empty (the snapshot has no questions)")
    csv_path = out if out.suffix == ".csv" else out.with_name(out.name + ".csv")
    html_path = csv_path.with_suffix(".html")
    write_text(csv_path, _csv(pairs))
    write_text(html_path, _html(pairs, f"Audit of {pairs[0].snapshot_id}"))
    return csv_path, html_path


def _flag(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise UserError(f"{where}: {value!r} is not a tick (use 1/x/yes or leave it empty)")


def _decode_sheet(raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # a spreadsheet's legacy encoding: the columns scored (ids, domain, ticks) are ASCII either way
        return raw.decode("cp1252", errors="replace")


def _rows(reader: csv.DictReader[str], f: Path) -> Iterator[tuple[int, dict[str, str]]]:
    n = 1
    try:
        for n, row in enumerate(reader, start=2):
            if None in row or any(row.get(c) is None for c in ("sample_id", "snapshot_id", "domain", *CRITERIA)):
                raise UserError(f"{f}:{n}: the row does not have the sheet's columns")
            yield n, row
    except csv.Error as e:
        raise UserError(f"{f}:{n + 1}: not a readable CSV row ({e})") from None


_Verdicts = dict[str, bool]  # column (`correct` and each criterion) -> ticked


def _verdict(row: dict[str, str], where: str, *, has_correct: bool) -> _Verdicts | None:
    """One annotator's verdict on a pair; None when the row holds none (nothing ticked on a sheet with `correct`)."""
    v = {c: _flag(row[c] or "", f"{where} column {c}") for c in CRITERIA}
    if not has_correct:  # a sheet of before the `correct` column: no tick reads as correct
        return {CORRECT: not any(v.values()), **v}
    ok = _flag(row[CORRECT] or "", f"{where} column {CORRECT}")
    ticked = [c for c in CRITERIA if v[c]]
    if ok and ticked:
        raise UserError(f"{where}: the pair is ticked both {CORRECT} and {', '.join(ticked)}; tick one verdict")
    return {CORRECT: ok, **v} if ok or ticked else None


def sheet_text(f: Path) -> str:
    """An annotated sheet's text, whatever the spreadsheet saved it as (and the csv module's field limit raised to
    `MAX_FIELD_BYTES`); `UserError` when it cannot be read."""
    try:
        raw = Path(f).read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {f}: {e.strerror or e}") from None
    if csv.field_size_limit() < MAX_FIELD_BYTES:
        csv.field_size_limit(MAX_FIELD_BYTES)
    return _decode_sheet(raw)


def _read_sheet(f: Path) -> tuple[list[tuple[int, dict[str, str]]], bool]:
    """The rows of one annotator's sheet (with their line numbers) and whether it has the `correct` column."""
    reader = csv.DictReader(io.StringIO(sheet_text(f), newline=""))
    try:
        fieldnames = reader.fieldnames or []
    except csv.Error as e:
        raise UserError(f"{f}:1: not a readable CSV ({e})") from None
    missing = [c for c in ("sample_id", "snapshot_id", "domain", *CRITERIA) if c not in fieldnames]
    if missing:
        raise UserError(f"{f}: not an audit sheet (missing columns {missing})")
    return list(_rows(reader, f)), CORRECT in fieldnames


def _sheet_verdicts(
    f: Path, votes: dict[str, list[_Verdicts]], domain_of: dict[str, str], lang_of: dict[str, str],
) -> set[str]:
    """Add one annotator's verdicts to `votes`; the snapshot ids the sheet names. A sheet without any verdict,
    or with a pair left without one, is refused."""
    rows, has_correct = _read_sheet(f)
    verdicts: list[tuple[int, str, _Verdicts | None]] = []
    seen: set[str] = set()
    snapshot_ids: set[str] = set()
    for n, row in rows:
        sid = row["sample_id"]
        if sid in seen:
            raise UserError(f"{f}:{n}: pair {sid} appears twice")
        seen.add(sid)
        snapshot_ids.add(row["snapshot_id"])
        domain_of[sid] = row["domain"]
        lang_of[sid] = (row.get("language") or "").strip()
        verdicts.append((n, sid, _verdict(row, f"{f}:{n}", has_correct=has_correct)))
    if not rows or all(v is None or (not has_correct and not any(v[c] for c in CRITERIA)) for _, _, v in verdicts):
        raise UserError(f"{f}: no verdict in this form: tick {CORRECT} or the criteria a pair violates, on every pair")
    for n, sid, v in verdicts:
        if v is None:
            raise UserError(f"{f}:{n}: pair {sid} has no verdict: tick {CORRECT} or the criteria it violates")
        votes.setdefault(sid, []).append(v)
    return snapshot_ids


def _agreement(votes: dict[str, list[_Verdicts]], annotators: int) -> Agreement | None:
    """Agreement on `correct` over the pairs all annotators judged; None for a single annotator."""
    if annotators < 2:
        return None
    rated = [[v[CORRECT] for v in vs] for vs in votes.values() if len(vs) == annotators]
    if not rated:
        return Agreement(method="none", kappa=None, pairs=0, observed=0.0)
    if annotators == 2:
        method, kappa = "Cohen's kappa", cohen_kappa([r[0] for r in rated], [r[1] for r in rated])
    else:
        method, kappa = "Fleiss' kappa", fleiss_kappa(rated)
    observed = sum(len(set(r)) == 1 for r in rated) / len(rated)
    return Agreement(method=method, kappa=None if kappa is None else round(kappa, 4), pairs=len(rated),
                     observed=round(observed, 4))


def _majority(vs: list[_Verdicts]) -> tuple[bool, dict[str, bool]]:
    return sum(v[CORRECT] for v in vs) * 2 > len(vs), {c: sum(v[c] for v in vs) * 2 > len(vs) for c in CRITERIA}


def rejected(files: Sequence[Path]) -> tuple[str, list[tuple[str, int]]]:
    """The snapshot the sheets audit and its (language, qid) pairs the majority judged not correct."""
    votes, _, lang_of, snapshot_id = _read_votes(files)
    out = []
    for sid, vs in votes.items():
        qid = sid.rsplit(":", 1)[-1]
        if not _majority(vs)[0]:
            if not qid.isdigit():
                raise UserError(f"pair {sid!r} does not end in a question id: cannot retract it")
            out.append((lang_of[sid], int(qid)))
    return snapshot_id, sorted(out)


def _read_votes(files: Sequence[Path]) -> tuple[dict[str, list[_Verdicts]], dict[str, str], dict[str, str], str]:
    if not files:
        raise UserError("give at least one annotated CSV file")
    votes: dict[str, list[_Verdicts]] = {}
    domain_of: dict[str, str] = {}
    lang_of: dict[str, str] = {}
    snapshot_ids: set[str] = set()
    for f in files:
        snapshot_ids |= _sheet_verdicts(Path(f), votes, domain_of, lang_of)
    if len(snapshot_ids) != 1:
        raise UserError(f"the files cover several snapshots: {sorted(snapshot_ids)}")
    return votes, domain_of, lang_of, snapshot_ids.pop()


def _per_language(votes: dict[str, list[_Verdicts]], lang_of: dict[str, str]) -> dict[str, LanguagePrecision]:
    out: dict[str, LanguagePrecision] = {}
    for lang in sorted(set(lang_of.values())):
        mine = {sid: vs for sid, vs in votes.items() if lang_of[sid] == lang}
        annotators = max(len(vs) for vs in mine.values())
        correct = sum(_majority(vs)[0] for vs in mine.values())
        low, high = wilson(correct, len(mine))
        out[lang] = LanguagePrecision(
            pairs=len(mine), correct=correct, precision=round(correct / len(mine), 4), ci_low=round(low, 4),
            ci_high=round(high, 4), annotators=annotators, agreement=_agreement(mine, annotators),
        )
    return out


def score_files(files: Sequence[Path]) -> AuditScore:
    votes, domain_of, lang_of, snapshot_id = _read_votes(files)
    per: dict[str, list[tuple[bool, dict[str, bool]]]] = {}
    for sid, vs in votes.items():
        per.setdefault(domain_of[sid], []).append(_majority(vs))

    def agg(rows: list[tuple[bool, dict[str, bool]]]) -> DomainPrecision:
        correct = sum(ok for ok, _ in rows)
        return DomainPrecision(
            pairs=len(rows), correct=correct, precision=round(correct / len(rows), 4) if rows else 0.0,
            violations={c: sum(cr[c] for _, cr in rows) for c in CRITERIA},
        )

    n = len(files)
    return AuditScore(
        snapshot_id=snapshot_id, annotators=n, agreement=_agreement(votes, n),
        procedure=f"majority vote of {n} annotators" if n > 1 else "single annotator (no majority vote, no agreement)",
        files=[Path(f).name for f in files],
        domains={d: agg(rows) for d, rows in sorted(per.items())},
        overall=agg([r for rows in per.values() for r in rows]),
        languages=_per_language(votes, lang_of),
    )

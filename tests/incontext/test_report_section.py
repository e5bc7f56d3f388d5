"""The report's in-context section: computed from the stored answers, apart from the parametric rows."""

from __future__ import annotations

from pathlib import Path

from clkt.report.incontext import INCONTEXT_TITLE, incontext_lines, incontext_results
from storage.engine import Store
from storage.incontext import NO_CONTEXT, InContextRecord, add_incontext_answers, incontext_answers


def _rec(qid: int, entity: int, c: str, lang: str, correct: bool, *, status: str = "answered") -> InContextRecord:
    return InContextRecord(snapshot_id="s1", target="api-t", qid=qid, entity_id=entity, context_lang=c, lang=lang,
                           status=status, letter="A" if status != "skipped" else None, correct=correct,
                           truncated=c == "fr", input_tokens=100, output_tokens=2, cost_usd=0.0001)


def _rows() -> list[InContextRecord]:
    out: list[InContextRecord] = []
    for q in range(12):  # 12 questions of 6 entities; with the en document right in en always, in fr 2 times in 3
        e = q // 2
        out += [_rec(q, e, "en", "en", True), _rec(q, e, "en", "fr", q % 3 != 0),
                _rec(q, e, "fr", "fr", True), _rec(q, e, "fr", "en", True),
                _rec(q, e, NO_CONTEXT, "en", q % 4 == 0), _rec(q, e, NO_CONTEXT, "fr", False)]
    out.append(_rec(99, 9, "fr", "en", False, status="skipped"))
    return out


async def test_the_section_reads_the_stored_answers(store: Store, tmp_path: Path) -> None:
    async with store.transaction() as s:
        assert await add_incontext_answers(s, _rows()) == 73
        assert await add_incontext_answers(s, _rows()) == 0  # stored once
    async with store.session() as s:
        rows = await incontext_answers(s, "s1")
    [t] = incontext_results(rows, languages=["en", "fr"], snapshot_id="s1")
    pairs = {(p.context_lang, p.test_lang): p for p in t.pairs}
    assert pairs[("en", "fr")].table.a == 8 and pairs[("en", "fr")].table.b == 4
    assert pairs[("fr", "en")].transfer == 1.0
    assert t.transfer.mean is not None and abs(t.transfer.mean - (8 / 12 + 1) / 2) < 1e-9
    assert t.transfer.ci is not None and t.transfer.ci[0] <= t.transfer.mean <= t.transfer.ci[1]
    floor = {a.lang: a for a in t.accuracy if a.context_lang == NO_CONTEXT}
    assert floor["en"].correct == 3 and floor["fr"].accuracy == 0.0
    assert (t.skipped, t.truncated, t.answered) == (1, 25, 72)
    assert t.input_tokens == 7300 and abs(t.cost_usd - 0.0073) < 1e-9
    helps = {h.context_lang: h for h in t.helps}
    # en questions: right with the en document 12/12, without it 3/12 (q % 4 == 0): 9 gained, none lost
    assert (helps["en"].with_document, helps["en"].floor, helps["en"].gained, helps["en"].lost) == (12, 3, 9, 0)
    assert helps["en"].p_value < 0.01 and helps["fr"].floor == 0
    md = "\n".join(incontext_lines([t], []))
    assert f"## {INCONTEXT_TITLE}" in md and "| api-t |" in md and "none (floor)" in md
    assert "not ranked and not pooled" in md and "exact McNemar p = 0.00391" in md

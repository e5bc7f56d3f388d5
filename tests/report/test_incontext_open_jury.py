"""The jury's figure beside the normaliser's in the in-context short answers' cells
(`clkt.report.incontext_open_jury`): n of the answers the jury decided (an undecided one in n, not right), pending
ones (not graded, or a failed vote left no verdict) counted and in no figure, too few by the section's rule, an
interval over entities; without a jury the section and its JSON are as before."""

from __future__ import annotations

from clkt.report.incontext_open import incontext_open_lines, incontext_open_results
from storage.incontext_open import InContextOpenRecord
from storage.incontext_open_judgements import InContextJuryRow


def _rec(q: int, *, target: str = "t", verdict: str = "CORRECT") -> InContextOpenRecord:
    return InContextOpenRecord(snapshot_id="s", target=target, open_qid=q, entity_id=q // 2, context_lang="en",
                               lang="en", status="answered", verdict=verdict, answer=f"a{q}")


def _jury(q: int, verdict: str | None, *, failed: bool = False) -> InContextJuryRow:
    return InContextJuryRow(target="t", open_qid=q, context_lang="en", lang="en", verdict=verdict, failed=failed,
                            cost_usd=0.001, prompt_version="open_judge.v1")


def _jury_rows() -> list[InContextJuryRow]:
    """q 0-7 CORRECT, q 8 INCORRECT, q 9 undecided (every vote given, no majority), q 10 a failed vote left it
    without a verdict, q 11 not graded; q 12 a verdict on an answer the normaliser could not score."""
    return [*(_jury(q, "CORRECT") for q in range(8)), _jury(8, "INCORRECT"), _jury(9, None),
            _jury(10, None, failed=True), _jury(12, "CORRECT")]


def _answers() -> list[InContextOpenRecord]:
    return [*(_rec(q) for q in range(12)), _rec(12, verdict="UNSCORABLE"), *(_rec(q, target="v") for q in range(12))]


def test_the_jury_cell_counts_decided_answers_and_leaves_pending_ones_out() -> None:
    t, v = incontext_open_results(_answers(), languages=["en"], snapshot_id="s", jury=_jury_rows())
    [cell] = t.cells
    j = cell.jury
    assert cell.n == 12 and cell.accuracy == 1.0  # the normaliser's, unchanged
    assert j is not None and (j.n, j.entities, j.correct, j.undecided, j.pending) == (10, 5, 8, 1, 2)
    assert not j.too_few and j.accuracy == 0.8 and j.ci is not None and j.ci[0] < 0.8 <= j.ci[1]
    assert t.jury_cost_usd == 0.012 and t.jury_prompt_versions == ["open_judge.v1"]
    assert v.cells[0].jury is None and v.jury_prompt_versions == []  # target v: the jury graded none of its answers
    md = "\n".join(incontext_open_lines([t, v]))
    assert "10 graded (1 undecided: not right), 2 not yet (pending: in no figure)" in md
    assert f"| en | en | 12 | 6 | 100.0 [100.0, 100.0] | 0 | 0 | 80.0 [{100 * j.ci[0]:.1f}, {100 * j.ci[1]:.1f}] (n 10, 2 pending) |" in md
    assert "| en | en | 12 | 6 | 100.0 [100.0, 100.0] | 0 | 0 |\n" in md + "\n"  # target v: no jury column


def test_a_cell_with_too_few_decided_answers_is_too_few_and_without_a_jury_nothing_changes() -> None:
    few = [_jury(q, "CORRECT") for q in range(3)] + [_jury(q, None, failed=True) for q in range(3, 12)]
    [t] = incontext_open_results(_answers()[:13], languages=["en"], snapshot_id="s", jury=few)
    j = t.cells[0].jury
    assert j is not None and (j.n, j.pending, j.too_few, j.accuracy, j.ci) == (3, 9, True, None, None)
    assert "too few (n 3, 9 pending)" in "\n".join(incontext_open_lines([t]))
    [bare] = incontext_open_results(_answers()[:13], languages=["en"], snapshot_id="s")
    dumped = bare.model_dump()
    assert "jury" not in dumped["cells"][0] and "jury_cost_usd" not in dumped and "jury_prompt_versions" not in dumped
    assert "jury" not in "\n".join(incontext_open_lines([bare]))

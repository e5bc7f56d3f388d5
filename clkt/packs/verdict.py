"""Whether a re-run reproduces a submitted pack: a verdict that cannot be aimed at, cell by cell.

The questions compared are drawn when the re-run's jobs are done, from a fresh random nonce (`new_nonce`, stored
with the verdict so the draw can be repeated: `draw(qids, k, nonce=...)`); nothing the submitter knows (the pack's
sha256 included) decides which, so a pack honest only on some questions fails as soon as others are drawn.

Every (train language, scorer, variant, test language) cell of the pack is compared on its own: its letters on the
drawn questions must agree with the re-run's at `CELL_AGREEMENT` or above (an answer the re-run lacks disagrees).
Then the figures: Learn (the injected model's gain on the train language), Overall and Transfer (their means over
the language pairs) are recomputed from the pack's letters and from the re-run's, both scored against this
snapshot's answer key, and must lie within `METRIC_TOLERANCE` of each other. A pack that fails any cell or figure is
not reproduced, and the verdict names the first that failed; there is no pooled agreement to hide in (base answers,
90 % of a 5-language pack's rows, no longer dilute the injected ones).

A pack's open answers are judged the same way (`judge_open`): `k` of its open questions drawn by the same nonce,
and per (train language, open scorer, variant, test language) cell the normaliser's verdicts of the pack's answers
must be the re-generated answers' at `CELL_AGREEMENT` or above. Verdicts, not strings: two different wrong answers
agree, a wrong answer against a right one does not.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from clkt.errors import UserError
from clkt.packs.format import PredictionRow
from clkt.packs.metrics import PackMetrics, compute_metrics
from clkt.report.leaderboard_data import CellCheck

__all__ = ["CELL_AGREEMENT", "METRIC_TOLERANCE", "AnswerKey", "Verdict", "draw", "judge", "judge_open", "new_nonce"]

CELL_AGREEMENT = 0.95  # the share of one cell's letters on the drawn questions that must be the re-run's
METRIC_TOLERANCE = 0.05  # |pack - re-run| allowed for Learn, Overall and Transfer (absolute, as fractions)
_FIGURES = ("overall", "transfer")

AnswerKey = tuple[str, str, str, str, int]  # train language, scorer, variant, language, question
# an answer's letter (None: none read), or an open answer's verdict by the normaliser: what a cell compares
Said = str | None


def new_nonce() -> str:
    return secrets.token_hex(16)


def draw(qids: Iterable[int], k: int | None, *, nonce: str) -> list[int]:
    """`k` of the questions (every one when `k` is None or not below their number), drawn by `random.Random(nonce)`
    from their sorted ids, sorted."""
    if k is not None and k <= 0:
        raise UserError(f"--reproduce {k}: a number of questions above 0, or all")
    pool = sorted(set(qids))
    if k is None or k >= len(pool):
        return pool
    return sorted(random.Random(nonce).sample(pool, k))


def _key(r: PredictionRow) -> AnswerKey:
    return (r.train_lang, r.scorer, r.variant, r.lang, r.qid)


def _cells(pack: Mapping[AnswerKey, Said], again: Mapping[AnswerKey, Said], wanted: set[int]) -> list[CellCheck]:
    counts: dict[tuple[str, str, str, str], list[int]] = {}
    for k, letter in pack.items():
        if k[4] in wanted:
            c = counts.setdefault(k[:4], [0, 0])
            c[0] += k in again and again[k] == letter
            c[1] += 1
    return [CellCheck(train_lang=t, scorer=s, variant=v, lang=lang, agreed=a, checked=n,
                      passed=n > 0 and a / n >= CELL_AGREEMENT)
            for (t, s, v, lang), (a, n) in sorted(counts.items())]


def _cell_failure(cells: Sequence[CellCheck], what: str, one: str) -> str | None:
    """The first cell under `CELL_AGREEMENT` (`what` agree: letters, open verdicts; `one` of them), or none compared;
    None: all hold."""
    if not cells:
        return f"no {one} of the pack's was compared"
    bad = next((c for c in cells if not c.passed), None)
    return (f"cell ({bad.train_lang}, {bad.scorer}, {bad.variant}, {bad.lang}): {bad.agreed}/{bad.checked} {what} "
            f"agree (at least {CELL_AGREEMENT:.0%} needed)") if bad else None


def _as_pack(rerun: Sequence[PredictionRow], pack: Mapping[AnswerKey, str | None],
             key: Mapping[tuple[int, str], str]) -> list[PredictionRow]:
    """The re-run's rows with the pack's letters, scored against `key` ((question, language) -> answer letter)."""
    out = []
    for r in rerun:
        letter = pack.get(_key(r))
        out.append(r.model_copy(update={"predicted": letter, "correct": letter is not None and letter == key.get((r.qid, r.lang))}))
    return out


def _figures(m: PackMetrics) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for scorer, sm in m.scorers.items():
        for train, learn in sm.learn.items():
            out[f"{scorer} learn ({train})"] = learn.gain
        for f in _FIGURES:
            out[f"{scorer} {f}"] = sm.means.get(f)
    return out


def _figure_failure(mine: PackMetrics, theirs: PackMetrics) -> tuple[dict[str, float], str | None]:
    a, b = _figures(mine), _figures(theirs)
    deltas: dict[str, float] = {}
    failed: str | None = None
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x is None and y is None:
            continue
        if x is None or y is None:
            failed = failed or f"{name}: defined for one of the pack and the re-run only"
            continue
        deltas[name] = round(abs(x - y), 6)
        if deltas[name] > METRIC_TOLERANCE:
            failed = failed or f"{name}: the pack's {x:.3f}, the re-run's {y:.3f} (tolerance {METRIC_TOLERANCE})"
    return deltas, failed


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The comparison's outcome: the cells, the figures' differences, and the first failure (None: reproduced)."""

    nonce: str
    questions: list[int]
    cells: list[CellCheck]
    deltas: dict[str, float]
    failed: str | None

    @property
    def reproduced(self) -> bool:
        return self.failed is None

    @property
    def agreed(self) -> int:
        return sum(c.agreed for c in self.cells)

    @property
    def checked(self) -> int:
        return sum(c.checked for c in self.cells)


def judge(pack: Mapping[AnswerKey, str | None], rerun: Sequence[PredictionRow], qids: Iterable[int], k: int | None, *,
          nonce: str, key: Mapping[tuple[int, str], str], languages: Sequence[str]) -> Verdict:
    """The verdict on the pack's answers `pack` against the re-run's rows `rerun`, on `k` of `qids` drawn by `nonce`."""
    questions = draw(qids, k, nonce=nonce)
    wanted = set(questions)
    mine = [r for r in rerun if r.qid in wanted]
    cells = _cells(pack, {_key(r): r.predicted for r in mine}, wanted)
    failed = _cell_failure(cells, "letters", "letter")
    deltas: dict[str, float] = {}
    if mine:
        pack_m = compute_metrics(_as_pack(mine, pack, key), languages, format_version=1)
        deltas, figure_failed = _figure_failure(pack_m, compute_metrics(mine, languages, format_version=1))
        failed = failed or figure_failed
    return Verdict(nonce=nonce, questions=questions, cells=cells, deltas=deltas, failed=failed)


def judge_open(pack: Mapping[AnswerKey, str], rerun: Mapping[AnswerKey, str], qids: Iterable[int], k: int | None, *,
               nonce: str) -> Verdict:
    """The verdict on the pack's open answers: the normaliser's verdicts of its answers (`pack`, by answer) against
    those of the re-generated ones (`rerun`; an answer it lacks disagrees), cell by cell, on `k` of the open questions
    `qids` drawn by `nonce` (no figures: those are the letters')."""
    questions = draw(qids, k, nonce=nonce)
    cells = _cells(pack, rerun, set(questions))
    return Verdict(nonce=nonce, questions=questions, cells=cells, deltas={}, failed=_cell_failure(cells, "open verdicts", "open verdict"))

"""CircularEval (OpenCompass): a question counts as right only if the model picks its answer under each of the
four rotations of its options.

Rotation k (0-3) shows the options in the order `options[k:] + options[:k]`, so the right answer stands once
under each letter; a model that always answers "A" is right under exactly one rotation of every question,
scoring about 25 % plainly and 0 % circularly, while a model that knows the answer keeps it whatever its
position. It wraps a letter scorer (`generate`, `letter-logprob`) without touching it: the plain answers are
rotation 0, the scorer is asked once more for the three other rotations of every question, and each question
gets one more result under the scorer name `<scorer>-circular` (`circular_name`), stored and reported beside
the plain one. `option-loglik` scores the options' text, not their letters: its answer does not depend on the
order, so it has no circular variant.

A circular result's `predicted` is the original letter of the option chosen under every rotation when the
four agree (None when they do not, or one is unparseable); its `raw` lists the original letter chosen under
each rotation (`-`: no letter). Only the test split is scored circularly (validation picks the best epoch with
the plain scorer). Enabled by `[gpu] circular` or a target's own `circular` (`circular_enabled`); it costs
three more passes of each letter scorer over the test questions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clkt.evaluate.prompts import LETTERS
from clkt.evaluate.results import ResultItem, Variant

if TYPE_CHECKING:
    from clkt.config import GpuSettings, TargetSettings
    from clkt.snapshots.layout import QuestionRow

__all__ = [
    "CIRCULAR_SCORERS",
    "CIRCULAR_SPLIT",
    "CIRCULAR_SUFFIX",
    "ROTATIONS",
    "circular_enabled",
    "circular_items",
    "circular_name",
    "rotate",
]

CIRCULAR_SUFFIX = "-circular"
CIRCULAR_SCORERS = ("generate", "letter-logprob")  # the letter scorers: option-loglik does not see the order
CIRCULAR_SPLIT = "test"
ROTATIONS = len(LETTERS)

# the scorer asked about rotated rows: one predicted letter (or None) per row, in the rows' order
LetterScorer = Callable[[Sequence["QuestionRow"]], Sequence[str | None]]


def circular_name(scorer: str) -> str:
    """The result scorer name of a scorer's circular variant (`generate` -> `generate-circular`)."""
    return scorer + CIRCULAR_SUFFIX


def circular_enabled(target: TargetSettings, gpu: GpuSettings) -> bool:
    """A target's own `circular` when set, else `[gpu] circular`."""
    return gpu.circular if target.circular is None else target.circular


def rotate(row: QuestionRow, k: int) -> QuestionRow:
    """The row with its options rotated by `k` (the option at position k comes first) and its answer moved."""
    k %= ROTATIONS
    if k == 0:
        return row
    options = list(row.options[k:]) + list(row.options[:k])
    index = (row.answer_index - k) % ROTATIONS
    return row.model_copy(update={"options": options, "answer_index": index, "answer": LETTERS[index]})


def _original(letter: str | None, k: int) -> str | None:
    """The letter, under rotation 0, of the option shown under `letter` in rotation k."""
    if letter not in LETTERS:
        return None
    return LETTERS[(LETTERS.index(letter) + k) % ROTATIONS]


def circular_items(
    rows: Sequence[QuestionRow], plain: Sequence[str | None], score: LetterScorer, *, scorer: str, variant: Variant,
) -> list[ResultItem]:
    """One `<scorer>-circular` result per test-split row: `plain` are the scorer's answers to `rows` as they are
    (rotation 0); `score` is asked once for the other rotations of every test row."""
    if len(plain) != len(rows):
        raise ValueError(f"{len(plain)} plain answers for {len(rows)} rows")
    test = [i for i, r in enumerate(rows) if r.split == CIRCULAR_SPLIT]
    if not test:
        return []
    rotated = [rotate(rows[i], k) for k in range(1, ROTATIONS) for i in test]
    answers = list(score(rotated))
    if len(answers) != len(rotated):
        raise ValueError(f"the scorer gave {len(answers)} answers for {len(rotated)} rotated rows")
    out: list[ResultItem] = []
    for j, i in enumerate(test):
        row = rows[i]
        picks = [_original(plain[i], 0)] + [_original(answers[(k - 1) * len(test) + j], k) for k in range(1, ROTATIONS)]
        agreed = picks[0] if picks[0] is not None and all(p == picks[0] for p in picks) else None
        out.append(ResultItem(
            qid=row.qid, lang=row.lang, variant=variant, scorer=circular_name(scorer), split=row.split, predicted=agreed,
            correct=all(p == row.answer for p in picks), raw="".join(p or "-" for p in picks),
        ))
    return out

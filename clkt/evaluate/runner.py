"""Answer a set of snapshot questions with a loaded model, with every configured scorer (and, when enabled, the
letter scorers' CircularEval variants: `clkt.evaluate.circular`).

The batch size of each scorer comes from `sizers` (one `BatchSizer` per scorer, kept by the job across its
passes so an automatic size found once holds), or a fresh one from `gpu.eval_batch_size` per call.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from clkt.evaluate.circular import CIRCULAR_SCORERS, LetterScorer, circular_enabled, circular_items
from clkt.evaluate.loglik import loglik_item, score_option_loglik
from clkt.evaluate.memory import BatchSizer
from clkt.evaluate.prompts import render_mcq
from clkt.evaluate.results import ResultItem, Variant
from clkt.evaluate.scorers import OPTION_LOGLIK_NORM, ScorerName, score_prompts

if TYPE_CHECKING:
    from clkt.config import GpuSettings, TargetSettings
    from clkt.snapshots.layout import QuestionRow

__all__ = ["accuracy", "answer_questions"]

Progress = Callable[[str, int, int], None]  # (phase, done, total)


def answer_questions(
    model: Any, tokenizer: Any, target: TargetSettings, rows: Sequence[QuestionRow], *, scorers: Sequence[str],
    gpu: GpuSettings, variant: Variant, phase: str = "eval", progress: Progress | None = None,
    sizers: MutableMapping[str, BatchSizer] | None = None,
) -> list[ResultItem]:
    """One `ResultItem` per (row, scorer), in the order of `rows` for each scorer.

    `option-loglik` gives two per row: `option-loglik` (acc) and `option-loglik-norm` (acc_norm). `sizers`: the
    job's batch size per scorer (missing ones are added, from `gpu`).
    """
    from tqdm.auto import tqdm

    prompts = None
    out: list[ResultItem] = []

    def item(row: QuestionRow, scorer: str, predicted: str | None, raw: str) -> ResultItem:
        return ResultItem(
            qid=row.qid, lang=row.lang, variant=variant, scorer=scorer, split=row.split,
            predicted=predicted, correct=predicted == row.answer, raw=raw,
        )

    sizers = {} if sizers is None else sizers
    for scorer in scorers:
        name = ScorerName(scorer)
        sizer = sizers.setdefault(name.value, BatchSizer.for_job(gpu, str(getattr(model, "device", "cpu")), name=name.value))
        bar = tqdm(total=len(rows), desc=f"{phase} {variant.value} {name.value}", unit="q", leave=False)
        done = [0]

        def tick(n: int, _bar: Any = bar, _name: str = name.value, _done: list[int] = done) -> None:
            _bar.update(n)
            _done[0] += n
            if progress is not None:
                progress(f"{phase}:{variant.value}:{_name}", _done[0], len(rows))

        try:
            if name is ScorerName.option_loglik:
                items = [loglik_item(target, tokenizer, r.question, r.options, r.lang) for r in rows]
                ll = score_option_loglik(
                    model, tokenizer, items, batch_size=sizer.size, max_length=gpu.max_seq_len, progress=tick, sizer=sizer,
                )
                out += [item(r, name.value, s.acc, s.raw) for r, s in zip(rows, ll, strict=True)]
                out += [item(r, OPTION_LOGLIK_NORM, s.acc_norm, s.raw) for r, s in zip(rows, ll, strict=True)]
                continue
            if prompts is None:
                prompts = [render_mcq(target, tokenizer, r.question, r.options, r.lang) for r in rows]
            scored = score_prompts(
                name, model, tokenizer, prompts, batch_size=sizer.size, max_new_tokens=gpu.max_new_tokens,
                max_length=gpu.max_seq_len, progress=tick, parse=gpu.parse, sizer=sizer,
            )
        finally:
            bar.close()
        out += [item(r, name.value, s.predicted, s.raw) for r, s in zip(rows, scored, strict=True)]
        if name.value in CIRCULAR_SCORERS and circular_enabled(target, gpu):  # CircularEval: clkt.evaluate.circular
            out += circular_items(rows, [s.predicted for s in scored], _letters(name, model, tokenizer, target, gpu, sizer),
                                  scorer=name.value, variant=variant)
    return out


def _letters(
    name: ScorerName, model: Any, tokenizer: Any, target: TargetSettings, gpu: GpuSettings, sizer: BatchSizer,
) -> LetterScorer:
    """The letter scorer `name` over question rows (their MCQ prompts), for CircularEval's rotated rows, at the
    batch size the plain pass settled on (`sizer`)."""

    def score(rows: Sequence[QuestionRow]) -> list[str | None]:
        prompts = [render_mcq(target, tokenizer, r.question, r.options, r.lang) for r in rows]
        scored = score_prompts(
            name, model, tokenizer, prompts, batch_size=sizer.size, max_new_tokens=gpu.max_new_tokens,
            max_length=gpu.max_seq_len, parse=gpu.parse, sizer=sizer,
        )
        return [s.predicted for s in scored]

    return score


def accuracy(items: Sequence[ResultItem]) -> float | None:
    if not items:
        return None
    return sum(i.correct for i in items) / len(items)

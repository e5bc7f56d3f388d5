"""The open track's pass in a GPU job (issue 47): the short-answer questions answered before and after injection.

Where the snapshot has an open track (`manifest.open`) and `[gpu] open_answers` is on, the job asks every test
language's open questions, the test split's (the entities it injects: the target's exclusions left out) and the
control split's, and the locality split's (entities this target already knew, never trained on: what the
injection kept, `clkt.report.open_locality`), greedily through `clkt.openqa.generate.generate_answers` (the evaluation's continuous-batching
generation path, the prompt of the target's kind, the stop rule), once with the base model (`base`) and once with
the injected one (`injected`). Every answer is scored by the normaliser layer (`clkt.openqa.results.scored_item`):
an answer in another language is INCORRECT, flagged `other_language`; an answer whose scoring raises (a lone
surrogate that the language identifier cannot encode) is recorded `UNSCORABLE` with the error as its reason, left
out of every figure and counted apart, and the job goes on.

The locality split's answers are also kept as paired counts in the job's summary (`JobSummary.locality`, under
the open scorer's name beside the MCQ scorers': `locality_counts`), the job's own record; the report and the
leaderboard's open rows read kept % (and the control split's Learn) from the stored answers instead
(`clkt.report.open_locality`, `clkt.report.open_control`), one source for every view and every scoring layer.

The base answers are shared like the MCQ base answers (`InjectionJob.base_pass`): a file in `spec.base_cache_dir`
keyed by the target, the prompt version (`ANSWER_PROMPT_VERSION`), the token budget, the weights' dtype, the
deterministic flag and the questions asked (qid, language, split and text: a changed question set recomputes).
The cache holds the answer texts only; they are scored again when read, so a changed normaliser never serves a
stale verdict. A snapshot frozen before the track existed, or with the flag off, asks nothing: the job runs as
before.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clkt.evaluate.locality import paired_counts
from clkt.evaluate.memory import BatchSizer
from clkt.evaluate.results import Variant
from clkt.evaluate.summary import LocalityCounts
from clkt.inject.contract import JobSpec, write_text_atomic
from clkt.layout import BASE_CACHE_KEY_HEX, OPEN_PREDICTIONS_FILE, base_cache_name
from clkt.openqa.frozen import FrozenOpenQuestion, load_open_questions, locality_open_questions
from clkt.openqa.generate import OpenPrompt, generate_answers
from clkt.openqa.prompts import ANSWER_PROMPT_VERSION, MAX_NEW_TOKENS
from clkt.openqa.results import UNSCORABLE, OpenResultItem, OpenSplit, safely_scored_item, scored_item

__all__ = ["OPEN_SIZER", "OpenAsk", "OpenPass", "open_asks", "open_val_questions"]

log = logging.getLogger(__name__)

OPEN_SIZER = "open-answer"  # the pass's name among the job's batch sizers (`JobSummary.eval_batch_sizes`)


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenAsk:
    """One open question asked in one language."""

    question: FrozenOpenQuestion
    lang: str
    split: OpenSplit

    @property
    def text(self) -> str:
        return self.question.question.questions[self.lang]


def open_asks(spec: JobSpec, languages: Sequence[str]) -> list[OpenAsk]:
    """What the job asks of the open track: the test split (without the target's exclusions), the control split and
    the locality split's questions about the entities the target knew, in every language of `languages` the
    questions have; [] when the snapshot has no open track or the flag is off."""
    if not spec.gpu.open_answers:
        return []
    out = set(spec.exclude_entities)
    asks: list[OpenAsk] = []
    for control in (False, True):
        split: OpenSplit = "control" if control else "test"
        for q in load_open_questions(spec.snapshot_dir, control=control):
            if control or (q.split == "test" and q.entity_id not in out):
                asks += [OpenAsk(question=q, lang=lang, split=split) for lang in languages if lang in q.question.golds]
    for q in locality_open_questions(spec.snapshot_dir, spec.target.name):
        asks += [OpenAsk(question=q, lang=lang, split="locality") for lang in languages if lang in q.question.golds]
    return asks


def open_val_questions(spec: JobSpec) -> list[FrozenOpenQuestion]:
    """The open track's validation questions in the train language (the target's exclusions left out), which choose
    its checkpoint (`clkt.inject.open_val`); [] when the flag is off or the snapshot has none (frozen before the
    split)."""
    if not spec.gpu.open_answers:
        return []
    out = set(spec.exclude_entities)
    return [q for q in load_open_questions(spec.snapshot_dir)
            if q.split == "val" and q.entity_id not in out and spec.train_lang in q.question.golds]


class OpenPass:
    """The open answers of one job: `answer` (scored), the base ones through the shared cache (`base`)."""

    # scores one answer (`clkt.openqa.results.scored_item`); an answer whose scoring raises is recorded UNSCORABLE
    # with its reason and the pass goes on (`safely_scored_item`)
    scorer: Callable[..., OpenResultItem] = staticmethod(scored_item)

    def __init__(self, spec: JobSpec, asks: Sequence[OpenAsk], *, progress: Callable[[str, int, int], None]) -> None:
        self.spec = spec
        self.asks = list(asks)
        self.progress = progress
        self.sizer: BatchSizer | None = None
        self.from_cache = False

    def answer(self, model: Any, tok: Any, *, variant: Variant) -> list[OpenResultItem]:
        """Every ask answered by `model` and scored (none asked: [])."""
        return self._scored(self._texts(model, tok, variant=variant), variant)

    def base(self, model: Any, tok: Any, *, dtypes: Sequence[str]) -> list[OpenResultItem]:
        """The base answers: the shared cache's under the first of `dtypes` that has one, else answered by `model`
        (loaded in `dtypes[-1]`) and cached under it."""
        for dtype in dtypes:
            cache = self.cache_path(dtype)
            if cache is not None and cache.is_file():
                texts = _read_cache(cache, len(self.asks))
                if texts is not None:
                    self.from_cache = True
                    log.info("open pass: %d base answers read from the shared cache %s", len(texts), cache.name)
                    return self._scored(texts, Variant.base)
        texts = self._texts(model, tok, variant=Variant.base)
        cache = self.cache_path(dtypes[-1])
        if cache is not None and self.asks:
            cache.parent.mkdir(parents=True, exist_ok=True)
            _write_cache(cache, texts)
        return self._scored(texts, Variant.base)

    def cache_path(self, dtype: str) -> Path | None:
        """The shared cache file of the base answers by the base model in `dtype` (None: no cache folder)."""
        spec = self.spec
        if spec.base_cache_dir is None:
            return None
        key = hashlib.sha256(json.dumps(
            ["open", spec.target.model_dump(mode="json"), ANSWER_PROMPT_VERSION, MAX_NEW_TOKENS, dtype,
             spec.gpu.deterministic, [(a.question.qid, a.lang, a.split, a.text) for a in self.asks]],
            sort_keys=True, default=str, ensure_ascii=False,
        ).encode()).hexdigest()[:BASE_CACHE_KEY_HEX]
        return spec.base_cache_dir / base_cache_name(spec.target.name, key)

    @staticmethod
    def locality_counts(items: Sequence[OpenResultItem]) -> dict[str, dict[str, LocalityCounts]]:
        """The locality split's answers as paired counts, scorer -> test language (`clkt.evaluate.locality`), as
        the summary keeps the MCQ locality's ({}: none asked; an UNSCORABLE answer is no pair)."""
        local = [i for i in items if i.split == "locality" and i.verdict != UNSCORABLE]
        return paired_counts(((i.scorer, i.lang, i.qid, i.variant, i.correct) for i in local),
                             {i.qid: i.entity_id for i in local})

    def write(self, items: Sequence[OpenResultItem]) -> None:
        """`open_predictions.jsonl` in the job's folder (written only where the job asked open questions)."""
        if not items:
            return
        write_text_atomic(self.spec.artifacts_dir / OPEN_PREDICTIONS_FILE, "".join(i.model_dump_json() + "\n" for i in items))

    def _texts(self, model: Any, tok: Any, *, variant: Variant) -> list[str]:
        if not self.asks:
            return []
        if self.sizer is None:
            self.sizer = BatchSizer.for_job(self.spec.gpu, str(getattr(model, "device", "cpu")), name="generate")
        phase = f"open-{variant.value}"
        total, done = len(self.asks), 0

        def tick(n: int) -> None:
            nonlocal done
            done += n
            self.progress(phase, done, total)

        log.info("open pass (%s): answering %d open questions", variant.value, total)
        return generate_answers(model, tok, self.spec.target,
                                [OpenPrompt(question=a.text, lang=a.lang) for a in self.asks],
                                sizer=self.sizer, max_new_tokens=MAX_NEW_TOKENS, progress=tick)

    def _scored(self, texts: Sequence[str], variant: Variant) -> list[OpenResultItem]:
        return [safely_scored_item(a.question.question, qid=a.question.qid, entity_id=a.question.entity_id, lang=a.lang,
                                   answer=t, variant=variant, split=a.split, domain=a.question.domain, scorer=self.scorer)
                for a, t in zip(self.asks, texts, strict=True)]


def _write_cache(path: Path, texts: Sequence[str]) -> None:
    """The base answer texts, one JSON string a line, ASCII-escaped: a text that UTF-8 cannot encode (a lone
    surrogate) is kept as its escape and read back as it was, never a failed job."""
    write_text_atomic(path, "".join(json.dumps(t) + "\n" for t in texts))


def _read_cache(path: Path, n: int) -> list[str] | None:
    """The cached answer texts (None: unreadable or not `n` of them, answered again)."""
    try:
        texts = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, ValueError):
        log.warning("open pass: the base cache %s is unreadable; answering again", path.name)
        return None
    if len(texts) != n or not all(isinstance(t, str) for t in texts):
        log.warning("open pass: the base cache %s holds %d answers for %d questions; answering again", path.name,
                    len(texts), n)
        return None
    return [str(t) for t in texts]

"""One GPU job, run inside the child process (`InjectionJob(spec).run()`): one method per step.

1. `load_snapshot`: the snapshot directory's documents and questions (test, validation, control split, and the
   locality split's questions about the entities this target knew: answered, never trained on).
2. `base_and_model`: the base answers, then the target model on the job's device in the dtype its injector asks
   for (`Injector.weights_dtype`), with `gpu.attn_implementation`. `base_pass` answers the test split in every
   language with the base model in one dtype whatever the strategy's (`base_weights_dtype`: full-ft's fp32 jobs
   and the others' bf16 ones share one base answer set), cached per snapshot x target, since every job of that
   pair asks the same questions; a job whose strategy loads another dtype loads the model again after it.
4. `inject`: the job's strategy (`clkt.inject.strategies.injector_for(spec.strategy)`) injects the train
   language's documents (and their entities' typed facts; never the questions, nor which facts they ask) into
   the model, owning its loop (the strategies that train: epochs, validation on the
   train language's validation split, the best epoch; `clkt.inject.strategies._trained`), in its own folder
   `<artifacts>/checkpoints/`, and gives back the model ready to answer and what it records (`Injection`).
5. `injected_pass`: the test split in every language again.
   The open track (`clkt.inject.open_pass`, where the snapshot has one and `[gpu] open_answers` is on): the
   short-answer questions of every test language (test and control splits) answered greedily and scored by the
   normaliser, by the base model (`open_base`, cached beside the base MCQ answers) and the injected one
   (`open_injected`), into `open_predictions.jsonl` and the outcome's `open_results`.
6. `write_predictions`: `predictions.jsonl`, every answer (the control and locality splits' too).
7. `summarise`: the typed `JobSummary` (`clkt.evaluate.summary`) the `JobOutcome` carries; the locality split's
   answers only as its paired counts (`JobSummary.locality`: what the injection kept), never as results.

Killed anywhere, a rerun resumes where the injector can (a training resumes after its last finished epoch).
Every pass of a scorer runs at that scorer's evaluation batch size (`self.sizers`, `clkt.evaluate.memory`):
found once (automatic) and kept for the rest of the job, and reported in the summary.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clkt.errors import SnapshotError, UserError
from clkt.evaluate.locality import locality_counts
from clkt.evaluate.memory import BatchSizer
from clkt.evaluate.prompts import EVAL_PROMPT_VERSION
from clkt.evaluate.results import CONTROL_SPLIT, LOCALITY_SPLIT, ResultItem, Variant
from clkt.evaluate.runner import accuracy, answer_questions
from clkt.evaluate.scorers import scorers_for, selection_scorer
from clkt.evaluate.summary import JobSummary, LearnSummary, ScorerScore
from clkt.facts import EntityFacts
from clkt.inject.contract import JobOutcome, JobProgress, JobSpec, write_json_atomic, write_text_atomic
from clkt.inject.editing.requests import parse_facts
from clkt.inject.injector import Injection, InjectionContext, WeightsDtype, base_weights_dtype
from clkt.inject.open_pass import OpenPass, open_asks, open_val_questions
from clkt.inject.open_val import OpenValidator
from clkt.inject.strategies import injector_for
from clkt.inject.usage import peak_memory, reset_peak_memory
from clkt.layout import BASE_CACHE_KEY_HEX, CKPT_DIR, PREDICTIONS_FILE, PROGRESS_FILE, base_cache_name
from clkt.openqa.results import OpenResultItem
from clkt.report.learn import learn_stat
from clkt.snapshots.control import control_facts
from clkt.snapshots.layout import DocRow, QuestionRow, load_snapshot_dir
from clkt.targets.loader import load_target, resolve_device

__all__ = ["InjectionJob", "JobQuestions", "ProgressWriter", "check_spec", "learn_summaries", "score_summaries"]

log = logging.getLogger(__name__)


class ProgressWriter:
    """Writes `progress.json` for the parent at most every `every_s` seconds."""

    def __init__(self, path: Path, *, every_s: float = 2.0) -> None:
        self.path = path
        self.every_s = every_s
        self._last = 0.0

    def __call__(self, progress: JobProgress, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self.every_s:
            self._last = now
            write_json_atomic(self.path, progress)


@dataclass(frozen=True, slots=True)
class JobQuestions:
    """What the snapshot gives one job: the documents to inject and the questions to answer."""

    docs: list[DocRow]  # the train language's documents, the control split's fictional ones included
    test_rows: list[QuestionRow]  # the test split in every language, then the control split's questions
    control_rows: list[QuestionRow]
    val_rows: list[QuestionRow]  # the validation split in the train language
    # the locality split in every language: entities this target knew (answered before and after, never trained on)
    locality_rows: list[QuestionRow] = field(default_factory=list)
    # the typed facts of the real entities whose documents are injected (`facts.jsonl`): what an injector may know
    facts: Mapping[int, EntityFacts] = field(default_factory=dict)

    @property
    def control_qids(self) -> set[int]:
        return {r.qid for r in self.control_rows}


class InjectionJob:
    """One `JobSpec` in the job process: base answers, the strategy's injection, injected answers, summary."""

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.injector = injector_for(spec.strategy)
        self.scorers = scorers_for(spec.target, spec.gpu)
        self.selection = selection_scorer(self.scorers)
        self.ckpt_root = spec.artifacts_dir / CKPT_DIR
        self.progress = ProgressWriter(spec.artifacts_dir / PROGRESS_FILE)
        self.device = ""  # set by `load_model`: the resolved device ("cpu", "cuda", ...) and the weights' dtype
        self.dtype = ""
        self.sizers: dict[str, BatchSizer] = {}  # scorer -> its evaluation batch size, for the whole job
        self.base_from_cache = False
        self.open = OpenPass(spec, [], progress=self._open_progress)  # set by `run` once the snapshot is read
        self.open_results: list[OpenResultItem] = []  # base, then injected (`open_base`, `open_injected`)
        self.open_s = 0.0
        self.open_answered = False  # the injected open answers are in (by the open track's epoch, during `inject`)
        self.open_val = 0  # the train language's open validation questions the injector was lent

    def run(self) -> JobOutcome:
        import torch

        spec = self.spec
        if spec.gpu.torch_threads:
            torch.set_num_threads(spec.gpu.torch_threads)
        if spec.gpu.deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts, before any matmul
            torch.use_deterministic_algorithms(True)
        torch.manual_seed(spec.gpu.seed)
        started = time.monotonic()
        reset_peak_memory(resolve_device(spec.device))
        qs = self.load_snapshot()
        self.open = OpenPass(spec, open_asks(spec, list(dict.fromkeys(r.lang for r in qs.test_rows))),
                             progress=self._open_progress)
        rows = qs.test_rows + qs.locality_rows
        base, model, tok = self.base_and_model(rows)
        injecting = time.monotonic()
        injection = self.inject(model, tok, qs)
        inject_s = time.monotonic() - injecting
        injected = self.injected_pass(injection.model, tok, rows)
        if not self.open_answered:
            self.open_injected(injection.model, tok)
        control_qids, locality_of = qs.control_qids, {r.qid: r.entity_id for r in qs.locality_rows}
        results = [r.model_copy(update={"split": LOCALITY_SPLIT}) if r.qid in locality_of else r for r in base + injected]
        self.write_predictions(results)
        control_results = [r.model_copy(update={"split": CONTROL_SPLIT}) for r in results if r.qid in control_qids]
        locality = locality_counts((r for r in results if r.qid in locality_of), locality_of)
        locality.update(self.open.locality_counts(self.open_results))  # the open scorer's, beside (never pooled)
        results = [r for r in results if r.qid not in control_qids and r.qid not in locality_of]
        peak, kind = peak_memory(self.device)
        summary = self.summarise(qs, injection, results, control_results).model_copy(update=dict(
            wall_s=time.monotonic() - started, inject_s=inject_s, peak_memory_bytes=peak, peak_memory_kind=kind,
            open_questions=len(self.open.asks), open_answer_s=self.open_s if self.open.asks else None,
            open_val_questions=self.open_val if injection.open_epoch is not None else 0, open_epoch=injection.open_epoch))
        if qs.locality_rows:
            summary = summary.model_copy(update={"locality_questions": len(qs.locality_rows), "locality": locality})
        return JobOutcome(
            job_id=spec.job_id, best_epoch=injection.best_epoch, epochs=injection.epochs, device=self.device, results=results,
            summary=summary, control_results=control_results, open_results=self.open_results,
        )

    # -- the steps ----------------------------------------------------------------------------------------------

    def load_snapshot(self) -> JobQuestions:
        spec = self.spec
        data = load_snapshot_dir(spec.snapshot_dir)
        if spec.train_lang not in data.languages:
            raise SnapshotError(f"snapshot {spec.snapshot_id} has no language {spec.train_lang!r} (has {data.languages})")
        out = set(spec.exclude_entities)  # the target's exclusions: their documents and questions are left out
        # the control split's fictional documents are injected with the real ones and scored on their own
        docs = [d for d in data.docs_for(spec.train_lang) if d.entity_id not in out] + data.control_docs_for(spec.train_lang)
        if not docs:
            raise SnapshotError(f"snapshot {spec.snapshot_id} has no {spec.train_lang} documents to inject")
        control_rows = [r for lang in data.languages for r in data.control_questions_for(lang)]
        test_rows = [r for lang in data.languages for r in data.questions_for(lang, "test") if r.entity_id not in out]
        # the locality split: the entities this target knew (the snapshot's `locality.known_by`), never trained on
        locality_rows = [r for lang in data.languages for r in data.locality_questions_for(lang, spec.target.name)]
        injected = {d.entity_id for d in docs}
        facts, bad = parse_facts({e: f for e, f in data.facts.items() if e in injected})
        if bad:
            log.warning("the typed facts of %d entities do not parse: their injector sees their documents only", len(bad))
        # the fictional control entities' facts, regenerated from the seed: the facts their documents state
        control = data.control_docs_for(spec.train_lang)
        facts = {**facts, **control_facts(data.manifest, control)}
        if missing := {d.entity_id for d in control} - set(facts):
            log.warning("the facts of %d control entities do not render their documents: their injector sees their "
                        "documents only", len(missing))
        return JobQuestions(docs=docs, test_rows=test_rows + control_rows, control_rows=control_rows,
                            val_rows=[r for r in data.questions_for(spec.train_lang, "val") if r.entity_id not in out],
                            locality_rows=locality_rows, facts=facts)

    def load_model(self, dtype_name: WeightsDtype | None = None) -> tuple[Any, Any]:
        """The target model in `dtype_name` (None: the strategy's, `Injector.weights_dtype`) and its tokenizer."""
        import torch

        spec = self.spec
        self.device = resolve_device(spec.device)
        dtype = getattr(torch, dtype_name or self.injector.weights_dtype(self.device))
        self.dtype = str(dtype)
        self.progress(JobProgress(phase="loading"), force=True)
        return load_target(spec.target, data_dir=spec.data_dir, device=self.device, dtype=dtype,
                           attn_implementation=spec.gpu.attn_implementation)

    def base_and_model(self, rows: list[QuestionRow]) -> tuple[list[ResultItem], Any, Any]:
        """The base answers to `rows` (the shared cache's, else answered with the model loaded in
        `base_weights_dtype`), then the model in the strategy's dtype (loaded again when it is another)."""
        self.device = resolve_device(self.spec.device)
        base_dtype, wanted = base_weights_dtype(self.device), self.injector.weights_dtype(self.device)
        cached = self._cached_base(rows, f"torch.{base_dtype}")
        if cached is not None:
            model, tok = self.load_model(wanted)
            self.open_base(model, tok, dtypes=[f"torch.{base_dtype}", self.dtype])
            return cached, model, tok
        model, tok = self.load_model(base_dtype)
        base = self.base_pass(model, tok, rows)
        self.open_base(model, tok, dtypes=[self.dtype])
        if wanted != base_dtype:
            del model
            _release_memory(self.device)
            model, tok = self.load_model(wanted)
        return base, model, tok

    def _base_cache(self, rows: list[QuestionRow], dtype: str) -> Path | None:
        """The shared cache file of the base answers to `rows` by the base model in `dtype` (None: no cache)."""
        spec = self.spec
        key = hashlib.sha256(
            json.dumps(
                [spec.target.model_dump(mode="json"), self.scorers, spec.gpu.parse, spec.gpu.max_new_tokens,
                 spec.gpu.max_seq_len, spec.gpu.eval_batch_size, EVAL_PROMPT_VERSION, dtype,
                 sorted((r.qid, r.lang) for r in rows)] + (["deterministic"] if spec.gpu.deterministic else []),
                sort_keys=True, default=str,
            ).encode()
        ).hexdigest()[:BASE_CACHE_KEY_HEX]
        return spec.base_cache_dir / base_cache_name(spec.target.name, key) if spec.base_cache_dir else None

    def _cached_base(self, rows: list[QuestionRow], dtype: str) -> list[ResultItem] | None:
        cache = self._base_cache(rows, dtype)
        if cache is None or not cache.is_file():
            return None
        self.base_from_cache = True
        log.info("base pass: %d answers read from the shared cache %s", len(rows), cache.name)
        return [ResultItem.model_validate_json(line) for line in cache.read_text(encoding="utf-8").splitlines() if line]

    def base_pass(self, model: Any, tok: Any, rows: list[QuestionRow]) -> list[ResultItem]:
        """Base-model answers by `model` (loaded in `self.dtype`), shared through `spec.base_cache_dir` by every
        job of the same snapshot x target."""
        cached = self._cached_base(rows, self.dtype)
        if cached is not None:
            return cached
        cache = self._base_cache(rows, self.dtype)
        log.info("base pass: answering %d questions with the base model", len(rows))
        items = self._answer(model, tok, rows, scorers=self.scorers, variant=Variant.base, phase="base")
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(cache, "".join(i.model_dump_json() + "\n" for i in items))
        return items

    def open_base(self, model: Any, tok: Any, *, dtypes: list[str]) -> None:
        """The open track's base answers (`clkt.inject.open_pass`: none without the track), the shared cache's
        under the first of `dtypes` that has them, else by `model`."""
        started = time.monotonic()
        self.open_results = self.open.base(model, tok, dtypes=dtypes)
        self.open_s += time.monotonic() - started

    def open_injected(self, model: Any, tok: Any) -> None:
        """The open track's answers by the injected model, after the base ones; both go to `open_predictions.jsonl`."""
        started = time.monotonic()
        self.open_results = [*self.open_results, *self.open.answer(model, tok, variant=Variant.injected)]
        self.open_s += time.monotonic() - started
        self.open.write(self.open_results)

    def inject(self, model: Any, tok: Any, qs: JobQuestions) -> Injection:
        """The strategy's injector: the train language's documents into the model; the model it gives back answers."""
        def answer(
            model: Any, rows: list[QuestionRow], *, scorers: Sequence[str], phase: str, epoch: int | None = None,
        ) -> list[ResultItem]:
            return self._answer(model, tok, rows, scorers=scorers, variant=Variant.injected, phase=phase, epoch=epoch)

        def open_answer(model: Any) -> None:
            self.open_injected(model, tok)
            self.open_answered = True

        val_open = open_val_questions(self.spec) if self.open.asks else []
        self.open_val = len(val_open)
        validator = OpenValidator(self.spec.target, tok, val_open, self.spec.train_lang, sizer=BatchSizer.for_job(
            self.spec.gpu, self.device, name="generate")) if val_open else None
        ctx = InjectionContext(spec=self.spec.for_injector(), device=self.device, work_dir=self.ckpt_root,
                               selection_scorer=self.selection, answer=answer, progress=self.progress, facts=qs.facts,
                               open_validate=validator, open_answer=open_answer if validator else None)
        self.ckpt_root.mkdir(parents=True, exist_ok=True)
        return self.injector.inject(model, tok, docs=qs.docs, val_rows=qs.val_rows, ctx=ctx)

    def injected_pass(self, model: Any, tok: Any, rows: list[QuestionRow]) -> list[ResultItem]:
        return self._answer(model, tok, rows, scorers=self.scorers, variant=Variant.injected, phase="test")

    def write_predictions(self, results: list[ResultItem]) -> None:
        write_text_atomic(self.spec.artifacts_dir / PREDICTIONS_FILE, "".join(r.model_dump_json() + "\n" for r in results))

    def summarise(
        self, qs: JobQuestions, injection: Injection, results: list[ResultItem], control_results: list[ResultItem],
    ) -> JobSummary:
        """What the job measured (`results`: the real test questions' answers, base and injected)."""
        return JobSummary(
            selection_scorer=self.selection,
            scorers=sorted({r.scorer for r in results}),
            generate_parse=self.spec.gpu.parse if "generate" in self.scorers else None,
            val_questions=len(qs.val_rows),
            test_questions=len(qs.test_rows) - len(qs.control_rows),
            control_questions=len(qs.control_rows),
            train_examples=injection.examples,
            train_tokens_per_s=injection.tokens_per_s, train_sources=dict(injection.sources),
            resumed_after_epoch=injection.resumed_after,
            scores=score_summaries(results),
            learn=learn_summaries(results, self.spec.train_lang),
            learn_control=learn_summaries(control_results, self.spec.train_lang),
            eval_batch_sizes={name: z.settled for name, z in sorted(self.sizers.items())},
        )

    # -- helpers ------------------------------------------------------------------------------------------------

    def _open_progress(self, phase: str, done: int, total: int) -> None:
        self.progress(JobProgress(phase=phase, done=done, total=total))

    def _answer(
        self, model: Any, tok: Any, rows: list[QuestionRow], *, scorers: Sequence[str], variant: Variant, phase: str,
        epoch: int | None = None,
    ) -> list[ResultItem]:
        return answer_questions(
            model, tok, self.spec.target, rows, scorers=scorers, gpu=self.spec.gpu, variant=variant, phase=phase,
            progress=lambda ph, d, t: self.progress(JobProgress(phase=ph, done=d, total=t, epoch=epoch)),
            sizers=self.sizers,
        )


def _release_memory(device: str) -> None:
    """Give back what a model just dropped held (its accelerator memory), before another is loaded."""
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def score_summaries(results: list[ResultItem]) -> list[ScorerScore]:
    """Accuracy per variant x result scorer (base first, scorers sorted); for `generate`, the share of answers
    without a letter."""
    out: list[ScorerScore] = []
    for variant in (Variant.base, Variant.injected):
        for scorer in sorted({r.scorer for r in results}):
            subset = [r for r in results if r.variant is variant and r.scorer == scorer]
            failures = sum(r.predicted is None for r in subset) / len(subset) if scorer == "generate" and subset else None
            out.append(ScorerScore(variant=variant, scorer=scorer, accuracy=accuracy(subset), parse_failure_rate=failures))
    return out


def learn_summaries(results: list[ResultItem], train_lang: str) -> dict[str, LearnSummary]:
    """Learn per result scorer (`clkt.report.learn`): the train-language questions answered by both the base and
    the injected model (the test split, or the control split's)."""
    out: dict[str, LearnSummary] = {}
    for scorer in sorted({r.scorer for r in results}):
        sel = [r for r in results if r.scorer == scorer and r.lang == train_lang and r.split in ("test", CONTROL_SPLIT)]
        base = {r.qid: r.correct for r in sel if r.variant is Variant.base}
        inj = {r.qid: r.correct for r in sel if r.variant is Variant.injected}
        common = sorted(set(base) & set(inj))
        if common:
            out[scorer] = learn_stat((base[q], inj[q]) for q in common).to_summary()
    return out


def check_spec(spec: JobSpec) -> None:
    """Cheap checks before any model is loaded: the strategy's (`Injector.check`), then the snapshot's folder."""
    injector_for(spec.strategy).check(spec.for_injector())
    if not Path(spec.snapshot_dir).is_dir():
        raise UserError(f"snapshot directory {spec.snapshot_dir} does not exist")

"""The injection step behind one protocol: an `Injector` takes the base model and the train language's documents
and gives back the injected model, owning its whole loop.

The job (`clkt.inject.job.InjectionJob`) loads the snapshot and the model, answers the test questions with the
base model (in `base_weights_dtype`, whatever the strategy's), then hands the model (in the strategy's dtype) to
the job's injector (`Injector.inject`) with an `InjectionContext`: what a strategy may know of the job
(`InjectorSpec`: no snapshot folder, so no question and no list of the facts the questions ask), the typed facts
of the entities whose documents it injects, its device, the injector's own folder (`work_dir`, kept across a rerun of a killed job), the progress
writer and `answer`, the job's scoring callback (the validation questions, or any other, answered at the job's
evaluation batch sizes). The injector returns an `Injection`: the model ready to answer (eval mode) and what it
records (the epochs, the checkpoint it chose, its throughput). The job then answers the test questions again.

The recipes that train (`cpt-lora`, `sft-lora`, `full-ft`) share one injector,
`clkt.inject.strategies._trained.TrainedInjector`: epochs, a checkpoint and a validation score per epoch, the
best epoch, pruning and resuming. An injector without epochs (knowledge editing: edits computed from fact
requests) implements `inject` its own way and returns no epochs.

What an injector leaves in `work_dir` is its own: `returned_files` names what a run on a cluster node brings
back to the daemon (`clkt.inject.bundles`), `spare` what a committed job's results no longer need (for the data
directory's retention, `clkt gc`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from clkt.evaluate.results import EpochRecord, ResultItem
    from clkt.facts import EntityFacts
    from clkt.inject.contract import InjectorSpec, JobProgress
    from clkt.inject.open_val import OpenValScore
    from clkt.snapshots.layout import DocRow, QuestionRow

__all__ = ["Answerer", "Injection", "InjectionContext", "Injector", "Spare", "WeightsDtype", "base_weights_dtype"]

WeightsDtype = Literal["float32", "bfloat16"]


def base_weights_dtype(device: str) -> WeightsDtype:
    """The one dtype the base model answers in on `device`, whatever the job's strategy loads its weights in
    (`Injector.weights_dtype`): bfloat16 on CUDA (what every strategy but full-ft loads), float32 elsewhere.
    So a (snapshot, target, scorer) has one base answer set, which every job of it reads (`InjectionJob.base_pass`)."""
    return "bfloat16" if device.startswith("cuda") else "float32"


class Answerer(Protocol):
    """The job's scoring callback: `rows` answered by `model` with `scorers` (injected-variant result items)."""

    def __call__(
        self, model: Any, rows: list[QuestionRow], *, scorers: Sequence[str], phase: str, epoch: int | None = None,
    ) -> list[ResultItem]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectionContext:
    """What the job lends its injector."""

    spec: InjectorSpec  # never the snapshot's folder: an injector cannot read the questions
    device: str  # resolved: "cpu", "cuda", "cuda:1", ...
    work_dir: Path  # the injector's own folder under the job's artifacts (checkpoints), kept across a rerun
    selection_scorer: str  # the scorer that chooses between candidates (`clkt.evaluate.scorers.selection_scorer`)
    answer: Answerer
    progress: Callable[[JobProgress], None]  # throttled writer of `progress.json`
    # public entity id -> the typed facts of the entities whose documents are injected: the real ones' `facts.jsonl`
    # (none in a snapshot frozen before the file), the fictional control entities' regenerated from the seed where
    # they render the frozen documents (`clkt.snapshots.control.control_facts`); every fact, not the ones asked
    facts: Mapping[int, EntityFacts] = field(default_factory=dict)
    # the open track (`clkt.inject.open_val`), None where the job asks no open question or has no open validation
    # question in the train language: the validation questions answered by a model, and the job's open pass
    # answered by the weights the open track keeps where they are not the best epoch's (an injector never sees a
    # test question: the callback answers and keeps them)
    open_validate: Callable[[Any], OpenValScore] | None = None
    open_answer: Callable[[Any], None] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Injection:
    """What an injector gives back: the injected model, ready to answer, and what it records."""

    model: Any
    examples: int  # what it injected from: training examples, edit requests
    best_epoch: int  # the checkpoint the model answers with (an injector without epochs: 0)
    open_epoch: int | None = None  # the open track's, chosen on its validation questions (None: not chosen apart)
    epochs: list[EpochRecord] = field(default_factory=list)  # per epoch: loss, tokens, time, validation score
    resumed_after: int = 0  # the epoch a rerun resumed after (0: from the start)
    tokens_per_s: float | None = None  # training throughput, when it trained
    sources: dict[str, int] = field(default_factory=dict)  # what `examples` came from, counted ("facts", "documents")


@dataclass(frozen=True, slots=True)
class Spare:
    """A file or folder of an injector's `work_dir` that a committed job's results no longer need, and why."""

    path: Path
    reason: str


class Injector(Protocol):
    """One injection strategy: registered once under its declared name (`clkt.inject.strategies`)."""

    @property
    def name(self) -> str: ...

    def check(self, spec: InjectorSpec) -> None:
        """Cheap checks before any model is loaded (`UserError`/`JobError` with one clear line)."""
        ...

    def weights_dtype(self, device: str) -> WeightsDtype:
        """The dtype the job loads the base model's weights in on `device`."""
        ...

    def inject(
        self, model: Any, tokenizer: Any, *, docs: list[DocRow], val_rows: list[QuestionRow], ctx: InjectionContext,
    ) -> Injection:
        """Inject `docs` (the train language's documents) into `model`; `val_rows`: the train language's
        validation questions, for choosing between candidates (never the test questions)."""
        ...

    def returned_files(self, work_dir: Path, *, best_epoch: int | None) -> list[Path]:
        """The files under `work_dir` that a run on a cluster node brings back (its records, and the weights the
        results were measured with when they are small enough to travel); `best_epoch` None: the run did not
        finish."""
        ...

    def spare(self, work_dir: Path, *, best_epoch: int | None) -> list[Spare]:
        """What in `work_dir` a committed job no longer needs: its results were measured without it (the
        strategies that train: the other epochs' checkpoints and the optimizer state); `best_epoch` None: nothing
        is known to be spare."""
        ...

"""The pipeline, declared once: which stage follows which, who works it, with which agent, and what the
entity becomes when it passes.

Read top to bottom, `FLOW` is the life of an entity after the pollers store it (`discovered`, with a gate
task): each stage's worker claims the stage's tasks; an entity that passes a stage is *advanced*
(`StageWorker.advance`): the next stage's task is enqueued, with `daemon.max_attempts` tries, and the entity
gets the step's status. What drops an entity on the way (`ineligible`, `known`, `rejected`, `failed`) is
each worker's own decision, written in its module. The status pages and `clkt status` list the stage
queues in this order (`STAGE_ORDER`).
"""

from __future__ import annotations

from clkt.pipeline.gate import GateWorker
from clkt.pipeline.generate import GenerateWorker
from clkt.pipeline.probe import ProbeWorker
from clkt.pipeline.stage_worker import Step
from clkt.pipeline.translate import TranslateWorker
from clkt.pipeline.verify import VerifyWorker
from storage.enums import EntityStatus, Stage

__all__ = ["FLOW", "STAGE_ORDER", "step_of"]

FLOW: tuple[Step, ...] = (
    # fresh for every target model (its knowledge cutoff + spec.temporal_buffer_days)?
    Step(stage=Stage.gate, worker=GateWorker, role=None, next=Stage.probe, status=EntityStatus.probing),
    # does any target already know it? every target, every language, the judge compares with the document
    Step(stage=Stage.probe, worker=ProbeWorker, role="judge", next=Stage.generate, status=EntityStatus.generating),
    # grounded multiple-choice questions from the English document (the entity stays `generating`)
    Step(stage=Stage.generate, worker=GenerateWorker, role="generate", next=Stage.verify, status=None),
    # deterministic checks, then the verifier on the four criteria (the entity stays `generating`)
    Step(stage=Stage.verify, worker=VerifyWorker, role="verify", next=Stage.translate, status=None),
    # the questions and the document into every language: the entity is ready for a snapshot
    Step(stage=Stage.translate, worker=TranslateWorker, role="translate", next=None, status=EntityStatus.ready),
)

STAGE_ORDER: tuple[str, ...] = tuple(step.stage.value for step in FLOW)


def step_of(stage: Stage) -> Step:
    """The step of `stage` in `FLOW`."""
    for step in FLOW:
        if step.stage is stage:
            return step
    raise KeyError(f"stage {stage.value!r} is not in the flow")

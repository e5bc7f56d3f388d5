"""The offline demo's in-context track (`clkt demo`): after its GPU jobs and report, the embedded target (every
local target of the spec) takes the track through the runner of `clkt incontext`, and the report is written again
with its in-context section beside the parametric results.

Documents in English only (`DEMO_CONTEXT_LANG`, else the first train language): on the demo snapshot
option-loglik-norm took about 1 CPU-second per answer (2 threads, Gemma 3 270M), so both of the demo's train
languages (en, zh: 630 answers) cost about 5 of the demo's 20 minutes on 2 cores, over the 3 it may take; en only
is 420 answers, half of them without a document, and those 210 are the GPU job's base answers (the track's floor
of a base target, `InContextTrack._floor_from_jobs`): 210 asked. The report says so (a note), and
`clkt incontext SNAPSHOT` runs the other train languages (it resumes: what the demo answered is not asked again).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clkt.incontext.runner import TrackRun, run_incontext
from clkt.targets.api import is_api_target

if TYPE_CHECKING:
    from clkt.config import AgentSettings, GpuSettings, SecretLookup, SpecSettings
    from storage.engine import Store

__all__ = ["DEMO_CONTEXT_LANG", "DemoTrack", "demo_context_langs", "run_demo_track"]

DEMO_CONTEXT_LANG = "en"


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoTrack:
    runs: list[TrackRun]
    contexts: list[str]
    wall_s: float  # the track and the report written again


def demo_context_langs(train_langs: list[str]) -> list[str]:
    """The document languages of the demo's track: en when it is a train language, else the first one."""
    return [DEMO_CONTEXT_LANG] if DEMO_CONTEXT_LANG in train_langs else train_langs[:1]


def _note(contexts: list[str], train_langs: list[str]) -> str | None:
    rest = [x for x in train_langs if x not in contexts]
    if not rest:
        return None
    return (f"in-context track: the offline demo runs it with {', '.join(contexts)} documents only, not "
            f"{', '.join(rest)} (train languages {', '.join(train_langs)}), to keep the demo within its time budget; "
            "`clkt incontext <snapshot>` runs the rest")


async def run_demo_track(
    store: Store, *, spec: SpecSettings, agents: AgentSettings, gpu: GpuSettings, data_dir: Path,
    secret: SecretLookup, snapshot_id: str, report: Path,
) -> DemoTrack:
    """The track of the spec's local targets on the demo's snapshot, then its report written again into `report`
    (the settings' sections passed in, as `run_incontext` takes them)."""
    from clkt.report.writer import load_report_data, write_report_files

    started = time.monotonic()
    contexts = demo_context_langs(list(spec.train_langs))
    local = [t.name for t in spec.targets if not is_api_target(t)]
    runs = await run_incontext(
        store=store, snapshot_id=snapshot_id, spec=spec, agents=agents, gpu=gpu,
        data_dir=data_dir, secret=secret, targets=local, context_langs=contexts,
        short_answers=False,  # the demo's time: its open figures are its job's open pass (`clkt incontext` asks them)
    ) if local else []
    data = await load_report_data(store, snapshot_id, spec=spec)
    note = _note(contexts, list(spec.train_langs))
    if note and data.incontext:
        data.notes.append(note)
    import asyncio

    await asyncio.to_thread(write_report_files, data, report)
    return DemoTrack(runs=runs, contexts=contexts, wall_s=time.monotonic() - started)

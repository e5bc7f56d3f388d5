"""`clkt evaluate --probe`: the lab's model answers the recognition probe, as the daemon asks a local target.

Every real entity of the snapshot (the entities its questions are about; the control split's are not) is asked in
every language of the snapshot with the daemon's own prompt and decoding (`clkt.targets.summary`: the paper's
"Provide a brief factual summary of '<name>'." translated, the chat template for instruct models and a "Summary:"
cue for base models, greedy, at most `[agents] probe_max_new_tokens` new tokens). The daemon stops at an entity's
first "known"; here every language is asked, since the verdicts are the taker's (`clkt.packs.probe`): the pack
carries the answers only (`probe.jsonl`, `clkt.packs.format.ProbeRow`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from clkt.config import TargetSettings
from clkt.packs.format import PROBE_SUMMARY_MAX_CHARS, ProbeRow
from clkt.snapshots.layout import SnapshotData
from clkt.targets.summary import build_probe_prompt, probe_texts

__all__ = ["ask_probe", "probe_names"]


def probe_names(snap: SnapshotData) -> dict[int, str]:
    """Public entity id -> name of the snapshot's real entities (those its questions are about)."""
    lang = snap.languages[0]
    asked = {q.entity_id for q in snap.questions_for(lang)}
    return {d.entity_id: d.name for d in snap.docs_for(lang) if d.entity_id in asked}


async def ask_probe(
    snap: SnapshotData, target: TargetSettings, *, data_dir: Path, device: str, max_new_tokens: int,
    progress: Callable[[str], None],
) -> list[ProbeRow]:
    """The model's answers to the probe about every real entity of `snap` in each of its languages."""
    names = probe_names(snap)
    asked = [(eid, lang) for eid in sorted(names) for lang in snap.languages]
    progress(f"probe: {len(names)} entities x {len(snap.languages)} languages ({len(asked)} prompts)")
    prompts = [build_probe_prompt(target, names[eid], lang) for eid, lang in asked]
    answers = await asyncio.to_thread(probe_texts, target, prompts, data_dir=data_dir, device=device,
                                      max_new_tokens=max_new_tokens)
    return [ProbeRow(entity_id=eid, lang=lang, summary=text[:PROBE_SUMMARY_MAX_CHARS])
            for (eid, lang), text in zip(asked, answers, strict=True)]

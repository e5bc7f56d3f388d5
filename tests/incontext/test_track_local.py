"""The in-context track of a local target in process: the generate asker with the document in the prompt (what an
instruct target gets; the runner gives a base target option-loglik-norm: test_local_scorer.py), on a tiny random
model built in memory (fast)."""

from __future__ import annotations

from pathlib import Path

from clkt.config import TargetSettings
from clkt.evaluate.scorers import score_generate
from clkt.incontext import InContextTrack, LocalAsker
from clkt.targets.prompting import render_prompt
from storage.engine import Store
from storage.incontext import incontext_answers
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.incontext._helpers import tiny


async def test_a_local_target_answers_in_process_with_the_generate_scorer(store: Store, tmp_path: Path) -> None:
    snap = tiny(tmp_path)
    target = TargetSettings(name="tiny", model="embedded:tiny", kind="base")
    model, tok = tiny_model(), tiny_tokenizer()
    asker = LocalAsker(model=model, tokenizer=tok, target=target, max_new_tokens=4)
    assert asker.cue and asker.context_tokens == 256  # a base model: the answer cue; the model's positions
    track = InContextTrack(store=store, snapshot=snap, target="tiny", asker=asker, context_langs=["en", "fr"],
                           max_new_tokens=4)
    counts = await track.run()
    assert counts.asked == 12 and counts.skipped == 0
    async with store.session() as s:
        rows = await incontext_answers(s, snap.manifest.snapshot_id, target="tiny")
    assert len(rows) == 12
    # the same letters as the GPU side's generate scorer on the same prompts
    items = track._items(set())
    direct = score_generate(model, tok, [render_prompt(target, tok, i.prompt or "") for i in items],
                            max_new_tokens=4)
    by_key = {(r.qid, r.context_lang, r.lang): r.letter for r in rows}
    assert [by_key[(i.row.qid, i.context_lang, i.row.lang)] for i in items] == [d.predicted for d in direct]
    assert counts.unparsed == sum(d.predicted is None for d in direct)
    assert (await track.run()).asked == 0  # resumable: nothing asked twice

"""`sft-facts-lora`: fact-based supervised fine-tuning (Mecklenburg et al. 2024, the paper's reference for SFT),
with LoRA (`clkt.inject.strategies._lora`).

Continual pretraining on the documents alone teaches a small base model the documents' text but not to answer a
question about them: after it, the embedded 270M target recites documents or guesses a number where a short
answer was asked (`bench/results/open_epochs.json`, docs/guides/open-answers.md). The documents' facts are
stored, not extractable (Allen-Zhu & Li, *Physics of Language Models 3.1*). This strategy trains on two things:

1. the train-language documents themselves, with next-token loss (as `cpt-lora`);
2. one question/answer pair per fact a document states, in the train language, with the loss on the answer only.
   The pairs are the edit requests `memit` writes (`clkt.inject.editing.requests.build_requests`): the typed
   facts' document sentence cut before the fact's value, or, for an entity without typed facts (a snapshot frozen
   before `facts.jsonl`, a control entity whose regenerated facts do not render its document), each document sentence cut before its last words.
   Each is asked as the target is asked a short question (`clkt.openqa.prompts.render_open`: the chat template for
   an instruct model; for a base model the few-shot frame's last turn, "Question: ...\nAnswer:", without its
   instruction and worked examples, a quarter of the tokens), as a fill-in question:
   "Question: Complete: The film Velmora Tide (2025). It was directed by …\nAnswer:" -> " Osric Palandri".

What it sees is what a user's training would: the train split's documents and the facts they state, every one of
them. It never sees a test question, nor which facts the questions ask; its questions are its own (the document's
sentence), not the benchmark's question templates. A language without an open-answer frame trains on its
documents only (its pairs are counted as skipped in the log).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from clkt.inject.editing.requests import build_requests
from clkt.inject.strategies._lora import LoraRecipe
from clkt.inject.strategies._recipe import TrainExample, prompt_and_answer, tokenize_documents
from clkt.inject.strategies._registry import register_injector
from clkt.inject.strategies._trained import TrainedInjector
from clkt.openqa.prompts import INSTRUCTIONS, render_open

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clkt.config import GpuSettings, TargetSettings
    from clkt.facts import EntityFacts
    from clkt.inject.editing.requests import EditRequest
    from clkt.snapshots.layout import DocRow

__all__ = ["COMPLETE", "INJECTOR", "SftFactsLora", "fact_question"]

log = logging.getLogger(__name__)

# the fill-in question around a document sentence cut before its fact's value, per language of the open frame
COMPLETE: dict[str, str] = {
    "en": "Complete: {prompt} …", "ja": "続きを答えてください：{prompt}…", "zh": "请补全：{prompt}……",
    "fr": "Complétez : {prompt} …", "es": "Complete: {prompt} …",
}


def fact_question(request: EditRequest, lang: str) -> str:
    """The question one fact is asked as: its document sentence, cut before the value, to complete."""
    return COMPLETE[lang].format(prompt=request.prompt.strip())


class SftFactsLora(LoraRecipe):
    name = "sft-facts-lora"

    def examples(
        self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings,
        facts: Mapping[int, EntityFacts] | None = None,
    ) -> list[TrainExample]:
        out = tokenize_documents(docs, tokenizer, max_len=gpu.max_seq_len, packing=gpu.packing)
        reqs = build_requests(docs, facts)
        langs = {d.entity_id: d.lang for d in docs}
        skipped = 0
        for r in reqs.requests:
            lang = langs[r.entity_id]
            if lang not in INSTRUCTIONS:
                skipped += 1
                continue
            prompt = render_open(target, tokenizer, fact_question(r, lang), lang, frame=False)
            # the target keeps its leading space where the language has one
            pair = prompt_and_answer(tokenizer, prompt.text, r.target, add_special_tokens=prompt.add_special_tokens)
            if len(pair.input_ids) <= gpu.max_seq_len:  # a pair cut short would lose its answer: left out, never cut
                out.append(pair)
            else:
                skipped += 1
        log.info("sft-facts-lora: %d documents, %d fact questions (%d entities from their facts, %d from their "
                 "documents), %d skipped", len(docs), len(reqs.requests) - skipped, reqs.from_facts,
                 reqs.from_documents, skipped)
        return out


INJECTOR = register_injector(TrainedInjector(SftFactsLora()))

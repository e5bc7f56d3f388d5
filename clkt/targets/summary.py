"""The knowledge probe: ask a target model for a factual summary of an entity, at temperature 0.

"Provide a brief factual summary of '<name>'." in the evaluation language (the paper's wording, translated).
Instruct models get it through their chat template (applied in `probe_texts`); base models get a plain
completion prompt ending with a "Summary:" cue. Generation is greedy and batched with left padding; the
loaded model is cached per process.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from clkt.errors import UserError
from clkt.targets.loader import cached_target
from clkt.targets.prompting import encode_left_padded, render_prompt

if TYPE_CHECKING:
    from clkt.config import TargetSettings

__all__ = ["PROBE_INSTRUCTIONS", "PROBE_PROMPT_VERSION", "SUMMARY_CUES", "build_probe_prompt", "probe_texts"]

PROBE_PROMPT_VERSION = "probe-v1"
PROBE_BATCH_SIZE = 48  # prompts per `generate` call (the probe stage batches several entities' languages)

PROBE_INSTRUCTIONS: dict[str, str] = {
    "en": "Provide a brief factual summary of '{name}'.",
    "ja": "「{name}」について、事実に基づく簡潔な要約を述べてください。",
    "zh": "请简要概述“{name}”的事实信息。",
    "fr": "Fournissez un bref résumé factuel de « {name} ».",
    "es": "Proporcione un breve resumen factual de «{name}».",
    "de": "Gib eine kurze sachliche Zusammenfassung von „{name}“.",
    "it": "Fornisci un breve riassunto fattuale di «{name}».",
    "pt": "Forneça um breve resumo factual de «{name}».",
    "ko": "'{name}'에 대한 간단한 사실 요약을 제공하세요.",
    "ru": "Кратко изложите факты о «{name}».",
    "ar": "قدّم ملخصًا موجزًا للحقائق عن «{name}».",
    "hi": "'{name}' का संक्षिप्त तथ्यात्मक सारांश दीजिए।",
}

SUMMARY_CUES: dict[str, str] = {
    "en": "Summary:", "ja": "要約：", "zh": "概述：", "fr": "Résumé :", "es": "Resumen:", "de": "Zusammenfassung:",
    "it": "Riassunto:", "pt": "Resumo:", "ko": "요약:", "ru": "Кратко:", "ar": "الملخص:", "hi": "सारांश:",
}


def build_probe_prompt(target: TargetSettings, entity_name: str, lang: str) -> str:
    """The probe text for one entity in one language (instruct: the user turn; base: a completion prompt)."""
    try:
        instruction = PROBE_INSTRUCTIONS[lang].format(name=entity_name.strip())
    except KeyError:
        raise UserError(f"no probe prompt for language {lang!r}; known: {sorted(PROBE_INSTRUCTIONS)}") from None
    if target.kind == "instruct":
        return instruction
    return f"{instruction}\n{SUMMARY_CUES[lang]}"


def probe_texts(
    target: TargetSettings, prompts: list[str], *, data_dir: Path, device: str = "cpu", max_new_tokens: int = 96
) -> list[str]:
    """Greedy completions of `prompts` (synchronous: call it from a thread, never on the event loop)."""
    if not prompts:
        return []
    import torch

    from clkt import cpu_share

    model, tok = cached_target(target, data_dir=data_dir, device=device)
    cpu_share.apply_here()  # the cores a GPU job on this machine's CPU leaves
    rendered = [render_prompt(target, tok, p) for p in prompts]
    out: list[str] = []
    with torch.inference_mode():
        for i in range(0, len(rendered), PROBE_BATCH_SIZE):
            batch = encode_left_padded(tok, rendered[i : i + PROBE_BATCH_SIZE]).to(model.device)
            gen = model.generate(
                **batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id,
                temperature=None, top_p=None, top_k=None,
            )
            new = gen[:, batch["input_ids"].shape[1] :]
            out.extend(t.strip() for t in tok.batch_decode(new, skip_special_tokens=True))
    return out

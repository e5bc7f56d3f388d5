"""The answer cue that ends a multiple-choice prompt for a base model, per language ("Answer:").

Shared by the evaluation prompts (`clkt.evaluate.prompts`, `clkt.evaluate.loglik`) and the snapshot's
exports (`clkt.snapshots.formats` writes the same cue into the lm-eval tasks), so it lives in the kernel,
below both.
"""

from __future__ import annotations

__all__ = ["ANSWER_CUES", "answer_cue"]

ANSWER_CUES: dict[str, str] = {
    "en": "Answer:", "ja": "答え:", "zh": "答案:", "fr": "Réponse :", "es": "Respuesta:", "de": "Antwort:",
    "it": "Risposta:", "pt": "Resposta:", "ko": "정답:", "ru": "Ответ:", "ar": "الإجابة:", "hi": "उत्तर:",
}


def answer_cue(lang: str) -> str:
    """The cue in `lang`; English for a language without one."""
    return ANSWER_CUES.get(lang, ANSWER_CUES["en"])

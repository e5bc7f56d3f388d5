"""The answer prompts of the open track, per target kind, with the token budget and the stop rule.

Base models (`kind = "base"`, or an instruct model whose tokenizer has no chat template) get a few-shot frame in
the test language: the instruction, `FEW_SHOT` worked examples of stable general knowledge (a name, a date, a
number: the three answer kinds), then the question and the answer label, so the next tokens are the answer:

```
Answer each question with a short answer only.

Question: What is the capital of Italy?
Answer: Rome

Question: On what date did the Berlin Wall fall?
Answer: 9 November 1989

Question: How many planets are in the Solar System?
Answer: 8

Question: <question>
Answer:
```
Instruct models get the instruction and the question, without examples or label, through their chat template
(`clkt.targets.prompting.render_prompt`, as the MCQ prompts): an instruct model answers a request, and the
examples would only teach the base frame. API targets get the same text as their user message (`open_text` with
`chat=True`). Everything is written in the test language (the examples, the labels, the instruction, which also
asks for an answer in that language): answering in another language is what the track counts apart.

Budget and stop rule: at most `MAX_NEW_TOKENS` new tokens, greedy (temperature 0); generation stops at the end
of sequence or at the first line break after the answer began (a base model goes on with the next "Question:";
the scorer reads the first line as well: `clkt.openqa.text.answer_spans`), and `cut` applies the same rule to a
completion afterwards. `ANSWER_PROMPT_VERSION` names this text: it is recorded with the answers, and changes when
any of it does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clkt.targets.prompting import RenderedPrompt, render_prompt, uses_chat_template

if TYPE_CHECKING:
    from clkt.config import TargetSettings

__all__ = ["ANSWER_PROMPT_VERSION", "FEW_SHOT", "INSTRUCTIONS", "LABELS", "MAX_NEW_TOKENS", "cut", "open_text",
           "render_open"]

# v2: the date example is a whole date (v1 asked for a year: every answer to a date question came back a bare
# year, which a gold day refuses)
ANSWER_PROMPT_VERSION = "open-v2"
MAX_NEW_TOKENS = 32  # a name, a number, a date or a short phrase fits; a longer answer is not a short one

INSTRUCTIONS: dict[str, str] = {
    "en": "Answer each question with a short answer only (a name, a number, a date or a few words), in English.",
    "ja": "各質問に、短い答え（名前、数、日付、または短い語句）だけを日本語で答えてください。",
    "zh": "请只用简短的答案（名称、数字、日期或几个词）用中文回答每个问题。",
    "fr": "Répondez à chaque question par une réponse courte uniquement (un nom, un nombre, une date ou quelques "
          "mots), en français.",
    "es": "Responda a cada pregunta solo con una respuesta corta (un nombre, un número, una fecha o unas pocas "
          "palabras), en español.",
}
LABELS: dict[str, tuple[str, str]] = {  # (question label, answer label)
    "en": ("Question:", "Answer:"),
    "ja": ("質問：", "答え："),
    "zh": ("问题：", "答案："),
    "fr": ("Question :", "Réponse :"),
    "es": ("Pregunta:", "Respuesta:"),
}
FEW_SHOT: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("What is the capital of Italy?", "Rome"), ("On what date did the Berlin Wall fall?", "9 November 1989"),
           ("How many planets are in the Solar System?", "8")),
    "ja": (("イタリアの首都はどこですか？", "ローマ"), ("ベルリンの壁が崩壊したのは何年何月何日ですか？", "1989年11月9日"),
           ("太陽系には惑星がいくつありますか？", "8")),
    "zh": (("意大利的首都是哪里？", "罗马"), ("柏林墙是在哪一天倒塌的？", "1989年11月9日"), ("太阳系有几颗行星？", "8")),
    "fr": (("Quelle est la capitale de l'Italie ?", "Rome"), ("À quelle date le mur de Berlin est-il tombé ?", "9 novembre 1989"),
           ("Combien de planètes compte le Système solaire ?", "8")),
    "es": (("¿Cuál es la capital de Italia?", "Roma"), ("¿En qué fecha cayó el Muro de Berlín?", "9 de noviembre de 1989"),
           ("¿Cuántos planetas hay en el sistema solar?", "8")),
}


def _lang(lang: str) -> str:
    if lang not in INSTRUCTIONS:
        raise ValueError(f"no open-answer prompt for language {lang!r}; known: {sorted(INSTRUCTIONS)}")
    return lang


def open_text(question: str, lang: str, *, chat: bool, frame: bool = True) -> str:
    """The prompt text: the instruction and the question (`chat`), or the few-shot frame ending at the label
    (`frame=False`: its last turn only, "Question: ...\nAnswer:", the question as the frame asks it)."""
    lang = _lang(lang)
    if not question.strip():
        raise ValueError("an open question needs its text")
    if chat:
        return f"{INSTRUCTIONS[lang]}\n\n{question.strip()}"
    q_label, a_label = LABELS[lang]
    turn = f"{q_label} {question.strip()}\n{a_label}"
    if not frame:
        return turn
    shots = "\n\n".join(f"{q_label} {q}\n{a_label} {a}" for q, a in FEW_SHOT[lang])
    return f"{INSTRUCTIONS[lang]}\n\n{shots}\n\n{turn}"


def render_open(target: TargetSettings, tokenizer: Any, question: str, lang: str, *, frame: bool = True) -> RenderedPrompt:
    """The prompt as the target reads it: through its chat template (instruct) or as the few-shot frame (base;
    `frame=False`: its last turn only)."""
    chat = uses_chat_template(target, tokenizer)
    return render_prompt(target, tokenizer, open_text(question, lang, chat=chat, frame=frame))


def cut(completion: str) -> str:
    """The stop rule on a completion: up to the first line break after the answer began, stripped."""
    text = completion.lstrip()
    end = text.find("\n")
    return (text if end < 0 else text[:end]).strip()

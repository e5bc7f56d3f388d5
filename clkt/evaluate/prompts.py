"""The multiple-choice prompt, in the language of the question.

```
<instruction>

<question>
A. <option>
B. <option>
C. <option>
D. <option>
<answer cue>
```
Instruct models get it (without the answer cue) through their chat template; base models get the plain text,
ending with the cue so that the next token is the letter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clkt.documents.answer_cues import answer_cue
from clkt.targets.prompting import RenderedPrompt, render_prompt, uses_chat_template

if TYPE_CHECKING:
    from clkt.config import TargetSettings

__all__ = ["EVAL_PROMPT_VERSION", "INSTRUCTIONS", "LETTERS", "mcq_text", "render_mcq"]

LETTERS = ("A", "B", "C", "D")
EVAL_PROMPT_VERSION = "mcq-v1"

INSTRUCTIONS: dict[str, str] = {
    "en": "Answer the following multiple-choice question with the letter of the correct option.",
    "ja": "次の多肢選択問題に、正しい選択肢の記号で答えてください。",
    "zh": "请用正确选项的字母回答下面的选择题。",
    "fr": "Répondez à la question à choix multiples suivante par la lettre de la bonne option.",
    "es": "Responda a la siguiente pregunta de opción múltiple con la letra de la opción correcta.",
    "de": "Beantworte die folgende Multiple-Choice-Frage mit dem Buchstaben der richtigen Option.",
    "it": "Rispondi alla seguente domanda a scelta multipla con la lettera dell'opzione corretta.",
    "pt": "Responda à seguinte pergunta de escolha múltipla com a letra da opção correta.",
    "ko": "다음 객관식 질문에 정답 선택지의 알파벳으로 답하세요.",
    "ru": "Ответьте на следующий вопрос с выбором ответа буквой правильного варианта.",
    "ar": "أجب عن سؤال الاختيار من متعدد التالي بحرف الخيار الصحيح.",
    "hi": "निम्नलिखित बहुविकल्पीय प्रश्न का उत्तर सही विकल्प के अक्षर से दीजिए।",
}


def mcq_text(question: str, options: list[str], lang: str, *, cue: bool = True) -> str:
    if len(options) != 4:
        raise ValueError(f"a question needs exactly 4 options, got {len(options)}")
    body = "\n".join(f"{letter}. {opt}" for letter, opt in zip(LETTERS, options, strict=True))
    text = f"{INSTRUCTIONS.get(lang, INSTRUCTIONS['en'])}\n\n{question.strip()}\n{body}"
    if cue:
        text += f"\n{answer_cue(lang)}"
    return text


def render_mcq(target: TargetSettings, tokenizer: Any, question: str, options: list[str], lang: str) -> RenderedPrompt:
    chat = uses_chat_template(target, tokenizer)
    return render_prompt(target, tokenizer, mcq_text(question, options, lang, cue=not chat))

"""A deterministic stand-in for an LLM that answers every agent role validly (tests, benches, chaos test).

`respond(role, prompt)` reads the data blocks of the user prompt the agents build and returns the tool
arguments of a valid answer: the judge says "not known", the generator asks for the longest number of a
document sentence (evidence = that sentence), the verifier passes, the open track's judge says CORRECT when the
answer holds the gold's first line, the open track's writer asks for the same number (its verifier passes, its
translator keeps the gold), the translators write a fixed sentence in
the target language that keeps every number and capitalised name of the source.
`role_of_schema(properties)` tells the role from the output tool's JSON schema properties.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["block", "respond", "role_of_schema"]

_PHRASES = {
    "en": "This is the translated question about the event",
    "fr": "Voici la question traduite sur cet événement, avec les valeurs",
    "es": "Esta es la pregunta traducida sobre el evento, con los valores",
    "ja": "これはイベントについての翻訳された質問です。値は次のとおりです",
    "zh": "这是关于该事件的翻译问题，数值如下",
    "de": "Dies ist die übersetzte Frage über das Ereignis mit den Werten",
}
_NUM = re.compile(r"\d[\d,.]*\d|\d")
_NAME = re.compile(r"\b[A-Z][\w'.-]*(?: (?:[A-Z][\w'.-]*|\d+(?= [A-Z])))*")


def block(prompt: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, flags=re.S)
    return m.group(1) if m else ""


def role_of_schema(properties: dict[str, Any]) -> str:
    keys = set(properties)
    if "known" in keys:
        return "judge"
    if "open_questions" in keys:
        return "generate_open"
    if "answerable" in keys:
        return "verify_open"
    if "answer" in keys and "lang" in keys:
        return "translate_open"
    if "questions" in keys:
        return "generate"
    if "grounded" in keys:
        return "verify"
    if "options" in keys:
        return "translate_mcq"
    if "text" in keys:
        return "translate_document"
    if "verdict" in keys:
        return "open_judge"
    raise ValueError(f"unknown output schema {sorted(keys)}")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _generate(prompt: str, n: int) -> dict[str, Any]:
    doc = block(prompt, "document")
    entity = block(prompt, "entity") or "the entity"
    out: list[dict[str, Any]] = []
    for i, sent in enumerate(_sentences(doc)):
        nums = sorted(set(_NUM.findall(sent)), key=len, reverse=True)
        if not nums or len(nums[0]) < 2:
            continue
        answer = nums[0]
        masked = sent.replace(answer, "___")
        if answer in masked:
            continue
        base = int(re.sub(r"\D", "", answer)) if re.sub(r"\D", "", answer) else 10
        options = [answer, str(base + 1), str(base + 2), str(base + 3)]
        out.append({
            "question": f"In the record of {entity}, which value fills the blank: \"{masked}\"?",
            "options": options, "answer_index": 0, "evidence": sent, "slot": f"fact_{i}",
        })
        if len(out) >= n:
            break
    return {"questions": out}


def _generate_open(prompt: str, n: int) -> dict[str, Any]:
    """The open writer: per document sentence with a number of 2+ digits, "which number fills the blank"."""
    mcqs = _generate(prompt, n)["questions"]
    return {"open_questions": [
        {"slot": q["slot"], "kind": "number", "question": q["question"], "answer": q["options"][0],
         "aliases": [re.sub(r"\D", "", q["options"][0])], "evidence": q["evidence"]} for q in mcqs
    ]}


def _keep(source: str, *, names: bool = True) -> str:
    nums = " ".join(_NUM.findall(source))
    kept = " ".join(dict.fromkeys(_NAME.findall(source))) if names else ""
    return f"{nums} {kept}".strip()


def respond(role: str, prompt: str) -> dict[str, Any]:
    lang_m = re.search(r"lang = '([a-z]{2})'", prompt)
    lang = lang_m.group(1) if lang_m else "en"
    if role == "judge":
        return {"known": False, "matched_facts": [], "reason": "The response states no fact of the document."}
    if role == "generate":
        n_m = re.search(r"Write (\d+) multiple-choice", prompt)
        return _generate(prompt, int(n_m.group(1)) if n_m else 3)
    if role == "open_judge":  # the open track's judge: CORRECT when the answer holds the gold's first line
        gold = block(prompt, "gold").split("\n", 1)[0].strip().casefold()
        right = bool(gold) and gold in block(prompt, "answer").casefold()
        return {"verdict": "CORRECT" if right else "INCORRECT", "reason": "the gold is in the answer" if right else
                "the answer does not give the gold"}
    if role == "generate_open":
        n_m = re.search(r"Write (\d+) short-answer", prompt)
        return _generate_open(prompt, int(n_m.group(1)) if n_m else 3)
    if role == "verify_open":
        return {"answerable": True, "supported": True, "not_given_away": True, "reasons": {}}
    if role == "translate_open":
        src = json.loads(block(prompt, "source"))
        return {"lang": lang, "question": f"{_PHRASES.get(lang, _PHRASES['en'])}: {_keep(src['question'])}",
                "answer": src["answer"], "aliases": src["aliases"]}
    if role == "verify":
        return {"grounded": True, "specific": True, "verifiable": True, "answer_correct": True,
                "distractors_plausible_wrong": True, "reasons": {}}
    if role == "translate_mcq":
        src = json.loads(block(prompt, "source"))
        text = src["question"] + " " + " ".join(src["options"])
        return {"lang": lang, "question": f"{_PHRASES.get(lang, _PHRASES['en'])}: {_keep(text)}",
                "options": src["options"], "answer_index": src["answer_index"]}
    if role == "translate_document":
        doc = block(prompt, "document")
        phrase = _PHRASES.get(lang, _PHRASES["en"])
        paras = doc.split("\n\n")  # title, the fact sentences, then free text (names kept only up to the facts)
        out = [f"{phrase}: {_keep(sent, names=i < 2)}. {phrase}." for i, para in enumerate(paras) for sent in _sentences(para)]
        return {"lang": lang, "text": " ".join(out)}
    raise ValueError(role)

"""The normaliser against its labelled set (`data/normaliser_cases.jsonl`): a regression test, not human agreement.

281 (answer, gold, aliases, language, verdict) cases across en ja zh fr es, written from the normalisation rules
(`clkt.openqa.text`, `.numbers`, `.dates`, `.langid`) and the peers' documented traps: MultiLoKo's articles that
are also "one" (fr *un*, es *una*), answer frames, zero-width joiners, a blank answer; SimpleQA's numbers to the
gold's last significant figure (120k: 115k and 124k right, 113k and 100k wrong), hedges and refusals. Each
case's `verdict` is the one a SimpleQA grader would give; `other_language` marks the answers in another language
(INCORRECT, counted apart). A case marked `known_miss` is one the normaliser gets wrong on purpose-known grounds
(its note says why): it must still fail, so fixing one updates its label rather than hiding it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clkt.openqa.prompts import INSTRUCTIONS
from clkt.openqa.question import AnswerKind, LangGold
from clkt.openqa.score import ScoredAnswer, score_answer

CASES = [json.loads(line) for line in (Path(__file__).parent / "data" / "normaliser_cases.jsonl")
         .read_text(encoding="utf-8").splitlines() if line.strip()]


def run(case: dict[str, Any]) -> ScoredAnswer:
    others = {lang: LangGold(**g) for lang, g in case.get("other_golds", {}).items()}
    return score_answer(case["answer"], gold=LangGold(answer=case["gold"], aliases=tuple(case["aliases"])),
                        lang=case["lang"], kind=AnswerKind(case["kind"]), question=case.get("question"),
                        other_golds=others, echoes=(INSTRUCTIONS[case["lang"]],))


def agrees(case: dict[str, Any], got: ScoredAnswer) -> bool:
    return got.verdict.value == case["verdict"] and got.other_language == case["other_language"]


def test_the_set_covers_five_languages_and_every_verdict() -> None:
    assert len(CASES) >= 200 and len({c["id"] for c in CASES}) == len(CASES)
    by_lang = Counter(c["lang"] for c in CASES)
    assert set(by_lang) == {"en", "ja", "zh", "fr", "es"} and min(by_lang.values()) >= 30
    assert {c["verdict"] for c in CASES} == {"CORRECT", "INCORRECT", "NOT_ATTEMPTED"}
    assert sum(c["other_language"] for c in CASES) >= 15 and {c["kind"] for c in CASES} >= {"name", "number", "date"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['id']}-{c['lang']}-{c['trap']}")
def test_case(case: dict[str, Any]) -> None:
    got = run(case)
    if case.get("known_miss"):
        assert not agrees(case, got), f"fixed: update the label of case {case['id']} ({case['known_miss']})"
    else:
        assert agrees(case, got), (case, got)


def test_accuracy_per_language(capsys: pytest.CaptureFixture[str]) -> None:
    hits: Counter[str] = Counter()
    for case in CASES:
        hits[case["lang"]] += agrees(case, run(case))
    n = Counter(c["lang"] for c in CASES)
    with capsys.disabled():
        print(f"\nnormaliser on its labelled set: {sum(hits.values())}/{len(CASES)} "
              + " ".join(f"{lang} {hits[lang]}/{n[lang]}" for lang in sorted(n)))
    assert sum(hits.values()) / len(CASES) >= 0.98

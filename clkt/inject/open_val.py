"""The open track's checkpoint (issue 47): the epoch whose weights answer the open questions, chosen on the open
validation split, never on a test question.

A snapshot's open questions that ask a fact one of its validation MCQs asks are in the `val` split
(`clkt.snapshots.open.split_open`). When the job's open pass is on and the train language has such questions, a
training injector answers them after every epoch (`OpenValidator`, the job's callback in
`InjectionContext.open_validate`) and writes the score beside the epoch's MCQ validation score (`val.json`'s
`open`):

- `accuracy`: the share the normaliser finds right, from greedy answers asked as the open pass asks them
  (`clkt.openqa.generate.generate_answers`, the prompt of the target's kind, the stop rule);
- `loglik`: the mean over questions of the gold answer's mean token log-probability after that prompt (teacher
  forced): a graded signal where a handful of questions tie on accuracy, as the MCQ's option margin is.

`best_open_epoch` keeps the best accuracy, then the larger log-likelihood, then the earliest. The MCQ track keeps
its own epoch (`clkt.inject.best_epoch`): turning the open pass on never changes an MCQ figure. Where the two
differ, the injector hands the open epoch's weights to the job's open pass (`InjectionContext.open_answer`) before
it loads the MCQ epoch's; both checkpoints are kept. Without open validation questions (a snapshot frozen before
the split, the flag off) the open track answers with the MCQ track's epoch, as before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clkt.layout import VAL_FILE, epoch_dir
from clkt.openqa.frozen import FrozenOpenQuestion
from clkt.openqa.prompts import MAX_NEW_TOKENS
from clkt.targets.prompting import uses_chat_template

__all__ = ["OpenValScore", "OpenValidator", "best_open_epoch", "open_val_scores"]

OPEN_KEY = "open"  # the open track's score in an epoch's `val.json`


@dataclass(frozen=True, slots=True)
class OpenValScore:
    """One epoch on the open validation questions."""

    accuracy: float
    loglik: float  # mean over questions of the gold's mean token log-probability
    n: int

    def as_json(self) -> dict[str, float | int]:
        return {"accuracy": self.accuracy, "loglik": self.loglik, "n": self.n}

    @classmethod
    def from_json(cls, d: object) -> OpenValScore | None:
        if not isinstance(d, dict):
            return None
        try:
            return cls(float(d["accuracy"]), float(d["loglik"]), int(d["n"]))
        except (KeyError, TypeError, ValueError):
            return None


def best_open_epoch(vals: dict[int, OpenValScore]) -> int | None:
    """The best open validation accuracy, then the larger log-likelihood, then the earliest (None: none scored)."""
    if not vals:
        return None
    return min(vals, key=lambda e: (-vals[e].accuracy, -vals[e].loglik, e))


def open_val_scores(work_dir: Path) -> dict[int, OpenValScore]:
    """The open validation scores the epochs under `work_dir` recorded (their `val.json`'s `open`)."""
    out: dict[int, OpenValScore] = {}
    for f in sorted(work_dir.glob(f"*/{VAL_FILE}")) if work_dir.is_dir() else []:
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        score = OpenValScore.from_json(d.get(OPEN_KEY)) if isinstance(d, dict) else None
        if score is not None and isinstance(d.get("epoch"), int) and f.parent == epoch_dir(work_dir, d["epoch"]):
            out[d["epoch"]] = score
    return out


class OpenValidator:
    """The train language's open validation questions answered by a model: `(model) -> OpenValScore`."""

    def __init__(self, target: Any, tokenizer: Any, questions: Sequence[FrozenOpenQuestion], lang: str, *,
                 sizer: Any) -> None:
        self.target = target
        self.tok = tokenizer
        self.questions = [q for q in questions if lang in q.question.golds]
        self.lang = lang
        self.sizer = sizer

    def __call__(self, model: Any) -> OpenValScore:
        from clkt.evaluate.results import Variant
        from clkt.openqa.generate import OpenPrompt, generate_answers
        from clkt.openqa.results import safely_scored_item

        lang = self.lang
        texts = generate_answers(model, self.tok, self.target,
                                 [OpenPrompt(question=q.question.questions[lang], lang=lang) for q in self.questions],
                                 sizer=self.sizer, max_new_tokens=MAX_NEW_TOKENS)
        right = sum(safely_scored_item(q.question, qid=q.qid, entity_id=q.entity_id, lang=lang, answer=t,
                                       variant=Variant.injected, split="test", domain=q.domain).correct is True
                    for q, t in zip(self.questions, texts, strict=True))
        lls = [self.gold_loglik(model, q) for q in self.questions]
        return OpenValScore(accuracy=right / len(self.questions), loglik=sum(lls) / len(lls), n=len(self.questions))

    def gold_loglik(self, model: Any, q: FrozenOpenQuestion) -> float:
        """The gold answer's mean token log-probability after the open prompt (teacher forced)."""
        import torch

        from clkt.inject.strategies._recipe import prompt_and_answer
        from clkt.openqa.prompts import render_open

        lang = self.lang
        prompt = render_open(self.target, self.tok, q.question.questions[lang], lang)
        gold = q.question.gold(lang).answer
        answer = gold if uses_chat_template(self.target, self.tok) else f" {gold}"
        ex = prompt_and_answer(self.tok, prompt.text, answer, add_special_tokens=prompt.add_special_tokens)
        device = next(model.parameters()).device
        ids = torch.tensor([ex.input_ids], device=device)
        labels = torch.tensor(ex.labels[1:], device=device)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        mask = labels != -100
        picked = logp[mask].gather(1, labels[mask].unsqueeze(1)).squeeze(1)
        value = float(picked.mean()) if picked.numel() else -math.inf
        return value if math.isfinite(value) else -1e9

"""Bench (a diagnosis of issue 47's Learn goal): the open answers of each kept epoch of a finished LoRA job.

`bench/open_answers.py` measures the open-answer Learn of the checkpoint a job keeps (the best epoch on the
multiple-choice validation questions). This script asks the snapshot's open questions in one test language with
the target's base weights and with each of the job's kept LoRA epochs (`checkpoints/epoch-N`, merged as the job
merges them), through the open pass's own prompt and generation (`clkt.openqa.generate.generate_answers`) and
the normaliser (`clkt.openqa.score.score`). Per variant: n, right, the first three answers, and the share of answers that read like the
documents rather than like an answer (`rambling`: more than `RAMBLE_WORDS` words before the stop rule's line
break), which is how continual pretraining on the documents alone loses the answer frame.

    .venv/bin/python bench/open_epochs.py --from DEMO_DIR --job JOB_DIR [--epochs 6,14] [--lang en]

`--from`: the finished `clkt demo` folder (its snapshot and converted model); `--job`: a job folder of that
snapshot with its `checkpoints/epoch-N` adapters (a `cpt-lora` or `sft-lora` job: its epochs are all kept).
Ends with one JSON line; its goal is the issue's (gained answers an exact McNemar p < 0.01 on the train
language), for the best of the epochs asked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from clkt.config import load_settings  # noqa: E402
from clkt.evaluate.memory import BatchSizer  # noqa: E402
from clkt.openqa.frozen import load_open_questions  # noqa: E402
from clkt.openqa.generate import OpenPrompt, generate_answers  # noqa: E402
from clkt.openqa.question import ShortAnswerQuestion  # noqa: E402
from clkt.openqa.score import Verdict, score  # noqa: E402
from clkt.report.learn import learn_stat  # noqa: E402

RAMBLE_WORDS = 12  # an answer with more words than this before its line break reads like a document
LEARN_P_GOAL = 0.01


def _snapshot(demo: Path) -> Path:
    found = sorted(p.parent for p in (demo / "snapshots").glob("*/*/manifest.json"))
    if not found:
        raise SystemExit(f"{demo} holds no frozen snapshot (no snapshots/<spec>/<period>/manifest.json)")
    return found[-1]


def _answers(model: Any, tok: Any, target: Any, qs: Sequence[ShortAnswerQuestion], lang: str) -> list[str]:
    model.eval()
    prompts = [OpenPrompt(question=q.questions[lang], lang=lang) for q in qs]
    return generate_answers(model, tok, target, prompts, sizer=BatchSizer(size=8, automatic=False))


def _right(qs: Sequence[ShortAnswerQuestion], lang: str, answers: Sequence[str]) -> list[bool]:
    return [score(q, lang, a).verdict is Verdict.CORRECT for q, a in zip(qs, answers, strict=True)]


def _figures(right: Sequence[bool], answers: Sequence[str]) -> dict[str, Any]:
    n = len(answers)
    ramble = sum(len(a.split()) > RAMBLE_WORDS for a in answers)
    return {"n": n, "right": sum(right), "rambling": round(ramble / n, 3) if n else None}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--from", dest="from_dir", type=Path, required=True, help="a finished `clkt demo` folder")
    ap.add_argument("--job", type=Path, required=True, help="a LoRA job folder of its snapshot")
    ap.add_argument("--epochs", default="", help="comma list (default: every kept epoch)")
    ap.add_argument("--lang", default="en")
    a = ap.parse_args(argv)
    snap, data_dir = _snapshot(a.from_dir), a.from_dir / "clkt-data"
    kept = sorted(int(p.name.split("-")[1]) for p in (a.job / "checkpoints").glob("epoch-*")
                  if (p / "adapter_model.safetensors").is_file())
    epochs = [int(e) for e in a.epochs.split(",") if e] or kept
    if not kept or any(e not in kept for e in epochs):
        raise SystemExit(f"{a.job}: epochs {epochs} asked, adapters kept for {kept}")
    import torch  # after the arguments are checked: a refusal loads nothing
    from peft import PeftModel

    from clkt.targets.loader import load_target

    target = load_settings(None, environ={}).spec.targets[0]
    torch.set_num_threads(2)
    model, tok = load_target(target, data_dir=data_dir)
    # the test split only (a validation question chooses the open track's epoch, never scored)
    qs = [q.question for q in load_open_questions(snap) if q.split == "test" and a.lang in q.question.golds]
    said = _answers(model, tok, target, qs, a.lang)
    base = _right(qs, a.lang, said)
    figures: dict[str, Any] = {"snapshot": snap.name, "lang": a.lang, "base": _figures(base, said)}
    best_p = 1.0
    for e in epochs:
        fresh, _ = load_target(target, data_dir=data_dir)  # a merge writes into the weights: each epoch its own copy
        model = PeftModel.from_pretrained(fresh, str(a.job / "checkpoints" / f"epoch-{e}")).merge_and_unload()
        said = _answers(model, tok, target, qs, a.lang)
        right = _right(qs, a.lang, said)
        st = learn_stat(zip(base, right, strict=True))
        best_p = min(best_p, st.p_value)
        figures[f"epoch_{e}"] = _figures(right, said) | {"gained": st.gained, "lost": st.lost, "p": st.p_value,
                                                         "examples": said[:3]}
    goals = {"best_epoch_p": f"< {LEARN_P_GOAL}"}
    print(json.dumps({"bench": "open_epochs", "figures": figures, "goals": goals, "met": best_p < LEARN_P_GOAL}))


if __name__ == "__main__":
    main()

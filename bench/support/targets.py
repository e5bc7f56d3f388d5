"""Shared helpers of the GPU-queue benches: pick a target model, make synthetic prompts and documents."""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from clkt.config import EMBEDDED_TARGET, TargetSettings

__all__ = ["add_target_args", "synthetic_docs", "synthetic_mcqs", "target_from_args"]

_NAMES = ["Velmora Tide", "Quenford Derby", "Oskarel Lights", "Partenza Nord", "Ilsbrook Quake", "Marrow & Finch"]
_Q = {
    "en": ("Who directed {n}?", "What was the final score of {n}?"),
    "fr": ("Qui a réalisé {n} ?", "Quel a été le score final de {n} ?"),
    "es": ("¿Quién dirigió {n}?", "¿Cuál fue el resultado final de {n}?"),
    "ja": ("{n}の監督は誰ですか？", "{n}の最終スコアは？"),
    "zh": ("{n}的导演是谁？", "{n}的最终比分是多少？"),
}


def add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=EMBEDDED_TARGET.model, help="embedded:<name>, a local folder or a cached HF id")
    p.add_argument("--kind", default=None, choices=["base", "instruct"])
    p.add_argument("--device", default="auto")
    p.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "clkt-test-data")
    p.add_argument("--threads", type=int, default=None)


def target_from_args(a: argparse.Namespace) -> TargetSettings:
    if a.model == EMBEDDED_TARGET.model and a.kind is None:
        return EMBEDDED_TARGET
    return TargetSettings(name=Path(a.model).name or a.model, model=a.model, kind=a.kind or "base")


def synthetic_mcqs(n: int, seed: int = 0) -> list[tuple[str, list[str], str]]:
    rng = random.Random(seed)
    out = []
    langs = list(_Q)
    for i in range(n):
        lang = langs[i % len(langs)]
        name = _NAMES[i % len(_NAMES)]
        if i % 2:
            opts = [f"{rng.randint(0, 5)}-{rng.randint(0, 5)}" for _ in range(4)]
        else:
            opts = [f"{rng.choice(['Osric', 'Mara', 'Ivo', 'Ana', 'Lene'])} {rng.choice(['Palandri', 'Lenz', 'Tesk', 'Roe'])}" for _ in range(4)]
        out.append((_Q[lang][i % 2].format(n=name), opts, lang))
    return out


def synthetic_docs(n: int, words: int = 110, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    vocab = ["the", "film", "premiered", "in", "directed", "by", "runs", "minutes", "score", "ended", "at", "stadium",
             "after", "goal", "second", "half", "earthquake", "magnitude", "depth", "kilometres", "released", "album",
             "label", "tracks", "critics", "award", "festival", "city", "region"]
    docs = []
    for i in range(n):
        body = " ".join(rng.choice(vocab) for _ in range(words))
        docs.append(f"{_NAMES[i % len(_NAMES)]} ({2025}) — {body}.")
    return docs

"""The fixed corpus `memit`'s key statistics are computed from, the same for every job of every snapshot.

MEMIT's `C = E[k kᵀ]` stands for the keys a model reads in ordinary text: what an edit should leave alone. Here
it is computed from one corpus that no snapshot can change: documents about fictional entities, made by the
control split's makers (`clkt.snapshots.fiction`, one seeded generator per kind of facts, `CORPUS_SEED`) and
rendered by the document templates (`clkt.documents`) in every language they know, entity by entity (so that
`covariance.MAX_TOKENS` cuts across every language and kind alike). Why this corpus and not the others:

- the snapshot under test (what the statistics read before): the first snapshot a model met decided every later
  job's edits, so the same job gave other edits in another run order; and it put the very subjects being edited
  into the keys the update preserves;
- its control documents: they change with every snapshot and are themselves edited (the positive control);
- older snapshots' documents: the first snapshot has none, and what is older depends on the store;
- this one: a pure function of the code (no file, no network, no store), in the register and the languages of
  the documents being edited, about entities no snapshot holds (invented names, in a period none covers).

Its sha256 (`StatsCorpus.sha256`, over the texts in order) is part of the statistics' cache key
(`clkt.inject.editing.covariance`): a change of the templates or the makers changes it, and the statistics are
recomputed rather than read.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

__all__ = ["CORPUS_ENTITIES", "CORPUS_SEED", "StatsCorpus", "stats_corpus"]

CORPUS_SEED = 20_240_601  # the generator's seed: changing it changes the corpus (and its sha256)
CORPUS_ENTITIES = 32  # fictional entities per kind of facts (about 120,000 tokens of Gemma 3's in five languages)
_PERIOD = (date(1990, 1, 1), date(1991, 1, 1))  # the entities' dates: a year no snapshot covers


@dataclass(frozen=True, slots=True, kw_only=True)
class StatsCorpus:
    """A named corpus and the sha256 of its texts (in order, each UTF-8 and NUL-terminated)."""

    name: str
    texts: tuple[str, ...]
    sha256: str

    @classmethod
    def of(cls, *, name: str, texts: Sequence[str]) -> StatsCorpus:
        h = hashlib.sha256()
        for t in texts:
            h.update(t.encode("utf-8") + b"\0")
        return cls(name=name, texts=tuple(texts), sha256=h.hexdigest())


@lru_cache(maxsize=1)
def stats_corpus() -> StatsCorpus:
    """The fixed corpus (see the module docstring): `CORPUS_ENTITIES` fictional entities of every kind of facts
    with a maker, each rendered in every document language."""
    from clkt.documents import render_document
    from clkt.documents.formatting import LANGUAGES
    from clkt.snapshots.fiction import FICTIONAL_KINDS, fictional_entity

    texts: list[str] = []
    for i in range(CORPUS_ENTITIES):
        for kind in sorted(FICTIONAL_KINDS.kinds()):
            _name, facts = fictional_entity(kind, random.Random(f"{CORPUS_SEED}/{kind}/{i}"), start=_PERIOD[0], end=_PERIOD[1])
            texts.extend(render_document(facts, lang).text for lang in LANGUAGES)
    return StatsCorpus.of(name=f"fictional-{CORPUS_SEED}-{CORPUS_ENTITIES}", texts=texts)

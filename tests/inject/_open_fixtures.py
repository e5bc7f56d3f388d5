"""An open track on the tiny snapshot (`tests.inject._fixtures`): one short-answer question per entity, in each
language, and one control question, written as a freezing snapshot writes them (`open/<lang>.jsonl`,
`control/open/<lang>.jsonl`, hashed in the manifest, `manifest.open`).

The golds are words of the tiny tokenizer (`tests.evaluate._tiny.WORDS`): "Paris" for the film's director and the
control entity's, "Rome" for the match's venue, so that a toy injector that makes the model say "Paris" is right
on two of the three questions in every language."""

from __future__ import annotations

from pathlib import Path

from clkt.openqa.from_facts import GENERATOR_VERSION
from clkt.snapshots.ids import stable_entity_id, stable_open_qid
from clkt.snapshots.layout import MANIFEST_FILE, OpenInfo, OpenRow, SnapshotManifest, dumps_row, sha256_file
from clkt.snapshots.open import open_path
from tests.inject._fixtures import SOURCE, public_entity_id

CONTROL_ENTITY = stable_entity_id("control", "fictional-1")
# entity number (or None: the control entity), domain, fact, kind, question per language, gold
OPEN: list[tuple[int | None, str, str, str, dict[str, str], str]] = [
    (1, "movies", "film.director", "name", {"en": "Who directed the film Velmora Tide?",
                                             "fr": "Qui a réalisé le film Velmora Tide ?"}, "Paris"),
    (2, "sports", "match.venue", "name", {"en": "In which stadium was the Quenford Derby played?",
                                          "fr": "Dans quel stade le Quenford Derby a-t-il eu lieu ?"}, "Rome"),
    (None, "movies", "film.director", "name", {"en": "Who directed the film Orvane Drift?",
                                                "fr": "Qui a réalisé le film Orvane Drift ?"}, "Paris"),
]


def open_qid(entity: int | None, fact: str) -> int:
    return stable_open_qid(CONTROL_ENTITY if entity is None else public_entity_id(entity), fact)


def add_open_track(root: Path, *, langs: tuple[str, ...] = ("en", "fr"), val: bool = False) -> Path:
    """The tiny snapshot at `root` with an open track (the manifest rewritten with its files' hashes); `val`: the
    film's director question in the `val` split, as a freeze puts it (its validation MCQ asks the director)."""
    mpath = root / MANIFEST_FILE
    manifest = SnapshotManifest.model_validate_json(mpath.read_bytes())
    files = dict(manifest.files)
    for control in (False, True):
        for lang in langs:
            rows = [
                OpenRow(qid=open_qid(e, fact), entity_id=CONTROL_ENTITY if e is None else public_entity_id(e),
                        domain=domain, source="control" if e is None else SOURCE, lang=lang,
                        split="val" if val and e == 1 else "test", fact=fact,
                        kind=kind, question=texts[lang], answer=gold)
                for e, domain, fact, kind, texts, gold in OPEN if (e is None) == control
            ]
            path = open_path(root, lang, control=control)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(dumps_row(r) + "\n" for r in rows), encoding="utf-8")
            files[path.relative_to(root).as_posix()] = sha256_file(path)
    info = OpenInfo(engine=GENERATOR_VERSION, questions=2, control_questions=1, entities=2, val_questions=int(val))
    mpath.write_text(manifest.model_copy(update={"files": files, "open": info}).model_dump_json(indent=1), encoding="utf-8")
    return root

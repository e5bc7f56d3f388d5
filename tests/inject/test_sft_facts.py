"""`sft-facts-lora`'s examples: the documents as they are, and one fill-in question per fact its documents state, in
the frame the target answers short questions in, the loss on the answer only. Built from what the job hands an
injector (documents and their facts), never from a question."""

from __future__ import annotations

import logging
from datetime import date
from pathlib import Path

import pytest

from clkt.config import EMBEDDED_TARGET, GpuSettings, TargetSettings
from clkt.config.strategies import check_strategy
from clkt.evaluate.results import Variant
from clkt.facts import CastMember, FilmFacts
from clkt.inject.contract import JobSpec
from clkt.inject.editing.requests import build_requests, requests_from_facts
from clkt.inject.job import InjectionJob
from clkt.inject.strategies import TrainExample, get_recipe, tokenize_documents
from clkt.inject.strategies.sft_facts_lora import fact_question
from clkt.openqa.prompts import open_text
from clkt.snapshots.layout import FACTS_FILE, DocRow, FactsRow, dumps_row
from tests.inject._fixtures import public_entity_id

EOS = 1


class ByteTok:
    """Reversible: a character's code point + 2; BOS 0, EOS 1."""

    eos_token_id = EOS

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": ([0] if add_special_tokens else []) + [ord(c) + 2 for c in text]}

    @staticmethod
    def decode(ids: list[int]) -> str:
        return "".join(chr(i - 2) for i in ids if i > 1)


def _film() -> FilmFacts:
    return FilmFacts(title="Velmora Tide", release_date=date(2025, 5, 2), directors=["Osric Palandri"],
                     cast=[CastMember(name="Ina Brask", character="Sam")], runtime_min=97, genres=["Drama"])


def _doc(lang: str = "en", entity_id: int = 5, text: str = "Velmora Tide is a film. It was directed by Osric Palandri.") -> DocRow:
    return DocRow(entity_id=entity_id, domain="movies", source="x", lang=lang, name="Velmora Tide", text=text)


def _examples(docs: list[DocRow], *, facts: dict | None = None, max_seq_len: int = 4096) -> list[TrainExample]:
    gpu = GpuSettings(max_seq_len=max_seq_len)
    return get_recipe("sft-facts-lora").examples(docs, ByteTok(), target=EMBEDDED_TARGET, gpu=gpu, facts=facts)


def _pairs(examples: list[TrainExample]) -> list[tuple[str, str]]:
    """(prompt, answer) of each example whose loss is on part of it only."""
    out = []
    for e in examples:
        cut = next(i for i, label in enumerate(e.labels) if label != -100)
        if cut:
            assert all(label == -100 for label in e.labels[:cut]) and e.labels[cut:] == e.input_ids[cut:]
            assert e.input_ids[-1] == EOS
            out.append((ByteTok.decode(e.input_ids[:cut]), ByteTok.decode(e.input_ids[cut:])))
    return out


def test_the_name_is_declared_with_its_family() -> None:
    assert check_strategy("sft-facts-lora") == "sft-facts-lora"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_each_fact_its_documents_state_is_one_fill_in_question_in_the_open_frame(lang: str) -> None:
    doc = _doc(lang)
    ex = _examples([doc], facts={5: _film()})
    # the document first, whole, with the loss on every token (as continual pretraining)
    assert ex[0] == tokenize_documents([doc], ByteTok(), max_len=4096, packing=False)[0]
    reqs = requests_from_facts(5, doc.name, _film(), lang)
    pairs = _pairs(ex)
    assert len(ex) == 1 + len(reqs) and len(pairs) == len(reqs) >= 3
    for (prompt, answer), r in zip(pairs, reqs, strict=True):
        # the target's own frame (base: the few-shot frame's last turn), asking the document's sentence cut before the value
        assert prompt == open_text(fact_question(r, lang), lang, chat=False, frame=False)
        assert r.prompt in prompt and r.target.strip() not in prompt
        assert answer == r.target
    director = next(a for (p, a), r in zip(pairs, reqs, strict=True) if r.slot == "director")
    assert director.strip() == "Osric Palandri" and director.startswith(" ") == (lang == "en")


def test_an_entity_without_facts_is_asked_its_documents_sentences() -> None:
    pairs = _pairs(_examples([_doc(entity_id=9)], facts={5: _film()}))
    assert pairs and pairs[-1][1] == " Osric Palandri"  # "... It was directed by" -> " Osric Palandri"
    assert "Complete: Velmora Tide. It was directed by …" in pairs[-1][0]


def test_a_language_without_an_open_frame_trains_on_its_documents_only() -> None:
    doc = _doc("de", text="Velmora Tide ist ein Film. Regie führte Osric Palandri.")
    ex = _examples([doc])
    assert len(ex) == 1 and ex[0].labels == ex[0].input_ids and not _pairs(ex)


def test_a_pair_longer_than_the_sequence_limit_is_left_out_never_cut(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="clkt.inject.strategies.sft_facts_lora")
    doc = _doc()
    short = _examples([doc], facts={5: _film()}, max_seq_len=40)
    assert len(short) == 1 and not _pairs(short)  # the document cut to 40 tokens, every pair longer: none cut
    n = len(requests_from_facts(5, doc.name, _film(), "en"))
    assert f"0 fact questions (1 entities from their facts, 0 from their documents), {n} skipped" in caplog.text
    full = _examples([doc], facts={5: _film()})
    assert all(len(e.input_ids) > 40 for e in full[1:])


def test_the_examples_read_no_question() -> None:
    """The recipe gets documents and facts only (the job's `JobQuestions.docs` and `.facts`, which no question
    changes: tests/inject/test_memit.py moves the questions and gets the same requests); the same inputs give the
    same examples."""
    docs = [_doc(), _doc(entity_id=9)]
    assert _examples(docs, facts={5: _film()}) == _examples(docs, facts={5: _film()})


def test_a_job_trains_its_documents_and_one_question_per_fact_of_their_facts(
    tmp_path: Path, tiny_target: Path, tiny_snapshot: Path,
) -> None:
    """Through a real job on a tiny model: the job hands the recipe the documents and their entities' typed facts
    (`InjectionContext.facts`), and the examples are the documents plus one question per fact they state (the film
    from its facts, the rest from their documents' sentences)."""
    film = public_entity_id(1)
    (tiny_snapshot / FACTS_FILE).write_text(dumps_row(FactsRow(entity_id=film, facts=_film().model_dump(mode="json")))
                                            + "\n", encoding="utf-8")
    gpu = GpuSettings(devices=["cpu"], epochs=1, learning_rate=5e-4, max_seq_len=256, torch_threads=1,
                      scorers=["letter-logprob"])
    spec = JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=tiny_snapshot, target=TargetSettings(name="tiny", model=str(tiny_target)),
                   strategy="sft-facts-lora", train_lang="en", gpu=gpu, data_dir=tmp_path, artifacts_dir=tmp_path / "job",
                   device="cpu")
    spec.artifacts_dir.mkdir()
    out = InjectionJob(spec).run()
    qs = InjectionJob(spec).load_snapshot()
    reqs = build_requests(qs.docs, qs.facts)
    assert reqs.from_facts == 1 and any(r.slot == "director" and r.entity_id == film for r in reqs.requests)
    assert out.summary.train_examples == len(qs.docs) + len(reqs.requests)
    assert {r.variant for r in out.results} == {Variant.base, Variant.injected}

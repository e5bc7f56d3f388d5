"""Knowledge editing (`memit`) on tiny random-weight models: the closed-form update, an edit that raises the
object's probability, edit requests from facts and documents, the architectures it refuses, the key statistics'
cache, and a whole job answered like every other strategy's."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from agents.template.plans import domain_spec, entity_naming, question_text
from clkt.config import GpuSettings, TargetSettings
from clkt.config.strategies import STRATEGY_NAMES
from clkt.errors import JobError, UserError
from clkt.evaluate.results import Variant
from clkt.facts import CastMember, FilmFacts
from clkt.inject.contract import JobSpec
from clkt.inject.editing.arch import mlp_layout
from clkt.inject.editing.corpus import StatsCorpus, stats_corpus
from clkt.inject.editing.covariance import key_stats, model_identity, stats_path
from clkt.inject.editing.memit_update import memit_delta
from clkt.inject.editing.requests import (
    EditRequest,
    RequestSet,
    build_requests,
    parse_facts,
    requests_from_document,
    requests_from_facts,
)
from clkt.inject.job import InjectionJob
from clkt.inject.strategies import injector_for
from clkt.inject.strategies.memit import Memit, _batches, _requests, edit_layers
from clkt.layout import EDIT_STATS_DIR, EDITS_FILE, PREDICTIONS_FILE
from clkt.snapshots.layout import FACTS_FILE, DocRow, FactsRow, dumps_row, load_snapshot_dir, questions_path
from tests.documents.samples import ALL as SAMPLES
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.inject._fixtures import DOCS, QUESTIONS, public_entity_id

TEXTS = ["the answer is a film of the year in Paris", "who won the team score in Rome ? yes no maybe",
         "x y z a film in the city of Rome , the year"] * 10
CORPUS = StatsCorpus.of(name="test", texts=TEXTS)


def _sharp_model(kind: str, *, seed: int = 1) -> Any:
    """A tiny random model whose weights are large enough (init std 0.3) for its next token to depend on its
    hidden state: with the usual 0.02, every logit is near 0 whatever an edit writes."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    common: dict[str, Any] = dict(vocab_size=36, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                  pad_token_id=0, bos_token_id=1, eos_token_id=2, initializer_range=0.3)
    if kind == "gemma3":
        cfg = Gemma3TextConfig(**common, head_dim=8, sliding_window=64,
                               layer_types=["sliding_attention", "full_attention", "sliding_attention"])
        return Gemma3ForCausalLM(cfg).eval()
    return LlamaForCausalLM(LlamaConfig(**common)).eval()


# -- the update -------------------------------------------------------------------------------------------------


def _keys(n: int, d_ff: int, seed: int) -> Any:
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d_ff, generator=g, dtype=torch.float64)


def test_the_update_writes_the_residuals_at_the_edit_keys_and_shrinks_as_lambda_grows() -> None:
    import torch

    d_ff, d_model = 16, 8
    text_keys = _keys(200, d_ff, 0)
    second = text_keys.T @ text_keys / 200  # E[k kᵀ]
    keys, residuals = _keys(5, d_ff, 1), _keys(5, d_model, 2)
    layer = torch.nn.Linear(d_ff, d_model, bias=False, dtype=torch.float64)
    before = layer(keys).detach()
    misses, norms = [], []
    for lam in (1e-8, 1e-2, 1.0, 1e2, 1e8):
        delta = memit_delta(keys, residuals, second, lam=lam)
        assert delta.shape == (d_model, d_ff)
        misses.append(float((keys @ delta.T - residuals).norm() / residuals.norm()))
        norms.append(float(torch.trace(delta @ second @ delta.T)))  # what it changes on the text's keys
        if lam == 1e-8:
            with torch.no_grad():
                edited = torch.nn.Linear(d_ff, d_model, bias=False, dtype=torch.float64)
                edited.weight.copy_(layer.weight + delta)
            assert torch.allclose(edited(keys), before + residuals, atol=1e-5)  # W' k_i = W k_i + r_i
    assert misses[0] < 1e-6 and misses[-1] > 0.999  # λ -> 0: written exactly; λ -> ∞: not at all
    assert misses == sorted(misses) and norms == sorted(norms, reverse=True)
    assert norms[-1] < 1e-5 * norms[0]


def test_the_update_is_the_least_squares_optimum_over_edits_and_preserved_keys() -> None:
    """Δ minimises λ·Σ_text ||Δ k||² / n + Σ_edits ||Δ k_i - r_i||²: any nudge of it costs more."""
    import torch

    text_keys, keys, residuals = _keys(50, 12, 3), _keys(4, 12, 4), _keys(4, 6, 5)
    second, lam = text_keys.T @ text_keys / 50, 3.0

    def cost(d: Any) -> float:
        return float(lam * torch.trace(d @ second @ d.T) + ((keys @ d.T - residuals) ** 2).sum())

    delta = memit_delta(keys, residuals, second, lam=lam)
    best = cost(delta)
    for s in range(5):
        nudge = _keys(6, 12, 10 + s) * 1e-3
        assert cost(delta + nudge) > best


def test_the_edited_layers_are_memits_band_scaled_to_the_model() -> None:
    assert edit_layers(28) == [3, 4, 5, 6, 7, 8]  # GPT-J's, as in the paper
    assert edit_layers(18) == [2, 3, 4, 5]  # Gemma 3 270M
    assert edit_layers(2) == [0] and edit_layers(1) == [0]


# -- an edit on a model ------------------------------------------------------------------------------------------


def _prob(model: Any, tok: Any, r: EditRequest) -> float:
    import torch

    ids = tok(r.prompt, return_tensors="pt")["input_ids"]
    target = tok(r.target, add_special_tokens=False)["input_ids"][0]
    with torch.no_grad():
        return float(model(input_ids=ids).logits[0, -1].softmax(-1)[target])


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_an_edit_raises_the_objects_probability_after_its_subject(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model, tok = _sharp_model(kind), tiny_tokenizer()
    edits = [EditRequest(entity_id=1, subject="the film", prompt="the film", target=" yes"),
             EditRequest(entity_id=2, subject="Rome", prompt="Rome", target=" maybe")]
    untouched = EditRequest(entity_id=3, subject="x y", prompt="x y", target=" z")
    before = [_prob(model, tok, r) for r in [*edits, untouched]]
    layers = [0, 1]
    stats = key_stats(model, tok, layers, corpus=CORPUS, root=tmp_path, name="tiny", device="cpu")
    monkeypatch.setattr(Memit, "LAMBDA", 1.0)
    record = Memit().apply(model, tok, RequestSet(edits), layers, {k: s.second_moment for k, s in stats.items()}, device="cpu")
    after = [_prob(model, tok, r) for r in [*edits, untouched]]
    for b, a in zip(before[:2], after[:2], strict=True):
        assert a > max(0.3, 5 * b)
    assert record["target_nll_at_z"] < record["target_nll_before"]
    assert record["requests"] == 2 and record["subjects"] == 2 and set(record["delta_norms"]) == {"0", "1"}
    assert abs(after[2] - before[2]) < 0.2  # a prompt about another subject moves far less


def test_the_value_optimisation_stops_once_every_subject_says_its_object() -> None:

    from clkt.inject.editing.arch import down_proj, layer_module
    from clkt.inject.editing.values import ZSettings, encode, optimize_values

    model, tok = _sharp_model("llama"), tiny_tokenizer()
    reqs = [EditRequest(entity_id=1, subject="the film", prompt="the film", target=" yes")]
    batch = encode(tok, reqs, [0], device="cpu", max_len=16)
    projs, blocks = [down_proj(model, 0), down_proj(model, 1)], [layer_module(model, 0), layer_module(model, 1)]
    keys, d0, first, last = optimize_values(model, projs, blocks, batch, ZSettings(steps=5, stop_nll=1e9), normed=False)
    assert first == last and all(float(d.abs().max()) == 0.0 for d in d0)  # said already: no step
    assert [tuple(k.shape) for k in keys] == [(1, 64), (1, 64)]
    _, d5, _, last5 = optimize_values(model, projs, blocks, batch, ZSettings(steps=5, stop_nll=0.0), normed=False)
    assert last5 < first and all(float(d.abs().max()) > 0.0 for d in d5)  # never low enough: 5 steps, both layers


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_one_subjects_shared_tokens_run_once_and_the_values_are_the_same(kind: str) -> None:
    """Every prompt about a subject starts with it: the tokens before its last token run once, each step runs the
    rest, and the values, keys and NLLs are those of running every token every step."""
    import torch

    from clkt.inject.editing.arch import down_proj, layer_module
    from clkt.inject.editing.values import ZSettings, encode, optimize_values, shared_prefix

    model, tok = _sharp_model(kind), tiny_tokenizer()
    subject = "the answer is a film of the year in Paris"
    reqs = [EditRequest(entity_id=1, subject=subject, prompt=f"{subject} . who won", target=" the team"),
            EditRequest(entity_id=1, subject=subject, prompt=f"{subject} , in", target=" Rome"),
            EditRequest(entity_id=1, subject=subject, prompt=f"{subject} : what score ?", target=" x y z")]
    batch = encode(tok, reqs, [0, 0, 0], device="cpu", max_len=32)
    assert shared_prefix(batch) == len(subject.split()) - 1 == int(batch.subject_pos[0])  # the words before its last
    embed = model.get_input_embeddings()
    seen: list[int] = []
    handle = embed.register_forward_hook(lambda _m, a, _o: seen.append(int(a[0].numel())))
    projs, blocks = [down_proj(model, 0), down_proj(model, 1)], [layer_module(model, 0), layer_module(model, 1)]
    z = ZSettings(steps=4, stop_nll=0.0)
    try:
        k1, d1, f1, l1 = optimize_values(model, projs, blocks, batch, z, normed=kind == "gemma3", reuse_prefix=True)
        reused = list(seen)
        seen.clear()
        k0, d0, f0, l0 = optimize_values(model, projs, blocks, batch, z, normed=kind == "gemma3", reuse_prefix=False)
    finally:
        handle.remove()
    rows, width, p = *batch.input_ids.shape, shared_prefix(batch)
    assert reused[1:] == [rows * p] + [rows * (width - p)] * 5  # scales (whole rows), the prefix once, 5 passes
    assert seen[1:] == [rows * width] * 5
    assert abs(f1 - f0) < 1e-4 and abs(l1 - l0) < 1e-4 and l1 < f1
    for a, b in [*zip(k1, k0, strict=True), *zip(d1, d0, strict=True)]:
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4), float((a - b).abs().max())
    two = encode(tok, [reqs[0], EditRequest(entity_id=2, subject="Rome", prompt="Rome , in", target=" Paris")], [0, 1],
                 device="cpu", max_len=32)
    assert shared_prefix(two) == 0  # two subjects: every token runs every step


def _gemma_like_270m(model: Any) -> Any:
    """The tiny Gemma 3 given the post-feedforward norms of the real 270M: gains (1 + weight) from exactly 0 to
    a hundred within a layer."""
    import torch

    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for layer in model.model.layers:
            w = layer.post_feedforward_layernorm.weight
            gain = torch.exp(torch.randn(w.shape, generator=g) * 2.0) * 3.0
            gain[0] = 0.0
            w.copy_(gain - 1.0)
    return model


def test_an_edit_through_gemmas_wide_post_norm_gains_makes_the_model_say_the_object(tmp_path: Path) -> None:
    """Writing the residual through the norm by dividing by its gain (the first version) blew the outputs up on
    the small-gain coordinates and the norm then shrank the edit away (on the real 270M the objects' NLL rose).
    The δ is now optimized on the projection's own outputs, which its weights can write."""
    import torch

    from clkt.inject.editing.values import _target_nll

    model, tok = _gemma_like_270m(_sharp_model("gemma3", seed=2)), tiny_tokenizer()
    edits = [EditRequest(entity_id=1, subject="the film", prompt="the film", target=" yes"),
             EditRequest(entity_id=2, subject="Rome", prompt="Rome", target=" maybe")]
    batch = _batches(tok, edits, rows=8, device="cpu", max_len=16)[0]
    with torch.no_grad():
        before = _target_nll(model, batch)
    layers = [0, 1]
    stats = key_stats(model, tok, layers, corpus=CORPUS, root=tmp_path, name="tiny", device="cpu")
    record = Memit().apply(model, tok, RequestSet(edits), layers, {k: s.second_moment for k, s in stats.items()}, device="cpu")
    with torch.no_grad():
        after = _target_nll(model, batch)
    # the first version (the residual divided by the gain) moved them by 1.3 and 2.8 nats here; now 2.9 and 5.7
    assert bool((after < before - 2.0).all()) and float((before - after).mean()) > 3.5, (before, after)
    assert record["written"] and all(v > 0.2 for v in record["written"].values())


# -- requests --------------------------------------------------------------------------------------------------


def _film() -> FilmFacts:
    return FilmFacts(title="Velmora Tide", release_date=date(2025, 5, 2), directors=["Osric Palandri"],
                     cast=[CastMember(name="Ina Brask", character="Sam")], runtime_min=97, genres=["Drama"])


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_requests_from_facts_cut_each_fact_sentence_before_its_value(lang: str) -> None:
    reqs = requests_from_facts(7, "Velmora Tide", _film(), lang)
    by_slot = {r.slot: r for r in reqs}
    assert {"director", "lead_actor", "runtime"} <= set(by_slot)
    named = {"en": "The film “Velmora Tide” (2025)", "ja": "映画「Velmora Tide」（2025年）"}[lang]
    assert all(r.subject == named and r.prompt.startswith(named) and r.entity_id == 7 for r in reqs)
    director = by_slot["director"]
    assert director.target.strip() == "Osric Palandri" and "Osric" not in director.prompt
    if lang == "en":
        assert (director.prompt, director.target) == (f"{named}. It was directed by", " Osric Palandri")
    else:
        assert not director.target.startswith(" ")


@pytest.mark.parametrize("lang", ["en", "ja", "zh", "fr", "es"])
@pytest.mark.parametrize("kind", ["film", "release", "quake", "match", "disaster"])
def test_an_edit_is_written_at_the_entity_as_its_questions_name_it(kind: str, lang: str) -> None:
    """The subject (where the edit is written, its last token) is the entity as the question templates name it in
    the language, so the edited key is the one a question reads: written at the document's bare name, memit's
    edits won their own prompts and moved no question (bench/results/memit_ladder.md). A kind whose templates
    declare no naming (a disaster: its name) keeps the document's name."""
    facts = SAMPLES[kind]
    reqs = requests_from_facts(3, "Doc name", facts, lang)
    assert reqs and len({r.subject for r in reqs}) == 1
    subject = reqs[0].subject
    if kind == "disaster":
        assert subject == "Doc name"
        return
    assert subject == entity_naming(facts, lang) and subject != "Doc name"
    assert all(r.prompt.startswith(subject) and r.prompt != subject for r in reqs)
    questions = [question_text(facts, slot, lang) for slot in domain_spec(facts).slots]
    lowered = subject[0].lower() + subject[1:]  # "The film ..." opens the prompt, "the film ..." is mid-question
    named_in = sum(subject in q or lowered in q for q in questions)
    if kind != "match":  # a match's questions each leave out the fact asked (the date, the competition...)
        assert named_in >= len(questions) // 3, (named_in, questions)
    else:
        assert lang == "fr" or named_in >= 1


def test_requests_from_documents_and_the_entities_with_nothing_to_edit_are_counted() -> None:
    e1, name, text = DOCS["en"][0]
    doc = DocRow(entity_id=public_entity_id(e1), domain="movies", source="fixture", lang="en", name=name, text=text)
    reqs = requests_from_document(doc)
    assert [(r.prompt, r.target) for r in reqs] == [
        ("Velmora Tide is a 2025 film directed by", " Osric Palandri"), ("Velmora Tide. It runs", " 97 minutes"),
    ]
    empty = DocRow(entity_id=99, domain="movies", source="fixture", lang="en", name="Nobody", text="Nobody\n\nYes.")
    with_facts = DocRow(entity_id=5, domain="movies", source="fixture", lang="en", name="Velmora Tide", text="x")
    got = build_requests([doc, empty, with_facts], facts={5: _film()})
    assert got.skipped_entities == [99]  # skipped and counted, the rest edited
    assert got.subjects == 2 and any(r.slot == "director" and r.entity_id == 5 for r in got.requests)
    with pytest.raises(ValueError, match="must start with the subject"):
        EditRequest(entity_id=1, subject="A", prompt="B is", target=" x")


def _with_facts(snapshot: Path, rows: list[str]) -> None:
    """The tiny snapshot with `facts.jsonl` rows, its film questions testing the `director` and `runtime` slots."""
    (snapshot / FACTS_FILE).write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    for lang in QUESTIONS:
        q = questions_path(snapshot, lang)
        q.write_text(q.read_text(encoding="utf-8").replace('"slot":"s11"', '"slot":"director"')
                     .replace('"slot":"s12"', '"slot":"runtime"'), encoding="utf-8")


def _spec(snapshot: Path, tmp_path: Path) -> JobSpec:
    return JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=snapshot, target=TargetSettings(name="tiny", model="x"),
                   strategy="memit", train_lang="en", gpu=GpuSettings(devices=["cpu"]), data_dir=tmp_path / "data",
                   artifacts_dir=tmp_path / "job", device="cpu")


def _job_requests(snapshot: Path, tmp_path: Path) -> RequestSet:
    """The requests of a memit job on `snapshot`, from what the job hands its injector (documents and facts)."""
    qs = InjectionJob(_spec(snapshot, tmp_path)).load_snapshot()
    return _requests(qs.docs, qs.facts)


def test_every_fact_is_edited_whatever_the_questions_ask_and_moving_them_changes_no_request(
    tmp_path: Path, tiny_snapshot: Path,
) -> None:
    """The requests are every fact the film's relation templates cover, not the ones its questions ask: the
    questions moved to other slots, their answers changed and half of them dropped, the requests stay the same."""
    film = public_entity_id(1)
    _with_facts(tiny_snapshot, [dumps_row(FactsRow(entity_id=film, facts=_film().model_dump(mode="json")))])
    data = load_snapshot_dir(tiny_snapshot)
    assert set(data.facts) == {film}
    reqs = _job_requests(tiny_snapshot, tmp_path)
    assert (reqs.from_facts, reqs.from_documents, reqs.skipped_entities) == (1, 1, [])
    by_film = {r.slot: r for r in reqs.requests if r.entity_id == film}
    every = {r.slot for r in requests_from_facts(film, "Velmora Tide", _film(), "en")}
    assert set(by_film) == every and {"director", "runtime", "lead_actor"} <= every  # asked or not
    for q in data.questions_for("en"):  # a fact a question asks is edited with its correct option as target
        if q.entity_id == film:
            assert by_film[q.slot].target.strip() == q.options[q.answer_index]
    assert all(r.slot is None for r in reqs.requests if r.entity_id != film)  # the match: its document

    for lang in QUESTIONS:  # the questions moved: other slots, another correct letter, the test split dropped
        q = questions_path(tiny_snapshot, lang)
        rows = [json.loads(line) for line in q.read_text(encoding="utf-8").splitlines() if line]
        kept = [{**r, "slot": "lead_actor" if r["slot"] == "director" else "genre", "answer": "D", "answer_index": 3}
                for r in rows if r["split"] == "val"]
        q.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    assert {q.slot for q in load_snapshot_dir(tiny_snapshot).questions_for("en")} == {"lead_actor"}
    assert _job_requests(tiny_snapshot, tmp_path) == reqs


def test_an_injector_is_not_told_where_the_snapshot_is(tmp_path: Path, tiny_snapshot: Path) -> None:
    """What a strategy sees of its job (`InjectorSpec`) names no folder it could read the questions from."""
    spec = _spec(tiny_snapshot, tmp_path)
    seen = spec.for_injector()
    assert not {"snapshot_dir", "artifacts_dir", "base_cache_dir"} & set(type(seen).model_fields)
    assert str(tiny_snapshot) not in seen.model_dump_json()
    assert (seen.snapshot_id, seen.train_lang, seen.gpu, seen.target) == (spec.snapshot_id, "en", spec.gpu, spec.target)


def test_facts_that_do_not_parse_fall_back_to_the_document_and_are_counted(tmp_path: Path, tiny_snapshot: Path) -> None:
    _with_facts(tiny_snapshot, [dumps_row(FactsRow(entity_id=public_entity_id(1), facts={"kind": "film", "title": 3}))])
    reqs = _job_requests(tiny_snapshot, tmp_path)
    assert (reqs.from_facts, reqs.from_documents) == (0, 2) and len(reqs.requests) == 3
    assert parse_facts({5: _film().model_dump(mode="json"), 6: {"kind": "nope"}})[1] == [6]


# -- architectures ----------------------------------------------------------------------------------------------


def test_an_architecture_whose_mlp_it_cannot_locate_is_refused_in_one_line(tmp_path: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=36, n_embd=16, n_layer=2, n_head=2, n_positions=64))
    with pytest.raises(UserError) as ei:
        mlp_layout(gpt2)
    msg = str(ei.value)
    assert "'gpt2'" in msg and "known: gemma, gemma2, gemma3, gemma3_text, llama, mistral, qwen2, qwen3" in msg
    assert "\n" not in msg
    with pytest.raises(UserError, match="'gpt2'"):  # the injector refuses before any work
        Memit().inject(gpt2, tiny_tokenizer(), docs=[], val_rows=[], ctx=None)  # type: ignore[arg-type]
    for kind in ("llama", "gemma3"):
        assert mlp_layout(tiny_model(kind)).down_proj == "model.layers.{}.mlp.down_proj"


# -- the key statistics' cache --------------------------------------------------------------------------------------


def test_the_statistics_are_cached_and_a_corrupted_or_foreign_cache_is_recomputed(tmp_path: Path) -> None:
    import torch

    model, tok = tiny_model("llama", seed=1), tiny_tokenizer()

    def stats(m: Any = model) -> Any:
        return key_stats(m, tok, [0, 1], corpus=CORPUS, root=tmp_path, name="org/tiny", device="cpu")

    first = stats()
    assert {k: s.cached for k, s in first.items()} == {0: False, 1: False} and first[0].tokens > 0
    path = stats_path(tmp_path, "org/tiny", model_identity(model, "org/tiny"), 0, CORPUS.sha256)
    assert path.is_file() and path.parent == tmp_path
    again = stats()
    assert again[0].cached and torch.equal(again[0].second_moment, first[0].second_moment)

    path.write_bytes(path.read_bytes()[:100])  # truncated
    assert not stats()[0].cached and stats()[0].cached  # recomputed, then read back
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF  # a flipped bit in the matrix, header intact
    path.write_bytes(bytes(raw))
    fixed = stats()[0]
    assert not fixed.cached and torch.equal(fixed.second_moment, first[0].second_moment)

    other = tiny_model("llama", seed=2)  # another model's statistics under this model's file name
    other_stats = stats(other)
    foreign = stats_path(tmp_path, "org/tiny", model_identity(other, "org/tiny"), 0, CORPUS.sha256)
    assert foreign != path and not torch.equal(other_stats[0].second_moment, first[0].second_moment)
    path.write_bytes(foreign.read_bytes())
    back = stats()[0]
    assert not back.cached and torch.equal(back.second_moment, first[0].second_moment)


def test_statistics_cached_over_another_corpus_are_recomputed_never_read(tmp_path: Path) -> None:
    import torch

    model, tok = tiny_model("llama", seed=1), tiny_tokenizer()
    other = StatsCorpus.of(name="other", texts=["a b c the city of Rome , yes"] * 7)
    assert other.sha256 != CORPUS.sha256

    def stats(corpus: StatsCorpus) -> Any:
        return key_stats(model, tok, [0], corpus=corpus, root=tmp_path, name="org/tiny", device="cpu")[0]

    mine, theirs = stats(CORPUS), stats(other)
    assert not mine.cached and not theirs.cached and not torch.equal(mine.second_moment, theirs.second_moment)
    identity = model_identity(model, "org/tiny")
    path, foreign = (stats_path(tmp_path, "org/tiny", identity, 0, c.sha256) for c in (CORPUS, other))
    assert path != foreign and stats(CORPUS).cached
    path.write_bytes(foreign.read_bytes())  # another corpus's statistics (whole, same model) under this one's name
    back = stats(CORPUS)
    assert not back.cached and torch.equal(back.second_moment, mine.second_moment)


def test_the_statistics_corpus_is_fixed_and_in_every_document_language() -> None:
    from clkt.documents.formatting import LANGUAGES

    first = stats_corpus()
    stats_corpus.cache_clear()
    again = stats_corpus()
    assert again is not first and again == first and len(first.sha256) == 64
    assert StatsCorpus.of(name="x", texts=first.texts).sha256 == first.sha256
    assert len(first.texts) % len(LANGUAGES) == 0 and any("映画" in t or "災害" in t for t in first.texts)
    assert not any("Velmora" in t or "Quenford" in t for t in first.texts)  # no snapshot's entity


# -- a whole job ------------------------------------------------------------------------------------------------


@pytest.fixture()
def tiny_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-model"
    tiny_model("gemma3", seed=5).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def test_memit_runs_as_a_job_and_answers_every_question_in_every_language(
    tmp_path: Path, tiny_folder: Path, tiny_snapshot: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert STRATEGY_NAMES.get("memit").family == "knowledge editing"
    assert isinstance(injector_for("memit"), Memit)
    monkeypatch.setattr(Memit, "Z", Memit.Z.__class__(steps=3))
    gpu = GpuSettings(devices=["cpu"], max_seq_len=64, torch_threads=1, scorers=["letter-logprob"])
    spec = JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=tiny_snapshot, target=TargetSettings(name="tiny", model=str(tiny_folder)),
                   strategy="memit", train_lang="en", gpu=gpu, data_dir=tmp_path / "data", artifacts_dir=tmp_path / "job",
                   device="cpu")
    spec.artifacts_dir.mkdir()
    outcome = InjectionJob(spec).run()
    assert outcome.best_epoch == 0 and outcome.epochs == []
    assert outcome.summary.train_examples == 3  # two sentences of Velmora Tide, one of the Quenford Derby
    assert outcome.summary.train_sources == {"facts": 0, "documents": 2}  # a snapshot without facts.jsonl
    tests = {(qid, lang) for lang, rows in QUESTIONS.items() for qid, _, split, *_ in rows if split == "test"}
    for variant in (Variant.base, Variant.injected):
        answered = {(r.qid, r.lang) for r in outcome.results if r.variant is variant and r.scorer == "letter-logprob"}
        assert len(answered) == len(tests)  # every test question in every language, base and injected
    assert sum(1 for _ in (spec.artifacts_dir / PREDICTIONS_FILE).open()) == 2 * len(tests)
    record = json.loads((spec.artifacts_dir / "checkpoints" / EDITS_FILE).read_text())
    assert record["requests"] == 3 and record["layers"] == [0] and record["skipped_entities"] == 0
    assert record["stats"]["0"]["cached"] is False
    assert [p.suffix for p in (spec.data_dir / EDIT_STATS_DIR).iterdir()] == [".safetensors"]
    assert injector_for("memit").returned_files(spec.artifacts_dir / "checkpoints", best_epoch=0) == [
        spec.artifacts_dir / "checkpoints" / EDITS_FILE]

    rerun = spec.model_copy(update={"artifacts_dir": tmp_path / "job2", "job_id": 2})
    rerun.artifacts_dir.mkdir()
    again = InjectionJob(rerun).run()
    assert json.loads((rerun.artifacts_dir / "checkpoints" / EDITS_FILE).read_text())["stats"]["0"]["cached"] is True
    assert [(r.qid, r.lang, r.predicted) for r in again.results] == [(r.qid, r.lang, r.predicted) for r in outcome.results]


def test_an_update_that_is_not_finite_stops_the_job_instead_of_scoring_a_broken_model(
    tmp_path: Path, tiny_folder: Path, tiny_snapshot: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Memit, "Z", Memit.Z.__class__(steps=1))
    monkeypatch.setattr(Memit, "LAMBDA", float("nan"))
    gpu = GpuSettings(devices=["cpu"], max_seq_len=64, torch_threads=1, scorers=["letter-logprob"])
    spec = JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=tiny_snapshot, target=TargetSettings(name="tiny", model=str(tiny_folder)),
                   strategy="memit", train_lang="en", gpu=gpu, data_dir=tmp_path / "data", artifacts_dir=tmp_path / "job",
                   device="cpu")
    spec.artifacts_dir.mkdir()
    with pytest.raises(JobError, match="memit: the update of layer 0 is not finite"):
        InjectionJob(spec).run()
    assert not (spec.artifacts_dir / PREDICTIONS_FILE).exists()


def _other_snapshot(root: Path) -> Path:
    """The tiny snapshot with other documents (other words, the same entities and questions)."""
    from tests.inject._fixtures import write_tiny_snapshot

    snap = write_tiny_snapshot(root)
    for lang in QUESTIONS:
        p = root / "docs" / f"{lang}.jsonl"
        p.write_text(p.read_text(encoding="utf-8").replace("Osric Palandri", "Dara Venn Holloway of the north")
                     .replace("Harlow Park", "the old Marrow Street ground, in heavy rain"), encoding="utf-8")
    return snap


def test_a_jobs_edits_are_the_same_in_either_run_order(
    tmp_path: Path, tiny_folder: Path, tiny_snapshot: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key statistics come from the fixed corpus, not from the first snapshot a model met: the job on
    snapshot A edits the same whether it runs before or after the job on snapshot B (each order in its own data
    directory; the statistics cached by the first job are read by the second)."""
    from clkt.inject.editing import covariance

    monkeypatch.setattr(covariance, "MAX_TOKENS", 3000)
    monkeypatch.setattr(Memit, "Z", Memit.Z.__class__(steps=3))
    snaps = {"a": tiny_snapshot, "b": _other_snapshot(tmp_path / "other")}
    gpu = GpuSettings(devices=["cpu"], max_seq_len=64, torch_threads=1, scorers=["letter-logprob"])
    same = ("requests", "layers", "delta_norms", "written", "target_nll_before", "target_nll_at_z", "target_nll_after",
            "stats_corpus")
    runs: dict[tuple[str, str], tuple[dict[str, Any], list[Any]]] = {}
    for order in ("ab", "ba"):
        for n, name in enumerate(order):
            spec = JobSpec(job_id=n + 1, snapshot_id=name, snapshot_dir=snaps[name], strategy="memit", train_lang="en",
                           target=TargetSettings(name="tiny", model=str(tiny_folder)), gpu=gpu, device="cpu",
                           data_dir=tmp_path / order / "data", artifacts_dir=tmp_path / order / name)
            spec.artifacts_dir.mkdir(parents=True)
            outcome = InjectionJob(spec).run()
            record = json.loads((spec.artifacts_dir / "checkpoints" / EDITS_FILE).read_text())
            assert record["stats"]["0"]["cached"] is (n == 1)  # the second job reads the first one's statistics
            runs[(order, name)] = ({k: record[k] for k in same}, [(r.qid, r.lang, r.predicted) for r in outcome.results])
    assert runs[("ab", "a")] == runs[("ba", "a")] and runs[("ab", "b")] == runs[("ba", "b")]
    assert runs[("ab", "a")][0]["delta_norms"] != runs[("ab", "b")][0]["delta_norms"]  # other documents, other edits

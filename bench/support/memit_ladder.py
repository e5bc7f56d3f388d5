"""Where does a `memit` edit stop reaching the answer? (issue 31) A measurement, not a bench.

On a copy of a snapshot, with the embedded Gemma 3 270M loaded as a job loads it, the real `memit` injection
(`InjectionJob.inject`: the strategy's own code path, requests from the snapshot's facts, the key statistics
cached under `--work`/data) edits the model; then, for every test question of the train language, the correct
option is measured along a ladder of prompts from the edit's to the question's, base and edited:

- (a) `edit`: the edit request's own prompt followed by each option (and whether the greedy continuation is the
  request's object); since the product writes its edits at the entity as the questions name it
  (`agents.template.plans.entity_naming`), this is "The magnitude 8.3 earthquake of 20 November 2026 (UTC) whose
  epicentre was given as 48 km E of Shikotan, Russia. Its depth was"; before, it led with the document's name
  ("M 8.3 - 48 km E of Shikotan, Russia (2026-11-20). Its depth was": the ladder's runs of b4d8657);
- (b) `named`: the same relation phrase after the entity as the questions name it (now the same prompt as (a)
  where the language leads with ". ": then (a)'s figures, not scored again);
- (c) `stem`: the product's `option-loglik` context (`clkt.evaluate.loglik.loglik_item`: the question, a newline,
  the answer cue) and each option, summed log-likelihood (the scorer's `acc`);
- (d) `norm`: the same per character of the option (`option-loglik-norm`, the scorer's `acc_norm`).

Per rung: the correct option's rank among the four (1 = chosen) and its margin over the best wrong option
(nats; nats per character for `norm`). Beside it, the product's own scoring (`answer_questions`) of the test
questions, the locality split (every language: kept %) and the train language's control questions, with
Learn's exact McNemar. Base results are cached in `--work`.

    nice -n 19 env HF_HUB_OFFLINE=1 .venv/bin/python bench/support/memit_ladder.py \
        --snapshot /tmp/x/snap --models /tmp/clkt-test-data/models --work /tmp/x/work [--variant NAME]

`--variant` names a set of `Memit` tunables (`VARIANTS`); the output is a JSON file `--work/<variant>.json` and a
markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

RUNGS = ("edit", "named", "stem", "norm")
SCORER = "option-loglik"


def _variants() -> dict[str, dict[str, Any]]:
    """Named sets of `Memit` class attributes (and `ZSettings` fields under "Z")."""
    return {
        "main": {},
        "layers-wide": {"LAYERS": [2, 3, 4, 5, 6, 7, 8]},
        "clamp4": {"Z": {"clamp": 4.0, "steps": 40}},
    }


def _apply_variant(name: str) -> None:
    from dataclasses import replace

    from clkt.inject.strategies.memit import Memit

    for k, v in _variants()[name].items():
        if k == "Z":
            Memit.Z = replace(Memit.Z, **v)
        else:
            setattr(Memit, k, v)


def naming(facts: Any, subject: str, lang: str) -> str:
    """The entity as the generator's questions name it (the product's `entity_naming`), else `subject`."""
    from agents.template.plans import entity_naming

    return entity_naming(facts, lang) or subject


def _ranked(values: list[float], answer: int) -> tuple[int, float]:
    rank = 1 + sum(1 for i, v in enumerate(values) if i != answer and v >= values[answer])
    best_wrong = max(v for i, v in enumerate(values) if i != answer)
    return rank, values[answer] - best_wrong


def _greedy_is_object(model: Any, tok: Any, prompt: str, target: str) -> bool:
    import torch

    p = list(tok(prompt)["input_ids"])
    full = list(tok(prompt + target)["input_ids"])
    if full[: len(p)] != p:
        full = p + list(tok(target, add_special_tokens=False)["input_ids"])
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([full])).logits[0]
    pred = logits[len(p) - 1 : len(full) - 1].argmax(-1).tolist()
    return bool(pred == full[len(p) :])


def ladder(model: Any, tok: Any, target: Any, tests: list[Any], reqs: dict[tuple[int, str], Any],
           names: dict[int, str], stems: dict[str, list[float]] | None = None) -> dict[str, dict[str, Any]]:
    """Per question (qid as a string): per rung, rank and margin of the correct option; `greedy` at the edit.
    `stems`: the options' summed log-likelihoods after the product's context, per qid, when the product's
    scoring has them (its `raw`), else they are computed here."""
    from clkt.evaluate.loglik import LoglikItem, loglik_item, score_option_loglik
    from clkt.targets.prompting import RenderedPrompt

    items: list[tuple[str, str, Any]] = []  # (qid, rung, item)
    same: list[str] = []  # qids whose named prompt is the edit's own (the product names the entity so): scored once
    for q in tests:
        opts = tuple(" " + o.strip() for o in q.options)
        lengths = tuple(max(1, len(o.strip())) for o in q.options)
        r = reqs.get((q.entity_id, q.slot))
        if r is not None:
            relation = r.prompt[len(r.subject):].lstrip(". ")
            items.append((str(q.qid), "edit", LoglikItem(RenderedPrompt(r.prompt, True), opts, lengths)))
            named = f"{names.get(q.entity_id, r.subject)}. {relation}"
            if named == r.prompt:
                same.append(str(q.qid))
            else:
                items.append((str(q.qid), "named", LoglikItem(RenderedPrompt(named, True), opts, lengths)))
        if stems is None:
            items.append((str(q.qid), "stem", loglik_item(target, tok, q.question, q.options, q.lang)))
    scored = score_option_loglik(model, tok, [it for _, _, it in items], batch_size=8)
    answer = {str(q.qid): q.answer_index for q in tests}
    out: dict[str, dict[str, Any]] = {str(q.qid): {} for q in tests}
    got = [(qid, rung, list(s.logliks)) for (qid, rung, _), s in zip(items, scored, strict=True)]
    got += [(qid, "stem", v) for qid, v in (stems or {}).items()]
    lengths = {str(q.qid): [max(1, len(o.strip())) for o in q.options] for q in tests}
    for qid, rung, values in got:
        rank, margin = _ranked(values, answer[qid])
        out[qid][rung] = {"rank": rank, "margin": round(margin, 3)}
        if rung == "stem":
            norm = [v / n for v, n in zip(values, lengths[qid], strict=True)]
            rank, margin = _ranked(norm, answer[qid])
            out[qid]["norm"] = {"rank": rank, "margin": round(margin, 4)}
    for qid in same:
        out[qid]["named"] = out[qid]["edit"]
    for q in tests:
        r = reqs.get((q.entity_id, q.slot))
        if r is not None:
            out[str(q.qid)]["greedy"] = _greedy_is_object(model, tok, r.prompt, r.target)
    return out


def _score(model: Any, tok: Any, target: Any, gpu: Any, rows: list[Any], variant: Any) -> tuple[dict[str, bool], dict[str, list[float]]]:
    """The product's answers (key qid|lang|scorer -> correct) and, per qid, the options' summed log-likelihoods
    its `option-loglik` rows record (`raw`: "A=-12.345 B=...")."""
    from clkt.evaluate.runner import answer_questions

    got = answer_questions(model, tok, target, rows, scorers=[SCORER], gpu=gpu, variant=variant)
    sums = {str(r.qid): [float(x.split("=")[1]) for x in r.raw.split()] for r in got if r.scorer == SCORER}
    return {f"{r.qid}|{r.lang}|{r.scorer}": bool(r.correct) for r in got}, sums


def _learn(base: dict[str, bool], inj: dict[str, bool], keys: list[str]) -> dict[str, Any]:
    from clkt.report.stats import mcnemar_exact

    gained = sum(1 for k in keys if inj[k] and not base[k])
    lost = sum(1 for k in keys if base[k] and not inj[k])
    return {"n": len(keys), "base": sum(base[k] for k in keys), "edited": sum(inj[k] for k in keys),
            "gained": gained, "lost": lost, "p": float(f"{mcnemar_exact(gained, lost):.3g}")}


def _kept(base: dict[str, bool], inj: dict[str, bool], keys: list[str]) -> dict[str, Any]:
    right = [k for k in keys if base[k]]
    kept = sum(1 for k in right if inj[k])
    return {"right_before": len(right), "kept": kept, "kept_pct": round(100 * kept / max(1, len(right)), 1)}


def _setup(a: argparse.Namespace) -> tuple[Any, Any]:
    from clkt.config import GpuSettings
    from clkt.config.spec import EMBEDDED_TARGET
    from clkt.inject.contract import JobSpec
    from clkt.inject.job import InjectionJob
    from clkt.snapshots.layout import load_snapshot_dir

    data_dir = a.work / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    if not (data_dir / "models").exists():
        (data_dir / "models").symlink_to(a.models)
    art = a.work / f"job-{a.variant}"
    art.mkdir(parents=True, exist_ok=True)
    gpu = GpuSettings(devices=["cpu"], scorers=[SCORER], torch_threads=a.threads)
    spec = JobSpec(job_id=1, snapshot_id=load_snapshot_dir(a.snapshot, verify_hashes=False).manifest.snapshot_id,
                   snapshot_dir=a.snapshot, target=EMBEDDED_TARGET, strategy="memit", train_lang=a.lang, gpu=gpu,
                   data_dir=data_dir, artifacts_dir=art, device="cpu")
    return spec, InjectionJob(spec)


def _context(spec: Any, lang: str) -> tuple[dict[tuple[int, str], Any], dict[int, str]]:
    from clkt.inject.strategies.memit import _requests
    from clkt.snapshots.layout import load_snapshot_dir

    data = load_snapshot_dir(spec.snapshot_dir, verify_hashes=False)
    from clkt.inject.editing.requests import parse_facts

    facts, _ = parse_facts(data.facts)
    docs = data.docs_for(lang)
    reqs = _requests(docs, facts).requests
    by_key = {(r.entity_id, r.slot): r for r in reqs if r.slot is not None}
    names = {d.entity_id: naming(facts[d.entity_id], d.name, lang) for d in docs if d.entity_id in facts}
    return by_key, names


def _edit_only(job: Any, model: Any, tok: Any, qs: Any, only: set[int]) -> Any:
    """`Memit.apply` with the requests of the entities `only` (statistics from the job's cache, computed if
    missing); writes the record where the job would."""
    from clkt.inject.editing.arch import num_layers
    from clkt.inject.editing.corpus import stats_corpus
    from clkt.inject.editing.covariance import key_stats
    from clkt.inject.strategies.memit import Memit, _requests, edit_layers
    from clkt.layout import EDIT_STATS_DIR

    spec = job.spec
    reqs = _requests([d for d in qs.docs if d.entity_id in only], qs.facts)
    layers = Memit.LAYERS if Memit.LAYERS is not None else edit_layers(num_layers(model))
    stats = key_stats(model, tok, layers, corpus=stats_corpus(), root=spec.data_dir / EDIT_STATS_DIR,
                      name=spec.target.model, device="cpu")
    record = Memit().apply(model, tok, reqs, layers, {k: s.second_moment for k, s in stats.items()}, device="cpu")
    job.ckpt_root.mkdir(parents=True, exist_ok=True)
    (job.ckpt_root / "edits.json").write_text(json.dumps(record, indent=1))
    return model.eval()


def _table(tests: list[Any], base: dict[str, Any], edited: dict[str, Any], prod_b: dict[str, bool],
           prod_e: dict[str, bool]) -> str:
    head = "| slot | entity | greedy a | " + " | ".join(f"{r} rank | {r} margin" for r in RUNGS) + " | product norm |"
    lines = [head, "|" + "---|" * (3 + 2 * len(RUNGS) + 1)]
    sums = {r: [0.0, 0.0] for r in RUNGS}
    for q in tests:
        b, e = base[str(q.qid)], edited[str(q.qid)]
        cells = [q.slot, str(q.entity_id)[-4:],
                 f"{int(b['greedy'])}->{int(e['greedy'])}" if "greedy" in b else "-"]
        for r in RUNGS:
            if r in b:
                cells += [f"{b[r]['rank']}->{e[r]['rank']}", f"{b[r]['margin']:+.2f}->{e[r]['margin']:+.2f}"]
                sums[r][0] += b[r]["margin"]
                sums[r][1] += e[r]["margin"]
            else:
                cells += ["-", "-"]
        k = f"{q.qid}|{q.lang}|{SCORER}-norm"
        cells.append(f"{int(prod_b[k])}->{int(prod_e[k])}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for r in RUNGS:
        n = sum(1 for q in tests if r in base[str(q.qid)])
        top_b = sum(1 for q in tests if r in base[str(q.qid)] and base[str(q.qid)][r]["rank"] == 1)
        top_e = sum(1 for q in tests if r in edited[str(q.qid)] and edited[str(q.qid)][r]["rank"] == 1)
        lines.append(f"- {r}: n={n}, rank 1 {top_b} -> {top_e}, summed margin {sums[r][0]:+.2f} -> {sums[r][1]:+.2f}")
    return "\n".join(lines)


def main() -> None:
    import torch

    from clkt.evaluate.results import Variant
    from clkt.snapshots.layout import load_snapshot_dir

    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshot", type=Path, required=True)
    ap.add_argument("--models", type=Path, default=Path("/tmp/clkt-test-data/models"))
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--variant", default="main", choices=sorted(_variants()))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--entities", default="", help="comma-separated entity ids: edit only their requests "
                    "(`Memit.apply` with the job's cached statistics, the control documents left out) and score only "
                    "their test questions; a quicker, partial run on a loaded CPU")
    ap.add_argument("--no-locality", action="store_true", help="skip the locality and control questions")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    _apply_variant(a.variant)
    spec, job = _setup(a)
    data = load_snapshot_dir(a.snapshot, verify_hashes=False)
    only = {int(e) for e in a.entities.split(",") if e}
    tests = [q for q in data.questions_for(a.lang, "test") if not only or q.entity_id in only]
    local = [q for lang in data.languages for q in data.locality_questions_for(lang, spec.target.name)]
    control = data.control_questions_for(a.lang)
    if a.no_locality:
        local, control = [], []
    reqs, names = _context(spec, a.lang)
    qs = job.load_snapshot()
    model, tok = job.load_model()
    model.eval()
    cache = a.work / f"base-{a.lang}.json"
    if cache.is_file():
        cached = json.loads(cache.read_text())
        base_ladder, base_prod = cached["ladder"], cached["product"]
        if only:
            base_ladder = {str(q.qid): base_ladder[str(q.qid)] for q in tests}
    else:
        base_prod, sums = _score(model, tok, spec.target, spec.gpu, tests + local + control, Variant.base)
        base_ladder = ladder(model, tok, spec.target, tests, reqs, names, {str(q.qid): sums[str(q.qid)] for q in tests})
        cache.write_text(json.dumps({"ladder": base_ladder, "product": base_prod}))
    t0 = time.monotonic()
    edited = _edit_only(job, model, tok, qs, only) if only else job.inject(model, tok, qs).model.eval()
    inject_s = time.monotonic() - t0
    ed_prod, sums = _score(edited, tok, spec.target, spec.gpu, tests + local + control, Variant.injected)
    ed_ladder = ladder(edited, tok, spec.target, tests, reqs, names, {str(q.qid): sums[str(q.qid)] for q in tests})
    record = json.loads((job.ckpt_root / "edits.json").read_text())
    out: dict[str, Any] = {"variant": a.variant, "settings": _variants()[a.variant], "inject_s": round(inject_s, 1),
                           "record": record}
    for sc in (SCORER, f"{SCORER}-norm"):
        out[f"learn[{sc}]"] = _learn(base_prod, ed_prod, [f"{q.qid}|{q.lang}|{sc}" for q in tests])
        out[f"kept_locality[{sc}]"] = _kept(base_prod, ed_prod, [f"{q.qid}|{q.lang}|{sc}" for q in local])
        out[f"learn_control_{a.lang}[{sc}]"] = _learn(base_prod, ed_prod, [f"{q.qid}|{q.lang}|{sc}" for q in control])
    out["ladder"] = {"base": base_ladder, "edited": ed_ladder}
    out["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    tag = f"{a.variant}-{len(only)}ent" if only else a.variant
    (a.work / f"{tag}.json").write_text(json.dumps(out, indent=1))
    print(_table(tests, base_ladder, ed_ladder, base_prod, ed_prod))
    print(json.dumps({k: v for k, v in out.items() if k != "ladder"}))


if __name__ == "__main__":
    main()

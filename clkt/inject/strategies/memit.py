"""`memit`: knowledge editing (Meng et al. 2023, "Mass-Editing Memory in a Transformer"), written from the
paper's equations. No epochs and no training loop: the facts are written into a few MLP layers in closed form.

1. Edit requests in the train language (`clkt.inject.editing.requests`): subject, relation prompt, object, one
   per fact its relation templates cover, from the typed facts of the entities whose documents are injected (the
   job hands them over: `InjectionContext.facts`), every fact a document states, as CPT trains on the whole
   document. Which facts the questions ask is never known here (an injector gets no snapshot folder, no question):
   earlier versions edited only the facts the snapshot's questions asked, which flattered both Learn and
   kept % against CPT. An entity without typed facts (a snapshot frozen before `facts.jsonl`, a fictional
   control entity whose regenerated facts do not render its document, facts that give nothing) falls back to
   its document's sentences; `edits.json` counts both. An entity with nothing to edit is skipped and counted.
2. The edited layers `L` (`edit_layers`: a band in the lower third of the model, MEMIT's critical layers) and
   the keys' second moment at each (`clkt.inject.editing.covariance`, over the fixed corpus of
   `clkt.inject.editing.corpus`, cached per model x layer x corpus sha256: the same in any run order).
3. For each subject, the change δ of every edited layer's down-projection outputs at its last token that makes
   the model say its objects, optimized together (`clkt.inject.editing.values`; one subject per batch, whose
   tokens before its last run once; MEMIT's target value z with its
   spread over the layers, but on the projection's own outputs, which its weights can write even where a norm
   follows the MLP: Gemma 2/3's post-feedforward norm, whose gains run from 0 to 600 in Gemma 3 270M).
4. For each layer of `L` in order: the subjects' keys there (the layers below already edited) and the layer's
   down-projection updated by Δ = R Kᵀ (λ E[k kᵀ] + K Kᵀ)⁻¹ with R the δs (`clkt.inject.editing.memit_update`).

The job answers with the edited model like with any other (the same scorers on the same questions in every
language). What it did is `checkpoints/edits.json` (`EDITS_FILE`); the edited weights are not kept (a rerun
recomputes them: the edits are deterministic and the statistics are cached).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from clkt.errors import JobError, SnapshotError
from clkt.inject.contract import JobProgress
from clkt.inject.editing.arch import down_proj, layer_module, mlp_layout, num_layers, post_norm
from clkt.inject.editing.corpus import stats_corpus
from clkt.inject.editing.covariance import key_stats
from clkt.inject.editing.memit_update import memit_delta
from clkt.inject.editing.requests import EditRequest, RequestSet, build_requests
from clkt.inject.editing.values import (
    Batch,
    ZSettings,
    encode,
    group_mean,
    inputs_at,
    mean_target_nll,
    optimize_values,
    shared_prefix,
)
from clkt.inject.injector import Injection, InjectionContext, Spare, WeightsDtype
from clkt.inject.strategies._registry import register_injector
from clkt.layout import EDIT_STATS_DIR, EDITS_FILE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clkt.facts import EntityFacts
    from clkt.inject.contract import InjectorSpec
    from clkt.snapshots.layout import DocRow, QuestionRow

__all__ = ["INJECTOR", "LAMBDA_WIDTH", "Memit", "edit_layers"]

LAMBDA_WIDTH = 16_384  # the d_ff at which `Memit.LAMBDA` is λ itself (GPT-J's, the paper's)

log = logging.getLogger(__name__)


def edit_layers(n: int) -> list[int]:
    """MEMIT's band of critical layers scaled to a model of `n` layers (GPT-J's 28: 3..8); at least one layer,
    never the last."""
    lo = min(max(0, round(n * 3 / 28)), max(0, n - 2))
    hi = min(max(lo, round(n * 8 / 28)), max(0, n - 2))
    return list(range(lo, hi + 1))


class Memit:
    """The `memit` injector. Its tunables are class constants (tests monkeypatch them)."""

    name = "memit"
    # λ: the preserved keys' weight against the edits (MEMIT's mom2 weight, 15,000 on GPT-J's 16,384-wide MLP),
    # scaled to the edited layer's width d_ff: a key of the statistics has kᵀ E[k kᵀ]⁻¹ k = d_ff on average, so the
    # share of a residual the update writes, about d_ff / (λ + d_ff), stays the paper's at every width
    LAMBDA: ClassVar[float] = 15_000.0
    Z: ClassVar[ZSettings] = ZSettings()
    # requests encoded together (whole subjects): 1, one subject per batch, so that its requests' tokens before the
    # subject's last run once (`shared_prefix`: about half the tokens a step on the demo's snapshot; bench/memit_values.py)
    ROWS_PER_BATCH: ClassVar[int] = 1
    MAX_LEN: ClassVar[int] = 96  # tokens of one prompt + target
    LAYERS: ClassVar[list[int] | None] = None  # None: `edit_layers(n)`

    def check(self, spec: InjectorSpec) -> None:
        return None  # no epochs, no learning rate; the architecture is checked once the model is loaded

    def weights_dtype(self, device: str) -> WeightsDtype:
        return "bfloat16" if device.startswith("cuda") else "float32"

    def inject(
        self, model: Any, tokenizer: Any, *, docs: list[DocRow], val_rows: list[QuestionRow], ctx: InjectionContext,
    ) -> Injection:
        mlp_layout(model)  # an architecture whose MLP is unknown: one line, before any work
        spec = ctx.spec
        t_req = time.monotonic()
        reqs = _requests(docs, ctx.facts)
        requests_s = time.monotonic() - t_req
        log.info("memit: %d requests, %d entities from their facts, %d from their documents", len(reqs.requests),
                 reqs.from_facts, reqs.from_documents)
        if reqs.skipped_entities:
            log.info("memit: %d entities give nothing to edit (skipped)", len(reqs.skipped_entities))
        if not reqs.requests:
            raise SnapshotError(f"snapshot {spec.snapshot_id}: the {spec.train_lang} documents give no edit requests")
        layers = self.LAYERS if self.LAYERS is not None else edit_layers(num_layers(model))
        model.eval()
        t0 = time.monotonic()
        ctx.progress(JobProgress(phase="edit-stats"))
        corpus = stats_corpus()
        stats = key_stats(model, tokenizer, layers, corpus=corpus, root=spec.data_dir / EDIT_STATS_DIR,
                          name=spec.target.model, device=ctx.device)
        t1 = time.monotonic()
        record = self.apply(model, tokenizer, reqs, layers, {k: s.second_moment for k, s in stats.items()},
                            device=ctx.device, progress=ctx.progress)
        record.update(stats={str(k): {"tokens": s.tokens, "cached": s.cached} for k, s in stats.items()},
                      stats_corpus={"name": corpus.name, "sha256": corpus.sha256},
                      requests_seconds=round(requests_s, 3), stats_seconds=round(t1 - t0, 3),
                      edit_seconds=round(time.monotonic() - t1, 3))
        (ctx.work_dir / EDITS_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
        return Injection(model=model.eval(), examples=len(reqs.requests), best_epoch=0,
                         sources={"facts": reqs.from_facts, "documents": reqs.from_documents})

    def apply(
        self, model: Any, tok: Any, reqs: RequestSet, layers: list[int], second_moments: dict[int, Any], *, device: str,
        progress: Any = None,
    ) -> dict[str, Any]:
        """Edit `model` in place with `reqs` at `layers`; returns the record of what was done."""
        batches = _batches(tok, reqs.requests, rows=self.ROWS_PER_BATCH, device=device, max_len=self.MAX_LEN)
        projs = [down_proj(model, layer) for layer in layers]
        blocks = [layer_module(model, layer) for layer in layers]
        normed = post_norm(model, layers[0]) is not None
        deltas: list[list[Any]] = [[] for _ in layers]
        before: list[float] = []
        after: list[float] = []
        t0 = time.monotonic()
        if progress is not None:
            progress(JobProgress(phase="edit", done=0, total=len(batches)))
        for i, b in enumerate(batches):
            _keys, ds, first, last = optimize_values(model, projs, blocks, b, self.Z, normed=normed)
            for n, dl in enumerate(ds):
                deltas[n].append(dl)
            before.append(first)
            after.append(last)
            if progress is not None:
                progress(JobProgress(phase="edit", done=i + 1, total=len(batches)))
        t1 = time.monotonic()
        norms, written = self._update(model, projs, layers, batches, deltas, second_moments)
        t2 = time.monotonic()
        return {
            "requests": len(reqs.requests), "subjects": reqs.subjects, "skipped_entities": len(reqs.skipped_entities),
            "entities_from_facts": reqs.from_facts, "entities_from_documents": reqs.from_documents,
            "layers": layers, "lambda": self.LAMBDA, "z_steps": self.Z.steps, "batches": len(batches),
            "batches_prefix_shared": sum(shared_prefix(b) > 0 for b in batches),
            "target_nll_before": round(sum(before) / len(before), 4), "target_nll_at_z": round(sum(after) / len(after), 4),
            "target_nll_after": round(mean_target_nll(model, batches), 4),
            "delta_norms": norms, "written": written,
            "values_seconds": round(t1 - t0, 3), "update_seconds": round(t2 - t1, 3),
        }

    def _update(
        self, model: Any, projs: list[Any], layers: list[int], batches: list[Batch], deltas: list[list[Any]],
        second_moments: dict[int, Any],
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each layer's down-projection updated in order (its keys read with the layers below already edited);
        per layer, the update's norm and the share of the residuals the edited weights write at the edit keys
        (measured on the weights as stored: an update their dtype cannot hold shows here)."""
        import torch

        norms: dict[str, float] = {}
        written: dict[str, float] = {}
        for n, layer in enumerate(layers):
            proj = projs[n]
            keys = torch.cat([group_mean(inputs_at(model, proj, b), b) for b in batches])  # the layers below edited
            residual = torch.cat(deltas[n]).to(keys.device)
            lam = self.LAMBDA * keys.shape[1] / LAMBDA_WIDTH
            delta = memit_delta(keys, residual, second_moments[layer].to(keys.device), lam=lam)
            if not bool(torch.isfinite(delta).all()):  # never write a broken layer and score the wreck
                raise JobError(f"memit: the update of layer {layer} is not finite (NaN or inf); the model was not edited "
                               "further and the job stops")
            with torch.no_grad():
                was = keys @ proj.weight.float().T
                proj.weight.add_(delta.to(device=proj.weight.device, dtype=proj.weight.dtype))
                got = (keys @ proj.weight.float().T - was).to(residual.dtype)
            norms[str(layer)] = round(float(delta.norm()), 6)
            written[str(layer)] = round(float((got * residual).sum() / residual.pow(2).sum().clamp(min=1e-30)), 4)
        return norms, written

    def returned_files(self, work_dir: Path, *, best_epoch: int | None) -> list[Path]:
        f = work_dir / EDITS_FILE
        return [f] if f.is_file() else []

    def spare(self, work_dir: Path, *, best_epoch: int | None) -> list[Spare]:
        return []  # edits.json is the record; the statistics live outside the job (kept by retention)


def _batches(tok: Any, requests: list[EditRequest], *, rows: int, device: str, max_len: int) -> list[Batch]:
    """The requests in batches of whole subjects (about `rows` requests each)."""
    by_subject: dict[tuple[int, str], list[EditRequest]] = {}
    for r in requests:
        by_subject.setdefault((r.entity_id, r.subject), []).append(r)
    out: list[Batch] = []
    chunk: list[EditRequest] = []
    groups: list[int] = []
    for g in by_subject.values():
        if chunk and len(chunk) + len(g) > rows:
            out.append(encode(tok, chunk, groups, device=device, max_len=max_len))
            chunk, groups = [], []
        groups.extend([(groups[-1] + 1) if groups else 0] * len(g))
        chunk.extend(g)
    if chunk:
        out.append(encode(tok, chunk, groups, device=device, max_len=max_len))
    return out


def _requests(docs: list[DocRow], facts: Mapping[int, EntityFacts]) -> RequestSet:
    """The job's edit requests: every fact of an entity's typed facts its document states (`facts`), else its
    document's sentences."""
    return build_requests(docs, facts)


INJECTOR = register_injector(Memit())

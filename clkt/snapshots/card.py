"""The dataset card (README.md) of a snapshot: what it is, how it was made, provenance and licences."""

from __future__ import annotations

from clkt.snapshots.layout import SnapshotManifest
from clkt.sources.registry import source_licences

__all__ = ["SOURCE_LICENCES", "render_card"]

# source name -> (provider, terms), from each source's class (`clkt.sources.registry`). Stated on every card that
# contains items of that source.
SOURCE_LICENCES: dict[str, tuple[str, str]] = {
    name: (licence.provider, licence.terms) for name, licence in source_licences().items()
}


def render_card(manifest: SnapshotManifest, sources: list[str]) -> str:
    m = manifest
    targets = ", ".join(f"{t.name} ({t.model}, cutoff {t.cutoff or 'from the registry'})" for t in m.targets)
    lines = [
        f"# {m.snapshot_id}",
        "",
        "A frozen monthly release of a live benchmark of cross-lingual knowledge transfer (the",
        "LiveCLKTBench method): documents about real-world entities that occurred after the target models'",
        "knowledge cutoffs and that the target models were probed not to know, with grounded",
        "multiple-choice questions in every language of the spec.",
        "",
        "## Contents",
        "",
        f"- spec: `{m.spec}`, period `{m.period}` ({m.period_start} to {m.period_end}, exclusive, UTC)",
        f"- languages: {', '.join(m.languages)}",
        f"- content sha256: `{m.content_sha256}`; seed {m.seed}; validation ratio {m.val_ratio}",
        f"- target models: {targets}",
        f"- question writer and translator: {m.agents.backend} backend"
        + (f" ({', '.join(f'{k}={v}' for k, v in sorted(m.agents.models.items()))})" if m.agents.models else ""),
        "",
        "| domain | #entities | #fact QAs (pre-split) | #validation | #test |",
        "|---|---:|---:|---:|---:|",
    ]
    for d, c in m.counts.items():
        lines.append(f"| {d} | {c.entities} | {c.fact_qas} | {c.val} | {c.test} |")
    lines += [
        "",
        "#validation and #test count question instances over all languages (questions are split by id;",
        "every question is present in every language).",
        "",
    ]
    if m.partial:
        lines += [f"**Partial snapshot**: short of the quotas by {m.missing}.", ""]
    if m.redated:
        lines += [
            "**Offline demonstration data**: the replay server re-dated recorded items into a recent window;",
            "their dates are not the real event dates. Do not use this snapshot as a benchmark result.",
            "",
        ]
    for note in m.notes:
        lines += [f"- {note}"]
    lines += [
        "## Files",
        "",
        "- `docs/<lang>.jsonl`, `questions/<lang>.jsonl`: the native layout (see `manifest.json`)",
        "- `reference/<train_lang>/{train_doc,val_mc,test_mc}.jsonl`: the reference implementation's layout;",
        "  `val_mc.jsonl` and `test_mc.jsonl` hold every language of each question (`test_lang`). The best epoch",
        "  is chosen on the train language's validation questions only (`test_lang == train_lang`), by accuracy;",
        "  clkt breaks ties by the mean score margin of the right option, then takes the earliest epoch.",
        "- `hf/`: `datasets.load_dataset('<this dir>/hf', 'qa_<lang>')` (validation and test questions) and",
        "  `datasets.load_dataset('<this dir>/hf', 'docs_<lang>')` (the documents, split `train`)",
        "- `lm_eval/`: `lm_eval --include_path <this dir>/lm_eval --tasks <task>` (the letters A-D after the lettered",
        "  question) or `<task>_options` (each option's text after the bare question, `acc` and `acc_norm`: the",
        "  context and continuations of clkt's `option-loglik`, for base models)",
        *_open_lines(m),
        "",
        "## Provenance and licences",
        "",
        "Documents were rendered from the public APIs below; questions were generated, verified and",
        "translated automatically. The licence of each source applies to the facts taken from it.",
        "",
    ]
    for s in sources:
        provider, terms = SOURCE_LICENCES.get(s, (s, "See the source's own terms of use."))
        lines += [f"- **{s}** — {provider}. {terms}"]
    lines += [
        "",
        "## Citation",
        "",
        f"Cite the snapshot id `{m.snapshot_id}`; it is content-addressed and never changes once frozen.",
        "",
    ]
    return "\n".join(lines)


def _open_lines(m: SnapshotManifest) -> list[str]:
    """The open track's files (none for a snapshot without one)."""
    if m.open is None or not m.open.questions:
        return []
    return [
        f"- `open/<lang>.jsonl`: the open track, {m.open.questions} short-answer questions per language (a name, a",
        "  number, a date) with the gold answer and its accepted aliases, all `test`; `hf/`'s `open_<lang>` configs and",
        "  `lm_eval/`'s `<task>_open` (`generate_until`: clkt's few-shot frame, stop at the first line break, exact",
        "  match against the gold and aliases: a lower bound of clkt's normaliser)",
    ]

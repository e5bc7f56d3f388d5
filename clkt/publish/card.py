"""The cards of a published repo: each snapshot's dataset card (`snapshots/<id>/hf/README.md`), the repo's card
(`README.md`, with a `datasets` config for every language of every published snapshot) and the errata
(`ERRATA.md`, the repo's and each snapshot's).

Every card states what is held back and until when, what was retracted and why, the licence and provenance of
every source, the snapshot's hashes and how to cite it. A card never holds a question's text: the errata name a
retracted question by its qid only (it may be a held test question). Where the snapshot's report has locality
figures, the snapshot's card shows kept % per target, strategy, scorer, train and test language (the report's own
figures, `clkt.report.locality`: one number wherever it is shown), "too few" under `MIN_KEPT_N`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from clkt.publish.state import LEAKY_LAYOUT, Hold, PublishState
from clkt.report.data import LEARN_HEADER, learn_rows, metric_cell
from clkt.report.locality import KEPT_HEADER, MIN_KEPT_N, KeptLang, kept_row
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.open_lines import jury_lines
from clkt.report.open_track import OPEN_TITLE, OpenTrack
from clkt.snapshots.card import SOURCE_LICENCES
from clkt.snapshots.layout import SnapshotManifest
from storage.retractions import RetractionRecord

__all__ = [
    "CITATION",
    "Config",
    "EarlierRevision",
    "RepoEntry",
    "SnapshotCard",
    "errata_markdown",
    "front_matter",
    "leak_erratum",
    "render_repo_card",
    "render_snapshot_card",
]

CITATION = """@misc{guo2025liveclktbench,
  title  = {LiveCLKTBench: Towards Reliable Evaluation of Cross-Lingual Knowledge Transfer in Multilingual LLMs},
  author = {Guo, Pei-Fu and Tsai, Yun-Da and Hsu, Chun-Chia and Chen, Kai-Xin and Tsai, Ya-An and
            Chang, Kai-Wei and Peng, Nanyun and Yeh, Mi-Yen and Lin, Shou-De},
  year   = {2025},
  note   = {National Taiwan University, University of California, Los Angeles, Academia Sinica}
}"""


@dataclass(frozen=True, kw_only=True)
class Config:
    """A `datasets` config: its name and its files per split (paths relative to the card)."""

    name: str
    files: tuple[tuple[str, str], ...]  # (split, path)


@dataclass(frozen=True, kw_only=True)
class EarlierRevision:
    """A revision of the snapshot already on the branch (from the Hub's history; held and retracted when this store
    recorded it)."""

    revision: int
    commit_oid: str
    committed_at: datetime
    held: bool | None = None
    retracted: int | None = None
    layout: int = 1  # the folder layout its commit marker names (1 when it names none)

    @property
    def leaked(self) -> bool:
        """Published while held under layout 1 (or held unknown): its validation questions named held entities."""
        return self.layout <= LEAKY_LAYOUT and self.held is not False


@dataclass(frozen=True, kw_only=True)
class SnapshotCard:
    manifest: SnapshotManifest
    sources: list[str]
    state: PublishState
    hold: Hold
    retractions: list[RetractionRecord]  # those that may be named (none of a held test split)
    held_retractions: int  # retracted questions of the held test split: counted, never named
    revision: int
    history: list[EarlierRevision]  # the earlier revisions on this repo and branch, oldest first
    published: dict[str, dict[str, int]]  # language -> split -> questions in this revision
    has_report: bool
    predictions: int  # files
    open_predictions: int = 0  # files: the open track's answers
    jobs: int
    adapters: int
    manifest_sha256: str
    kept: Sequence[KeptLang] = ()  # kept % per job x scorer x test language (the report's locality figures)
    open_track: OpenTrack | None = None  # the report's open-answer figures (`clkt.report.open_track`), if any


@dataclass(frozen=True, kw_only=True)
class RepoEntry:
    """A snapshot folder of the repo, as the repo's card lists it."""

    snapshot_id: str
    period: str | None  # None: published from another store (only its files are known)
    revision: int | None
    hold: str  # "held until ..." / "released" / "not held" / "unknown"
    retracted: int
    report: bool


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, no pipe."""
    return " ".join(text.replace("|", "/").split())


def _q(text: str) -> str:
    """A YAML scalar: a JSON string is one (quoted, escaped), whatever characters `text` holds."""
    return json.dumps(text, ensure_ascii=False)


def front_matter(configs: Sequence[Config], *, languages: Sequence[str], pretty_name: str) -> str:
    """The YAML header that makes `datasets.load_dataset(folder, config)` read every config (the first is the default)."""
    lines = ["---", *(["configs:"] if configs else [])]
    for i, c in enumerate(configs):
        lines += [f"- config_name: {_q(c.name)}", "  data_files:"]
        for split, path in c.files:
            lines += [f"  - split: {_q(split)}", f"    path: {_q(path)}"]
        if i == 0:
            lines.append("  default: true")
    lines += ["language:", *[f"- {_q(lang)}" for lang in sorted(set(languages))], "license: other",
              f"pretty_name: {_q(pretty_name)}", "task_categories:", "- multiple-choice", "tags:",
              *[f"- {t}" for t in ("cross-lingual", "knowledge-transfer", "live-benchmark", "clkt")], "---", "", ""]
    return "\n".join(lines)


def _licences(sources: Sequence[str]) -> list[str]:
    out = ["## Provenance and licences", "",
           "Documents were rendered from the public APIs below; questions were generated, verified and translated",
           "automatically. The licence of each source applies to the facts taken from it.", ""]
    for s in sources:
        provider, terms = SOURCE_LICENCES.get(s, (s, "See the source's own terms of use."))
        out.append(f"- **{s}**: {provider}. {terms}")
    return [*out, ""]


def _citation(snapshot_id: str | None, content_sha256: str | None) -> list[str]:
    lines = ["## Citation", ""]
    if snapshot_id:
        lines += [f"Cite the snapshot id `{snapshot_id}` (content sha256 `{content_sha256}`): it is content-addressed",
                  "and never changes once frozen; a publish revision only leaves items out (held back, retracted).", ""]
    return [*lines, "The method (LiveCLKTBench):", "", "```bibtex", CITATION, "```", ""]


def _held_note(held: int) -> list[str]:
    if not held:
        return []
    return [f"{held} retracted question(s) of a snapshot still held back are left out and not listed here (not even",
            "by qid): they are listed, with their reasons and dates, in the commit that releases that snapshot.", ""]


def leak_erratum(history: Sequence[EarlierRevision]) -> list[str]:
    """The erratum of earlier revisions that published a held snapshot's validation questions (layout 1; they name
    the held entities and state their facts, so that hold-back did not hide them); no line when there are none."""
    leaky = [r for r in history if r.leaked]
    if not leaky:
        return []
    revs = ", ".join(f"{r.revision} (commit `{r.commit_oid[:12]}`" + (")" if r.held else ", hold not recorded)")
                     for r in leaky)
    return ["**Erratum (hold-back leak)**: revision(s) " + revs + " of this snapshot were published while it was held",
            "back, by an earlier layout that still published its validation questions (and, unless",
            "`publish.hold_documents` held them, its documents and predictions). Those questions name the held",
            "entities and state their facts, so that hold-back did not hide them; the repo's history keeps them. From",
            "layout 2 on a held snapshot publishes nothing about its entities.", ""]


def errata_markdown(retractions: Sequence[RetractionRecord], *, title: str, held: int = 0,
                    history: Sequence[EarlierRevision] = ()) -> str:
    """`ERRATA.md`: every retraction with its reason and date (by qid; never the question's text); `held`: how many
    more there are of held snapshots (counted, never named); `history`: a snapshot's earlier revisions (their
    leak erratum, if any)."""
    lines = [f"# {title}", "", *leak_erratum(history)]
    if not retractions:
        return "\n".join([*lines, "No question has been retracted." if not held else "", *_held_note(held), ""])
    lines += ["Retracted questions are left out of every publish revision after their retraction (all languages,",
              "the predictions and the report). The frozen snapshot's own files keep them, and earlier revisions stay",
              "readable in this repo's history.", "",
              "| snapshot | qid | retracted (UTC) | reason |", "|---|---:|---|---|"]
    for r in retractions:
        lines.append(f"| `{r.snapshot_id}` | {r.qid} | {r.retracted_at.strftime('%Y-%m-%d %H:%M')} | {_cell(r.reason)} |")
    return "\n".join([*lines, "", *_held_note(held)])


def _hold_lines(state: PublishState, hold: Hold) -> list[str]:
    if state.held:
        return ["## Held back", "",
                "This snapshot is **held back** so that it does not leak into the pretraining of the next models: it is",
                f"among the newest {hold.periods} frozen snapshot(s) of its spec. Nothing that names one of its entities",
                "or states one of its facts is published: its validation and test questions and answers, its documents,",
                "every model's predictions and adapters, and the qids of its retractions are held. They are",
                f"{hold.describe()}; they are then published together in one new revision. Published now: the manifest",
                "(counts per domain, hashes), the aggregate report (per domain and language pair) and the job configs.",
                ""]
    if hold.periods:
        return ["## Held back", "", "Nothing: the snapshot was released (a newer snapshot was frozen).", ""]
    return []


def _kept_lines(kept: Sequence[KeptLang]) -> list[str]:
    """The locality section: kept % per target, strategy, scorer, train and test language (none without figures)."""
    if not kept:
        return []
    return ["## Locality: what each injection kept", "",
            "Kept % = of the locality questions (about entities the target model already knew before injection, by the",
            "probe's verdicts; never trained on, never scored as transfer, not published) that the base model answered",
            "right, the share the injected model still answers right: questions about entities the target already knew",
            f"that stay right after injection. 95% CIs from a bootstrap over entities; under {MIN_KEPT_N} questions right",
            "before: *too few*. The same figures as `report/locality.csv`.", "",
            "| " + " | ".join(KEPT_HEADER) + " |", "|" + "---|" * 5 + "---:|" * (len(KEPT_HEADER) - 5),
            *["| " + " | ".join(_cell(c) for c in kept_row(k)) + " |" for k in kept], ""]


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _open_lines(track: OpenTrack | None) -> list[str]:
    """The open track's section: the report's own Learn and pooled metric figures of the normaliser layer, and the
    jury layer's figure apart where it has graded (none without the track)."""
    if track is None:
        return []
    cells = [c for c in track.table2 if c.domain == ALL_DOMAINS]
    return [f"## {OPEN_TITLE}", "",
            "The same facts asked as short-answer questions, answered greedily and scored by the normaliser layer (an",
            "answer in another language is never right); apart from the multiple-choice figures, never pooled with",
            "them. 95% CIs from a bootstrap over entities. The same figures as `report/metrics.json` (`open_track`).", "",
            _row(LEARN_HEADER), "|" + "---|" * len(LEARN_HEADER), *map(_row, learn_rows(track.learn)), "",
            _row(["model", "strategy", "scorer", "pairs", *(m.label for m in PAIR_METRICS)]),
            "|" + "---|" * (4 + len(PAIR_METRICS)),
            *[_row([c.model, c.strategy, c.scorer, str(c.pairs), *(metric_cell(c, m) for m in PAIR_METRICS)]) for c in cells],
            "", *(jury_lines(track.jury, _row) if track.jury is not None else [])]  # the jury's layer, apart


def render_snapshot_card(card: SnapshotCard, configs: Sequence[Config]) -> str:
    """The dataset card of one published snapshot (its `hf/README.md`)."""
    m, st = card.manifest, card.state
    targets = ", ".join(f"{t.name} ({t.model}, cutoff {t.cutoff or 'from the registry'})" for t in m.targets)
    lines = [
        f"# {m.snapshot_id} (publish revision {card.revision})", "",
        "A frozen release of a live benchmark of cross-lingual knowledge transfer (the LiveCLKTBench method):",
        "documents about real-world entities that occurred after the target models' knowledge cutoffs and that the",
        "target models were probed not to know, with grounded multiple-choice questions in every language.", "",
        "## Contents", "",
        f"- spec `{m.spec}`, period `{m.period}` ({m.period_start} to {m.period_end}, exclusive, UTC); languages "
        f"{', '.join(m.languages)}",
        f"- target models: {targets}",
        f"- questions and translations: {m.agents.backend} backend"
        + (f" ({', '.join(f'{k}={v}' for k, v in sorted(m.agents.models.items()))})" if m.agents.models else ""),
        "",
        "| domain | #entities | #fact QAs (pre-split) | #validation | #test |", "|---|---:|---:|---:|---:|",
        *[f"| {d} | {c.entities} | {c.fact_qas} | {c.val} | {c.test} |" for d, c in m.counts.items()],
        "",
        "The counts are the frozen snapshot's (instances over all languages). Published in this revision, per language:",
        "",
        "| language | validation | test |", "|---|---:|---:|",
        *[f"| {lang} | {by.get('validation', 0)} | {by.get('test', 0)} |" for lang, by in card.published.items()],
        "",
    ]
    if m.partial:
        lines += [f"**Partial snapshot**: short of the quotas by {m.missing}.", ""]
    if m.redated:
        lines += ["**Offline demonstration data**: recorded items were re-dated; do not use this as a benchmark result.", ""]
    lines += _hold_lines(st, card.hold)
    lines += _kept_lines(card.kept)
    lines += _open_lines(card.open_track)
    lines += ["## Errata", "", *leak_erratum(card.history)]
    if card.retractions:
        lines += [f"{len(card.retractions)} question(s) retracted and left out of this revision (all languages, the",
                  "predictions and the report): see `../ERRATA.md`.", ""]
        lines += [f"- qid {r.qid} ({r.retracted_at.date().isoformat()}): {_cell(r.reason)}" for r in card.retractions]
        lines.append("")
    elif not card.held_retractions and not leak_erratum(card.history):
        lines += ["None.", ""]
    lines += _held_note(card.held_retractions)
    lines += [
        "## Files", "",
        "- `hf/`: this folder; `datasets.load_dataset('<folder>/hf', 'qa_<lang>')` (validation and test) and",
        "  `'docs_<lang>'` (the documents, split `train`)",
        "- `manifest.json`: the frozen snapshot's manifest (counts, targets, sha256 of every frozen file)",
        "- `report/`: " + ("Table 2 (`table2.csv`), language pairs (`pairs.csv`), Learn (`learn.csv`), `metrics.json`, "
                           "heatmaps and `report.md`, computed from the stored results without the retracted questions"
                           if card.has_report else "not yet (the GPU jobs have not all finished)"),
        f"- `predictions/`: {card.predictions} file(s), every job's answer to every published question per variant and"
        " scorer (`predicted` is empty when no letter was read; `raw` the generated text)",
        *([f"- `open_predictions/`: {card.open_predictions} file(s), every job's answer to every published open question"
           " per variant: the answer as stored, the normaliser's `verdict`, its `reason`, `answer_lang` and"
           " `other_language` (answered in another language: never right); then the jury's: `jury_status` (graded,"
           " failed or not graded), its majority `jury_verdict` (CORRECT, INCORRECT, NOT_ATTEMPTED or UNDECIDED; empty"
           " where not graded, never guessed), each judge's vote (`jury_votes`), `jury_prompt_version` and"
           " `jury_cost_usd`"] if card.open_predictions else []),
        f"- `jobs/`: {card.jobs} job config(s): strategy, LoRA settings, seeds, the job's summary and library versions",
        f"- `adapters/`: {card.adapters} LoRA adapter(s) of the best epoch",
        "- `publish.json`: this revision's state; `SHA256SUMS`: the sha256 of every file of this revision",
        "",
        "## Hashes", "",
        f"- content sha256 of the frozen snapshot: `{m.content_sha256}`",
        f"- sha256 of its `manifest.json` (which lists the sha256 of every frozen file): `{card.manifest_sha256}`",
        f"- state of this publish revision: `{st.key}`",
        "",
        "## Revisions", "",
        *[f"- revision {r.revision}: commit `{r.commit_oid}` ({r.committed_at.date().isoformat()}"
          + (", test split held" if r.held else "") + (f", {r.retracted} retracted" if r.retracted else "") + ")"
          for r in card.history],
        f"- revision {card.revision}: this commit",
        "",
    ]
    lines += _licences(card.sources)
    lines += _citation(m.snapshot_id, m.content_sha256)
    return front_matter(configs, languages=m.languages, pretty_name=f"clkt {m.snapshot_id}") + "\n".join(lines)


def render_repo_card(repo: str, entries: Sequence[RepoEntry], configs: Sequence[Config], *, languages: Sequence[str],
                     sources: Sequence[str]) -> str:
    """The repo's `README.md`: every published snapshot, what is held and until when, how to load each config."""
    first = configs[0].name if configs else "<snapshot id>-qa_<lang>"
    lines = [
        f"# {repo}: a live benchmark of cross-lingual knowledge transfer", "",
        "Each period clkt freezes a snapshot of fresh, verified multiple-choice questions about real-world entities",
        "that the target models were probed not to know, and publishes it here with its report, every model's",
        "answer to every question, and the configuration of every job, so that each score can be reproduced.", "",
        "## Snapshots", "",
        "| snapshot | period | publish revision | test split | retracted | report |", "|---|---|---:|---|---:|---|",
        *[f"| `{e.snapshot_id}` | {e.period or '?'} | {e.revision or '?'} | {_cell(e.hold)} | {e.retracted} | "
          f"{'yes' if e.report else 'not yet'} |" for e in entries],
        "",
        "## Held back", "",
        "The newest snapshots are held back: their questions and answers (both splits), documents, predictions and",
        "adapters are in no file of this repo, so that they do not leak into the pretraining data of the next",
        "models; each is released in one new commit when enough newer snapshots are frozen (the table says until",
        "when).", "",
        "## Loading", "",
        "```python", "import datasets", f'ds = datasets.load_dataset("{repo}", "{first}")', "```", "",
        "Configs: `<snapshot id>-qa_<lang>` (validation, test), `<snapshot id>-docs_<lang>` (train: the documents),",
        "`<snapshot id>-predictions` (every job's answers). Each snapshot's folder has its own card",
        "(`snapshots/<id>/hf/README.md`).", "",
        "## Errata", "", "Every retraction, with its reason and date: `ERRATA.md`.", "",
    ]
    lines += _licences(sources)
    lines += _citation(None, None)
    return front_matter(configs, languages=languages or ["en"], pretty_name=f"clkt: {repo}") + "\n".join(lines)

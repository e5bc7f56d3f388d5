"""Submitted result packs on the leaderboard (`clkt submit`, `storage.submissions`): rows marked **submitted** beside
the rows **run here**, pooled by the same machinery (`clkt.report.leaderboard`).

A submitted pack's answers are read as submitted (its predictions.jsonl) and scored here again, each letter
against this store's answer key of the snapshot (`clkt.snapshots.content.load_item_refs`): the pack's own
`correct` flags and metrics.json are never read. Its answers become result packs (`storage.result_packs`) of
synthetic jobs (negative ids, one per train language), keyed by this store's question and entity rows, so they pool
over the window's snapshots and take the same entity-bootstrap draws as the rows run here. A pack's answers are
scored once per process (by their bytes, the snapshot's key and the scorer asked for), at intake (`prime`) or at the
first board that reads them.

One submitted row per model identity (target name, model, revision, weights sha256) x strategy x scorer, pooled
over the snapshots it has packs of; its label is `<name> (submitted)` (with the identity's first 8 hex digits when
one name has several identities in the window). Of several packs of one identity, strategy and snapshot the latest
submitted counts (a note says so). A submitted model declared its cutoff and was checked against the snapshot's
window at intake. A pack that carried its model's probe answers (`clkt evaluate --probe`) had them judged at intake
(`clkt.packs.probe`): the entities its model knew (`metrics.probe.excluded`, public ids) are its row's exclusions on
that snapshot, applied as a local target's are; a pack without them excludes nothing and its row is labelled "not
probed here" (`probe_label`). A pack that carried open answers (format version 2) had them scored at intake by this
service's normaliser (`clkt.packs.open_answers`; the pack's verdicts and figures never read): those verdicts (the
test split's graded ones) become packs of the open scorer (`open-normaliser`) on the same synthetic jobs, keyed by
the public open qid and this store's entity row as a job's own open packs are (`storage.open_results`), so the board
shows the submitted row's open figures in the open track's section, apart from its MCQ rows. A row is marked
**reproduced** when `clkt submit --reproduce` re-ran its packs here with letter agreement at or above the pack's
threshold (`REPRODUCED_AT`), **flagged** when below, **not reproduced** when never re-run. Its open row (the
`open-normaliser` layer) is **reproduced** only when every pack of it that carried open answers was re-run with them
re-generated and their verdicts compared (`Reproduction.open`, `clkt.packs.reproduce`) and every re-run of its packs
held, its agreement the open verdicts'; **not reproduced** while one was not (a re-run that compared the letters
only, or a pack that declared no prompt version); **flagged** when a re-run failed. The open jury's rows are never
reproduced (a re-run grades with the normaliser only).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from clkt.openqa.results import OPEN_SCORER
from clkt.report.kept_figures import ScoredPacks, decode_scored, encode_scored, scored_key
from clkt.report.leaderboard_data import Leaderboard, LeaderRow, Reproduction, SubmittedPackInfo
from clkt.report.open_board import is_open
from clkt.report.probed import ProbeVerdicts, probe_label
from clkt.snapshots.content import load_item_refs
from clkt.snapshots.select import ItemRef
from storage.figure_cache import read_figure_cache
from storage.leaderboard import WindowData, WindowJob, WindowSnapshot, retracted_questions
from storage.open_results import GRADES
from storage.result_packs import PackedAnswer, ResultPackRecord, build_packs, without_questions
from storage.submissions import SubmissionRecord, list_submissions, submissions_answers, submissions_open_answers

if TYPE_CHECKING:
    from storage.engine import Session

__all__ = [
    "REPRODUCED_AT",
    "RUN_HERE",
    "SUBMITTED",
    "SubmittedRuns",
    "annotate",
    "board_packs",
    "pack_info",
    "prime",
    "submitted_runs",
]

RUN_HERE = "run here"
SUBMITTED = "submitted"
REPRODUCED_AT = 0.95  # letter agreement of a re-run at or above which a submitted pack counts as reproduced

Identity = tuple[str, str, str | None, str | None]  # target name, model, revision, weights sha256
RESCORED_KEEP = 1024  # packs whose rescored answers are kept in process (the least recently used goes first)


class _Rescored:
    """A pack's answers scored against a snapshot's key, as result packs, by their `scored_key` (the pack's sha256,
    the key's digest, the scorer): parsed and scored once per process, not at every board (bounded, least recently
    used out; thread-safe)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._got: OrderedDict[str, ScoredPacks] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> ScoredPacks | None:
        with self._lock:
            got = self._got.get(key)
            if got is not None:
                self._got.move_to_end(key)
            return got

    def put(self, key: str, value: ScoredPacks) -> None:
        with self._lock:
            self._got[key] = value
            while len(self._got) > self._size:
                self._got.popitem(last=False)


_RESCORED = _Rescored(RESCORED_KEEP)


@dataclass(frozen=True, kw_only=True)
class SubmittedRuns:
    """The window's submitted packs as synthetic jobs and result packs, and each row's provenance."""

    jobs: tuple[WindowJob, ...] = ()
    packs: tuple[ResultPackRecord, ...] = ()
    info: dict[tuple[str, str], list[SubmittedPackInfo]] = field(default_factory=dict)  # (label, strategy) -> packs
    names: dict[str, str] = field(default_factory=dict)  # label -> the target's name in its packs
    notes: list[str] = field(default_factory=list)
    # (snapshot id, label) -> the store's entity rows its probed packs' models knew (`clkt.packs.probe`)
    exclusions: dict[tuple[str, str], frozenset[int]] = field(default_factory=dict)
    fresh: dict[str, bytes] = field(default_factory=dict)  # packs scored by this read, for the figure cache (key -> payload)

    def merged(self, data: WindowData) -> WindowData:
        """`data` with the submitted jobs and packs added, valid on every snapshot of the window, with the exclusions
        their probes made."""
        if not self.jobs:
            return data
        ready = {(s.id, label) for s in data.snapshots for label in self.names}
        return WindowData(snapshots=data.snapshots, ready=data.ready | ready, exclusions={**data.exclusions, **self.exclusions},
                          jobs=data.jobs + self.jobs, packs=data.packs + self.packs, public_entities=data.public_entities)


def _identity(r: SubmissionRecord) -> Identity:
    return (r.target_name, r.model, r.model_revision, r.weights_sha256)


def _labels(records: Sequence[SubmissionRecord]) -> dict[Identity, str]:
    by_name: dict[str, set[Identity]] = defaultdict(set)
    for r in records:
        by_name[r.target_name].add(_identity(r))
    out: dict[Identity, str] = {}
    for name, idents in by_name.items():
        for ident in idents:
            if len(idents) == 1:
                out[ident] = f"{name} (submitted)"
                continue
            short = ident[3] or ident[2] or hashlib.sha256(ident[1].encode()).hexdigest()
            out[ident] = f"{name} (submitted, {short[:8]})"
    return out


def pack_info(r: SubmissionRecord, reproduction: Reproduction | None = None) -> SubmittedPackInfo:
    strategy = r.manifest.get("strategy", {}) if isinstance(r.manifest.get("strategy"), dict) else {}
    env = r.manifest.get("environment", {})
    return SubmittedPackInfo(
        pack_sha256=r.pack_sha256, snapshot_id=r.snapshot_id, target=r.target_name, model=r.model,
        model_revision=r.model_revision, weights_sha256=r.weights_sha256, kind=r.kind, cutoff=r.cutoff.isoformat(),
        strategy=r.strategy, train_langs=list(r.train_langs), clkt_version=r.clkt_version, format_version=r.format_version,
        environment=dict(env) if isinstance(env, dict) else {}, overridden=dict(strategy.get("overridden") or {}),
        submitted_at=r.submitted_at.isoformat(), claims_match=r.claims_match,
        reproduction=reproduction if reproduction is not None else _reproduction(r), probe=_probe(r),
        open_answers=isinstance(r.metrics.get("open"), dict),
    )


def _probe(r: SubmissionRecord) -> ProbeVerdicts | None:
    raw = r.metrics.get("probe")
    return ProbeVerdicts.model_validate(raw) if isinstance(raw, dict) else None


def _excluded(r: SubmissionRecord, items: Sequence[ItemRef]) -> frozenset[int]:
    """The store's entity rows of the entities `r`'s probe excluded (none without a probe)."""
    probe = _probe(r)
    if probe is None or not probe.excluded:
        return frozenset()
    known = set(probe.excluded)
    return frozenset(it.entity_row for it in items if it.entity_id in known)


def _reproduction(r: SubmissionRecord) -> Reproduction | None:
    raw = r.reproduction
    return Reproduction.model_validate(raw) if raw else None


Refs = dict[int, tuple[int, int, str]]  # public qid -> question row, entity row, answer letter (test items)


def _refs(items: Sequence[ItemRef]) -> Refs:
    return {it.qid: (it.question_row, it.entity_row, it.answer_letter) for it in items if it.split == "test"}


def _digest(refs: Refs) -> str:
    return hashlib.sha256(json.dumps(sorted(refs.items())).encode()).hexdigest()


def prime(blob: bytes, items: Sequence[ItemRef]) -> tuple[str, bytes]:
    """Score a pack's stored answers (`blob`, as `storage.submissions` keeps them) against the snapshot's key
    (`items`) as the board reads them, when the pack is taken in (`clkt.packs.intake`): kept in this process, and
    returned as the figure cache's key and payload (`clkt.report.kept_figures`) for the intake to store with the
    pack, so any later process reads them instead of scoring again."""
    refs = _refs(items)
    key = scored_key(_sha(blob), _digest(refs), None)
    scored = _score(blob, refs, None)
    _RESCORED.put(key, scored)
    return key, encode_scored(scored)


def _score(blob: bytes, refs: Refs, scorer: str | None) -> ScoredPacks:
    return {train: build_packs(0, answers) for train, answers in _answers(blob, refs, scorer).items()}


def _answers(blob: bytes, refs: Refs, scorer: str | None) -> dict[str, list[PackedAnswer]]:
    """Per train language, the pack's answers scored against this store's key (`refs`: public qid -> question row,
    entity row, answer letter); answers to a question the snapshot no longer holds are left out."""
    out: dict[str, list[PackedAnswer]] = defaultdict(list)
    lines = [line for line in gzip.decompress(blob).splitlines() if line.strip()]
    for row in json.loads(b"[" + b",".join(lines) + b"]"):  # one parse of every line (the lines were checked at intake)
        ref = refs.get(int(row["qid"]))
        if ref is None or (scorer is not None and row["scorer"] != scorer):
            continue
        question, entity, letter = ref
        out[str(row["train_lang"])].append(PackedAnswer(
            question_id=question, entity_id=entity, lang=str(row["lang"]), variant=str(row["variant"]),
            scorer=str(row["scorer"]), correct=row.get("predicted") == letter,
        ))
    return out


def _open_answers(blob: bytes | None, items: Sequence[ItemRef]) -> dict[str, list[PackedAnswer]]:
    """Per train language, a pack's open answers as scored at intake (`blob`: `clkt.packs.open_answers.encode_scored`'s
    JSON lines): the test split's graded ones, keyed by the public open qid and this store's entity row (an answer
    about an entity the store no longer holds is left out)."""
    if not blob:
        return {}
    rows = {it.entity_id: it.entity_row for it in items}
    out: dict[str, list[PackedAnswer]] = defaultdict(list)
    for line in gzip.decompress(blob).splitlines():
        if not line.strip():
            continue
        a = json.loads(line)
        entity = rows.get(int(a["entity_id"]))
        if a["split"] != "test" or a["verdict"] not in GRADES or entity is None:
            continue
        out[str(a["train_lang"])].append(PackedAnswer(
            question_id=int(a["qid"]), entity_id=entity, lang=str(a["lang"]), variant=str(a["variant"]),
            scorer=str(a["scorer"]), correct=a["verdict"] == "CORRECT"))
    return out


def _latest(records: Sequence[SubmissionRecord], notes: list[str]) -> list[SubmissionRecord]:
    """Of several packs of one identity, strategy and snapshot, the latest submitted (`records`: oldest first)."""
    latest: dict[tuple[Identity, str, str], SubmissionRecord] = {}
    for r in records:
        key = (_identity(r), r.strategy, r.snapshot_id)
        if key in latest:
            notes.append(f"submitted {r.target_name} on {r.snapshot_id} ({r.strategy}): pack {r.pack_sha256[:12]} "
                         f"replaces the earlier pack {latest[key].pack_sha256[:12]} on the board")
        latest[key] = r
    return sorted(latest.values(), key=lambda r: (r.submitted_at, r.pack_sha256))


async def submitted_runs(
    session: Session, snapshots: Sequence[WindowSnapshot], *, targets: Collection[str] | None = None,
    strategies: Collection[str] | None = None, scorer: str | None = None,
) -> SubmittedRuns:
    """The window's submitted packs (of the given targets / strategies / result scorer when named), as jobs and packs
    the leaderboard pools (see the module docstring)."""
    records = await list_submissions(session, snapshot_ids=[s.id for s in snapshots])
    records = [r for r in records if (targets is None or r.target_name in targets)
               and (strategies is None or r.strategy in strategies)]
    if not records:
        return SubmittedRuns()
    notes: list[str] = []
    records = _latest(records, notes)
    labels = _labels(records)
    keys: dict[str, dict[int, tuple[int, int, str]]] = {}
    items: dict[str, list[ItemRef]] = {}
    exclusions: dict[tuple[str, str], frozenset[int]] = defaultdict(frozenset)
    jobs: list[WindowJob] = []
    packs: list[ResultPackRecord] = []
    info: dict[tuple[str, str], list[SubmittedPackInfo]] = defaultdict(list)
    digests: dict[str, str] = {}
    for r in records:
        if r.snapshot_id not in keys:
            items[r.snapshot_id] = await load_item_refs(session, r.snapshot_id)
            keys[r.snapshot_id] = _refs(items[r.snapshot_id])
            digests[r.snapshot_id] = _digest(keys[r.snapshot_id])
    blobs = await submissions_answers(session, [r.pack_sha256 for r in records])
    cache = {r.pack_sha256: scored_key(_sha(blobs.get(r.pack_sha256, b"")), digests[r.snapshot_id], scorer) for r in records}
    scored, fresh = await _scored_packs(session, records, cache, keys, blobs, scorer)
    opened = await submissions_open_answers(session, [r.pack_sha256 for r in records]) if scorer in (None, OPEN_SCORER) else {}
    retracted = await retracted_questions(session, sorted(keys))  # left out as from the packs run here
    for r in records:
        label = labels[_identity(r)]
        exclusions[(r.snapshot_id, label)] |= _excluded(r, items[r.snapshot_id])
        open_packs = _open_answers(opened.get(r.pack_sha256), items[r.snapshot_id])
        for train in sorted(set(scored[r.pack_sha256]) | set(open_packs)):
            job_id = -(len(jobs) + 1)
            jobs.append(WindowJob(id=job_id, snapshot_id=r.snapshot_id, target=label, strategy=r.strategy, train_lang=train))
            packs.extend(without_questions(replace(p, job_id=job_id), retracted.get(r.snapshot_id, frozenset()))
                         for p in scored[r.pack_sha256].get(train, []))
            packs.extend(build_packs(job_id, open_packs.get(train, [])))
        info[(label, r.strategy)].append(pack_info(r))
    return SubmittedRuns(jobs=tuple(jobs), packs=tuple(packs), info=dict(info),
                         names={label: ident[0] for ident, label in labels.items()}, notes=notes,
                         exclusions={k: v for k, v in exclusions.items() if v}, fresh=fresh)


async def _scored_packs(
    session: Session, records: Sequence[SubmissionRecord], cache: dict[str, str], keys: dict[str, Refs],
    blobs: dict[str, bytes], scorer: str | None,
) -> tuple[dict[str, ScoredPacks], dict[str, bytes]]:
    """Each pack's scored answers (by pack sha256): kept in this process, else in the figure cache (read in one
    query), else scored now; and the payloads scored now, by their key, for the figure cache."""
    got = {sha: p for sha, k in cache.items() if (p := _RESCORED.get(k)) is not None}
    stored = await read_figure_cache(session, [k for sha, k in cache.items() if sha not in got])
    fresh: dict[str, bytes] = {}
    for r in records:
        k = cache[r.pack_sha256]
        if r.pack_sha256 in got:
            continue
        p = decode_scored(stored[k]) if k in stored else None
        if p is None:  # not kept yet (or not decodable): scored from the stored answers
            p = _score(blobs.get(r.pack_sha256, b""), keys[r.snapshot_id], scorer)
            fresh[k] = encode_scored(p)
        _RESCORED.put(k, p)
        got[r.pack_sha256] = p
    return got, fresh


def _sha(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def _verified(packs: Sequence[SubmittedPackInfo], *, opened: bool = False) -> tuple[str, float | None]:
    """A row's mark and agreement from its packs' re-runs: the letters', or (`opened`: its open row) the open
    verdicts' of the packs that carried open answers, each counted only where its re-run compared them."""
    runs = [p.reproduction for p in packs if p.reproduction is not None]
    if opened:
        mine = [p for p in packs if p.open_answers]
        counts = [(o.agreed, o.checked) for p in mine if p.reproduction is not None and (o := p.reproduction.open)]
        complete = bool(mine) and len(counts) == len(mine)
    else:
        counts = [(r.agreed, r.checked) for r in runs]
        complete = len(runs) == len(packs)
    checked = sum(n for _, n in counts)
    rate = sum(a for a, _ in counts) / checked if checked else None
    if not checked or not complete:
        return ("flagged" if any(not r.reproduced for r in runs) else "not reproduced"), rate
    return ("reproduced" if all(r.reproduced for r in runs) else "flagged"), rate


def annotate(rows: Sequence[LeaderRow], runs: SubmittedRuns) -> list[LeaderRow]:
    """The rows, each submitted one marked with its track, its packs' provenance and whether it was reproduced (its
    open row by its re-runs' open verdicts, see the module docstring; the open jury's never: a re-run grades with the
    normaliser only, so it is listed apart and never ranked, `clkt.report.verified_ranks`)."""
    out: list[LeaderRow] = []
    for r in rows:
        packs = runs.info.get((r.target, r.strategy))
        if packs is None:
            out.append(r)
            continue
        if is_open(r.scorer) and r.scorer != OPEN_SCORER:  # a re-run compares the normaliser's verdicts, not a jury's
            verified, rate = "not reproduced", None
        else:
            verified, rate = _verified(packs, opened=is_open(r.scorer))
        out.append(r.model_copy(update={"track": SUBMITTED, "submissions": packs, "verified": verified, "agreement": rate,
                                        "probe": probe_label([p.probe for p in packs])}))
    return out


def board_packs(board: Leaderboard) -> list[SubmittedPackInfo]:
    """The submitted packs of the board's rows, once each, oldest first (the page's and the CLI's provenance table)."""
    packs = {p.pack_sha256: p for r in board.rows for p in r.submissions}
    return sorted(packs.values(), key=lambda p: (p.submitted_at, p.pack_sha256))

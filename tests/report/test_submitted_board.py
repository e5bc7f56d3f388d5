"""A submitted pack holding the very answers of a job run here pools to the very same figures, intervals included
(the same entity-bootstrap draws), in a row marked submitted beside the rows run here; its letters, not its flags,
are what count."""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

from clkt.report.submitted import REPRODUCED_AT
from clkt.report.window import LeaderboardQuery, load_leaderboard
from clkt.snapshots.ids import stable_qid
from storage.engine import Store
from storage.gpu_jobs import results_for_snapshot
from storage.submissions import NewSubmission, add_submission
from tests.report._window_store import LANGS, SPEC, WindowStore, seed_window_store

PERIOD = "2025-01"


async def _items(store: Store, sid: str) -> dict[int, int]:
    """The snapshot's SnapshotItem rows (every question a test one, answer A: the window store's key); store
    question row -> public qid."""
    from sqlmodel import col, select

    from storage.models import Entity, Question, SnapshotItem

    out: dict[int, int] = {}
    async with store.transaction() as s:
        have = (await s.execute(select(SnapshotItem).where(col(SnapshotItem.snapshot_id) == sid))).first() is not None
        rows = (await s.execute(select(Question, Entity).join(Entity, col(Entity.id) == col(Question.entity_id)))).all()
        for q, e in rows:
            if e.external_id.startswith(f"{sid}/") and not have:
                s.add(SnapshotItem(snapshot_id=sid, question_id=q.id, entity_id=e.id, split="test",
                                   option_order=[0, 1, 2, 3], answer_letter="A"))
            if e.external_id.startswith(f"{sid}/"):
                out[q.id] = stable_qid(e.source, e.external_id, q.slot)
    return out


async def _submit_copy_of(store: Store, info: WindowStore, target: str, *, name: str, flip_flags: bool = False) -> None:
    """A pack of `target`'s stored answers on the window's first snapshot, submitted as `name`."""
    sid = info.snapshots[PERIOD]
    public = await _items(store, sid)
    async with store.session() as s:
        results = [r for r in await results_for_snapshot(s, sid) if r.target_model == target and r.split == "test"]
    lines = [json.dumps({"train_lang": r.train_lang, "scorer": r.scorer, "variant": r.variant, "lang": r.lang,
                         "qid": public[r.question_id], "entity_id": 0, "domain": "movies", "predicted": r.predicted,
                         "correct": (not r.correct) if flip_flags else r.correct}) for r in results]
    async with store.transaction() as s:
        await add_submission(s, NewSubmission(
            pack_sha256=name.ljust(64, "0"), snapshot_id=sid, target_name=name, model=f"org/{name}", model_revision="abc123",
            weights_sha256=None, kind="instruct", cutoff=date(2024, 1, 1), strategy="cpt-lora", train_langs=["en", "fr"],
            scorers=sorted({r.scorer for r in results}), format_version=1, clkt_version="0.1.0", predictions=len(lines),
            claims_match=True, claims_note="", metrics={}, manifest={"environment": {"torch": "2.5"}},
            answers=gzip.compress(("\n".join(lines) + "\n").encode()),
        ))


async def test_a_copy_of_a_job_run_here_pools_to_the_same_figures(tmp_path: Path) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}") as store:
        info = await seed_window_store(store)
        await _submit_copy_of(store, info, "alpha", name="elsewhere")
        await _submit_copy_of(store, info, "beta", name="liar", flip_flags=True)  # every `correct` flag a lie
        q = LeaderboardQuery(spec=SPEC, period_from=PERIOD, period_to=PERIOD, languages=LANGS, samples=200, unverified=True)
        board = await load_leaderboard(store, q)
    rows = {(r.target, r.scorer): r for r in board.rows}
    for here, there in (("alpha", "elsewhere (submitted)"), ("beta", "liar (submitted)")):
        for scorer in ("generate", "option-loglik") if here == "alpha" else ("generate",):
            a, b = rows[(here, scorer)], rows[(there, scorer)]
            assert (a.track, b.track) == ("run here", "submitted")
            assert b.metrics == a.metrics and b.learn == a.learn and b.pairs == a.pairs  # intervals too
            assert (b.questions, b.entities, b.learned_langs) == (a.questions, a.entities, a.learned_langs)
            assert b.verified == "not reproduced" and b.agreement is None
            assert [p.model_revision for p in b.submissions] == ["abc123"] and b.submissions[0].environment == {"torch": "2.5"}
            assert a.submissions == [] and a.verified == ""
    assert 0 < REPRODUCED_AT <= 1


async def test_a_pack_is_scored_again_when_its_answers_differ(tmp_path: Path) -> None:
    """Submitted answers are scored once per process by their bytes and the snapshot's key: a pack of the same name
    and sha256 label with other answers (another store) is scored afresh, never read from the first."""
    boards = {}
    for target in ("alpha", "beta"):
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / f'{target}.db'}") as store:
            info = await seed_window_store(store)
            await _submit_copy_of(store, info, target, name="same")
            q = LeaderboardQuery(spec=SPEC, period_from=PERIOD, period_to=PERIOD, languages=LANGS, samples=200,
                                 unverified=True)
            boards[target] = {(r.target, r.scorer): r for r in (await load_leaderboard(store, q)).rows}
    for target, rows in boards.items():
        assert rows[("same (submitted)", "generate")].metrics == rows[(target, "generate")].metrics

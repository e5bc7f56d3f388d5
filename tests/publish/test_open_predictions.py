"""The open track's answers in the predictions exports (issue 47): a publish revision's `open_predictions/<job>.jsonl`
and the leaderboard's `--open-predictions` CSV carry every stored open answer (the test split's; the entities a
target recognised left out of the leaderboard's, as from its MCQ file), read back equal to the `open_result` rows:
the answer as stored, the verdict, its reason, the language identified, `other_language`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from clkt.openqa.frozen import load_open_questions
from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.open_predictions import OPEN_CSV_COLUMNS, OpenPrediction, open_prediction, write_open_predictions
from clkt.report.open_verdicts import JuryColumns
from clkt.snapshots.content import load_item_refs
from storage.engine import Store
from storage.enums import SnapshotTargetStatus
from storage.open_results import open_results_for_snapshot
from storage.publish_revisions import predictions_for_snapshot
from storage.targets import add_exclusions, record_snapshot_target
from tests.fakes.hub_server import FakeHub
from tests.publish._open import TARGET, store_open_answers
from tests.publish.conftest import REPO, publish_now, publish_settings, seed_open_snapshot


def _test_rows_of(rows: list[OpenPrediction]) -> list[OpenPrediction]:
    return sorted((r for r in rows if r.split == "test"), key=lambda r: r.model_dump_json())


async def test_a_publish_revision_carries_every_open_answer_as_stored(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, hold_back_periods=0)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await store_open_answers(store, sid, odd=True)  # an odd open row costs no MCQ row
    res = await publish_now(store, settings, sid)
    assert res.error is None and res.outcome is not None, res
    tree = hub.tree(REPO)
    files = sorted(p for p in tree if p.startswith(f"snapshots/{sid}/open_predictions/"))
    assert [p.rsplit("/", 1)[1] for p in files] == [f"{TARGET}__cpt-lora__en.jsonl", f"{TARGET}__cpt-lora__fr.jsonl"]
    published = [OpenPrediction.model_validate(json.loads(line)) for p in files
                 for line in tree[p].decode().splitlines()]  # extra="forbid": no field more, none less
    async with store.session() as s:
        stored = [open_prediction(r) for r in await open_results_for_snapshot(s, sid)]
    assert len(stored) > len(published) > 0  # the control answers are stored, never published
    assert _test_rows_of(published) == _test_rows_of(stored)
    assert {r.split for r in published} == {"test"}
    assert {r.reason for r in published} >= {"alias", "other_language", "no alias matched"}
    assert any(r.other_language and r.answer_lang == "en" and not r.correct for r in published)
    assert sum(r.verdict == "MAYBE" and r.answer_lang is None for r in published) == 1
    async with store.session() as s:
        mcq = await predictions_for_snapshot(s, sid)
    assert sum(len(body.decode().splitlines()) for p, body in tree.items()
               if p.startswith(f"snapshots/{sid}/predictions/")) == len(mcq) > 0
    card = tree[f"snapshots/{sid}/hf/README.md"].decode()
    assert "`open_predictions/`: 2 file(s)" in card


def _read_csv(path: Path) -> list[OpenPrediction]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == OPEN_CSV_COLUMNS
    out = []
    for cells in rows[1:]:
        values: dict[str, object] = dict(zip(OPEN_CSV_COLUMNS, cells, strict=True))
        values.pop("snapshot_id"), values.pop("job_id")
        values["answer_lang"] = values["answer_lang"] or None
        values = {k: v for k, v in values.items() if v != "" or k not in JuryColumns.model_fields}  # not graded: blank
        out.append(OpenPrediction.model_validate(values))
    return out


async def test_the_leaderboards_open_predictions_are_the_stored_rows_less_the_recognised(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    frozen = await store_open_answers(store, sid)
    asked = {q.entity_id for q in load_open_questions(frozen)}
    async with store.transaction() as s:
        refs = await load_item_refs(s, sid)
        await record_snapshot_target(s, snapshot_id=sid, target=TARGET, status=SnapshotTargetStatus.ready,
                                     entities=len({it.entity_id for it in refs}))
        movie = next(it for it in refs if it.entity_id in asked)
        await add_exclusions(s, snapshot_id=sid, target=TARGET, entities=[(movie.entity_row, "recognised")])
    path = tmp_path / "open.csv"
    n = await write_open_predictions(store, LeaderboardQuery(spec=settings.spec.name), path)
    got = _read_csv(path)
    async with store.session() as s:
        stored = [open_prediction(r) for r in await open_results_for_snapshot(s, sid)]
    kept = [r for r in stored if r.entity_id != movie.entity_id]
    assert len(stored) > len(kept) > 0 and n == len(got)
    assert _test_rows_of(got) == _test_rows_of(kept) and len(got) == len(_test_rows_of(kept))
    assert not (tmp_path / "open.csv.part").exists()
    assert await write_open_predictions(store, LeaderboardQuery(spec=settings.spec.name, scorer="option-loglik"), path) == 0

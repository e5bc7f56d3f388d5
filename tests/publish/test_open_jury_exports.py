"""The jury's verdicts in the open predictions exports (issue 47): the leaderboard's `--open-predictions` CSV and a
publish revision's `open_predictions/<job>.jsonl` end with the jury's columns (`clkt.report.open_verdicts`): the
majority grade and each judge's vote where the jury graded the answer, blank with `jury_status` saying why where it
did not (pending, or failed: never guessed), and the columns the exports always had unchanged, in their order."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlmodel import col, select

from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_predictions import OPEN_CSV_COLUMNS, OpenPrediction, write_open_predictions
from clkt.report.open_verdicts import FAILED, GRADED, NOT_GRADED, UNDECIDED
from clkt.report.window import PREDICTION_COLUMNS, write_predictions
from storage.engine import Store
from storage.models import OpenResult
from storage.open_judgements import JURY, GradedAnswer, Judgement, write_judgements
from tests.fakes.hub_server import FakeHub
from tests.publish._open import store_open_answers
from tests.publish.conftest import REPO, publish_now, publish_settings, seed_open_snapshot
from tests.publish.test_open_leaderboard import _ready

# the columns the open export had before the jury's (a consumer's reader keeps working): the same, in this order
OLD_OPEN_COLUMNS = ("snapshot_id", "job_id", "qid", "entity_id", "domain", "fact", "lang", "split", "model", "strategy",
                    "train_lang", "seed", "variant", "scorer", "verdict", "correct", "other_language", "answer_lang",
                    "answer", "reason")
JURY_COLUMNS = ("jury_status", "jury_verdict", "jury_votes", "jury_prompt_version", "jury_cost_usd")
MCQ_COLUMNS = ("snapshot_id", "qid", "lang", "target", "strategy", "job_id", "train_lang", "variant", "scorer", "entity_id",
               "split", "predicted", "correct", "store_question_id", "store_entity_id")
JUDGES = ("openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest", "vllm:Qwen/Qwen2.5-7B-Instruct")
SECRET = "sk-live-0123456789abcdef"  # what a provider's error could quote: never exported

Key = tuple[int, int, str, str]  # job, public open qid, language, variant


def _vote(judge: str, verdict: str | None) -> Judgement:
    return Judgement(judge=judge, verdict=verdict, prompt_version="open_judge.v2", reason=f"{judge} says so",
                     error=None if verdict else f"http 401: bad key {SECRET}", cost_usd=0.0002)


def _graded(answer_id: int, votes: tuple[str | None, ...], jury: str | None) -> GradedAnswer:
    cast = tuple(_vote(j, v) for j, v in zip(JUDGES, votes, strict=True))
    failed = sum(v is None for v in votes)
    return GradedAnswer(open_result_id=answer_id, votes=cast, jury=Judgement(
        judge=JURY, verdict=jury, prompt_version="open_judge.v2", reason="majority",
        error=f"{failed} of 3 votes failed: {SECRET}" if failed else None, cost_usd=0.0002 * len(votes)))


async def _judge(store: Store) -> dict[Key, tuple[str, str | None, tuple[str | None, ...]]]:
    """The jury grades the test answers of the first job but the Japanese ones (left pending): the first answer
    undecided (every vote given, no majority), the second failed (two votes failed: no verdict), the third a majority
    with one vote failed, the rest unanimous CORRECT; the expected status, verdict and votes per answer."""
    async with store.session() as s:
        answers = (await s.execute(select(OpenResult).where(col(OpenResult.split) == "test")
                                   .order_by(col(OpenResult.id)))).scalars().all()
    first_job = answers[0].job_id
    plan: list[tuple[tuple[str | None, ...], str | None, str]] = [
        (("CORRECT", "INCORRECT", "NOT_ATTEMPTED"), None, GRADED),
        (("CORRECT", None, None), None, FAILED),
        (("INCORRECT", "INCORRECT", None), "INCORRECT", GRADED),
    ]
    graded, expected = [], {}
    for a in answers:
        if a.job_id != first_job or a.lang == "ja":
            continue
        assert a.id is not None
        votes, jury, status = plan.pop(0) if plan else (("CORRECT",) * 3, "CORRECT", GRADED)
        graded.append(_graded(a.id, votes, jury))
        verdict = (jury or UNDECIDED) if status == GRADED else None
        expected[(a.job_id, int(a.open_qid), a.lang, a.variant)] = (status, verdict, votes if status == GRADED else ())
    async with store.transaction() as s:
        await write_judgements(s, graded, panel="p1")
    return expected


def _check(p: OpenPrediction, job_id: int, expected: dict[Key, tuple[str, str | None, tuple[str | None, ...]]]) -> None:
    status, verdict, votes = expected.get((job_id, p.qid, p.lang, p.variant), (NOT_GRADED, None, ()))
    assert (p.jury_status, p.jury_verdict) == (status, verdict)
    assert [(v.judge, v.verdict) for v in p.jury_votes] == list(zip(JUDGES, votes, strict=False))
    if status == NOT_GRADED:
        assert (p.jury_prompt_version, p.jury_cost_usd) == (None, None)
    else:
        assert p.jury_prompt_version == "open_judge.v2" and p.jury_cost_usd is not None and p.jury_cost_usd > 0


def _read(path: Path) -> list[tuple[int, OpenPrediction]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        values: dict[str, object] = {k: (v or None) for k, v in row.items()}
        job_id = int(str(values.pop("job_id")))
        values.pop("snapshot_id")
        values["jury_votes"] = json.loads(str(values["jury_votes"])) if values["jury_votes"] else ()
        values["reason"], values["answer"] = values["reason"] or "", values["answer"] or ""
        out.append((job_id, OpenPrediction.model_validate(values)))
    return out


async def test_the_csv_carries_the_jurys_verdict_where_it_graded_and_blank_where_not(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    await store_open_answers(store, sid)
    expected = await _judge(store)
    q = LeaderboardQuery(spec=settings.spec.name)
    path = tmp_path / "open.csv"
    n = await write_open_predictions(store, q, path)
    text = path.read_text(encoding="utf-8")
    header = tuple(text.splitlines()[0].split(","))
    assert header == OPEN_CSV_COLUMNS == (*OLD_OPEN_COLUMNS, *JURY_COLUMNS)  # the old columns first, unchanged
    assert SECRET not in text and "says so" not in text  # no judge's error or reason, so no credential it quoted
    got = _read(path)
    assert len(got) == n > len(expected) > 3
    statuses = [p.jury_status for _, p in got]
    assert {GRADED, FAILED, NOT_GRADED} <= set(statuses) and statuses.count(FAILED) == 1
    for job_id, p in got:
        _check(p, job_id, expected)
    graded = next(p for _, p in got if p.jury_verdict == "INCORRECT")
    assert [v.verdict for v in graded.jury_votes] == ["INCORRECT", "INCORRECT", None]  # the failed vote shown, as failed

    # --scorer open-jury: the answers the jury has a row of (graded or failed), nothing pending
    jury_only = await write_open_predictions(store, LeaderboardQuery(spec=settings.spec.name, scorer=JURY_SCORER), path)
    assert jury_only == len(expected) and {p.jury_status for _, p in _read(path)} == {GRADED, FAILED}

    # the MCQ predictions: the same columns as ever
    mcq = tmp_path / "mcq.csv"
    assert await write_predictions(store, q, mcq) > 0
    assert tuple(mcq.read_text(encoding="utf-8").splitlines()[0].split(",")) == PREDICTION_COLUMNS == MCQ_COLUMNS


async def test_a_publish_revision_carries_the_jurys_columns(
    store: Store, tmp_path: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    import datasets

    settings = publish_settings(tmp_path, hub.url, repo=REPO, hold_back_periods=0)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await store_open_answers(store, sid)
    expected = await _judge(store)
    res = await publish_now(store, settings, sid)
    assert res.error is None and res.outcome is not None, res
    tree = hub.tree(REPO)
    files = {p: body for p, body in tree.items() if p.startswith(f"snapshots/{sid}/open_predictions/")}
    rows = [json.loads(line) for body in files.values() for line in body.decode().splitlines()]
    assert rows and all(set(r) == set(OLD_OPEN_COLUMNS[2:]) | set(JURY_COLUMNS) for r in rows)  # canonical: keys sorted
    assert all(SECRET not in body.decode() for body in files.values())
    published = [OpenPrediction.model_validate(r) for r in rows]
    graded = [p for p in published if p.jury_status != NOT_GRADED]
    assert len(graded) == len(expected)  # the first job's graded and failed answers, each once
    assert sorted((p.qid, p.lang, p.variant, p.jury_status, p.jury_verdict) for p in graded) == sorted(
        (qid, lang, variant, status, verdict) for (_, qid, lang, variant), (status, verdict, _) in expected.items())
    assert "`jury_verdict`" in tree[f"snapshots/{sid}/hf/README.md"].decode()
    # the rows load in `datasets` though the jury's columns are blank in some and full in others
    local = tmp_path / "open_predictions"
    local.mkdir()
    for p, body in files.items():
        (local / p.rsplit("/", 1)[1]).write_bytes(body)
    ds = datasets.load_dataset("json", data_files=sorted(str(f) for f in local.iterdir()), cache_dir=str(tmp_path / "hf"))
    loaded = ds["train"]
    assert len(loaded) == len(published) and set(JURY_COLUMNS) <= set(loaded.column_names)
    assert sum(s == GRADED for s in loaded["jury_status"]) == sum(p.jury_status == GRADED for p in published)

"""issue 35 item 4: the audit covers the translations. `audit sample` draws every language (stratified by
language and domain, seeded), `audit score` reports precision per language with its Wilson interval, annotators
and agreement (stored; `snapshot show` displays it), refuses a form naming a language the snapshot lacks (nothing
stored), and `--retract-rejected` retracts the majority-rejected questions through the errata, idempotently."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlmodel import col
from typer.testing import CliRunner

from storage.engine import Store
from storage.enums import SnapshotStatus
from storage.models import Snapshot
from storage.retractions import retractions_of
from tests.cli.test_snapshot import _app, _fill, _rows
from tests.snapshots.factories import LANGS, make_settings


def _write(path: Path, rows: list[dict[str, str]]) -> str:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return str(path)


def _annotated(rows: list[dict[str, str]], wrong: set[int]) -> list[dict[str, str]]:
    return [{**r, "wrong_answer": "x" if i in wrong else "", "correct": "" if i in wrong else "1"}
            for i, r in enumerate(rows)]


def _retracted(url: str, snapshot_id: str) -> list[Any]:
    async def go() -> list[Any]:
        async with Store(url=url) as store, store.session() as s:
            return await retractions_of(s, [snapshot_id])

    return asyncio.run(go())


def test_audit_covers_every_language(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    cfg = ["--config", str(tmp_path / "clkt.toml")]
    url = settings.resolved_store_url
    app, run = _app(), CliRunner().invoke
    _fill(url, per_domain=1)
    _fill(url, per_domain=1, prefix="y")
    assert run(app, ["snapshot", "build", "--period", "2025-06", *cfg]).exit_code == 0
    (snap,), _ = _rows(url)

    sheet, again = tmp_path / "audit.csv", tmp_path / "again.csv"
    r = run(app, ["audit", "sample", snap.id, "--per-language", "6", "--seed", "7", "--out", str(sheet), *cfg])
    assert r.exit_code == 0 and "en 6" in r.output and "ja 6" in r.output, r.output
    rows = list(csv.DictReader(sheet.open()))
    assert [r_["language"] for r_ in rows] == [x for x in LANGS for _ in range(6)]
    for lang in LANGS:  # stratified: 6 pairs over 4 domains is 2+2+1+1, the same questions in every language
        mine = [r_ for r_ in rows if r_["language"] == lang]
        counts = sorted(sum(r_["domain"] == d for r_ in mine) for d in {r_["domain"] for r_ in rows})
        assert counts == [1, 1, 2, 2]
        assert [r_["qid"] for r_ in mine] == [r_["qid"] for r_ in rows[:6]]
    assert "[ja]" in sheet.with_suffix(".html").read_text()
    assert run(app, ["audit", "sample", snap.id, "--per-language", "6", "--seed", "7", "--out", str(again),
                     *cfg]).exit_code == 0
    assert again.read_bytes() == sheet.read_bytes()  # deterministic with a seed
    for bad, msg in ((["--per-language", "0"], "at least 1"), (["--language", "xx"], "no language xx")):
        r = run(app, ["audit", "sample", snap.id, *bad, "--out", str(tmp_path / "b.csv"), *cfg])
        assert r.exit_code == 2 and msg in r.output and not (tmp_path / "b.csv").exists(), r.output

    # two annotators: both reject ja row 0 (row 6), one rejects fr row 1 (row 13): a tie is no majority for
    # correct, so ja 5/6 and fr 5/6, en 6/6
    ja0 = 6
    files = [_write(tmp_path / "a.csv", _annotated(rows, {ja0, 13})), _write(tmp_path / "b.csv", _annotated(rows, {ja0}))]
    foreign = [dict(r_) for r_ in _annotated(rows, set())]
    foreign[0]["language"] = "de"
    r = run(app, ["audit", "score", _write(tmp_path / "de.csv", foreign), *cfg])
    assert r.exit_code == 2 and "de" in r.output and "not have" in r.output, r.output
    assert not _rows(url)[0][0].audit  # a bad form stores nothing

    r = run(app, ["audit", "score", *files, *cfg])
    assert r.exit_code == 0 and "Wilson" in r.output, r.output
    audit = _rows(url)[0][0].audit
    ja, fr, en = (audit["languages"][x] for x in ("ja", "fr", "en"))
    assert (ja["pairs"], ja["correct"], ja["annotators"]) == (6, 5, 2)
    assert ja["ci_low"] < 5 / 6 < ja["ci_high"] < 1 and fr["correct"] == 5 and en["correct"] == 6
    assert en["ci_high"] == 1.0 and round(en["ci_low"], 3) == 0.610  # Wilson 95 % for 6/6
    assert ja["agreement"]["method"] == "Cohen's kappa" and audit["ci_method"].startswith("Wilson")
    r = run(app, ["snapshot", "show", snap.id, *cfg])
    assert "per language" in r.output and "83.3%" in r.output, r.output
    r = run(app, ["audit", "score", _write(tmp_path / "de.csv", foreign), *cfg])
    assert r.exit_code == 2 and _rows(url)[0][0].audit == audit  # the stored audit stands

    assert _retracted(url, snap.id) == []
    r = run(app, ["audit", "score", *files, "--retract-rejected", *cfg])
    qids = sorted(int(rows[i]["qid"]) for i in (ja0, 13))
    out = r.output.replace("\n", "")
    assert r.exit_code == 0 and f"retracted 2 question(s) of {snap.id} the audit rejected: " in out, r.output
    assert all(str(q) in out for q in qids)
    recs = sorted(_retracted(url, snap.id), key=lambda x: x.qid)
    assert [x.qid for x in recs] == qids and all("human audit" in x.reason for x in recs)
    assert {x.qid: x.reason.rsplit("; ", 1)[1] for x in recs} == {int(rows[ja0]["qid"]): "ja)", int(rows[13]["qid"]): "fr)"}
    r = run(app, ["audit", "score", *files, "--retract-rejected", *cfg])
    out = r.output.replace("\n", "")
    assert r.exit_code == 0 and "retracted 0 question(s)" in out and "2 already retracted" in out, r.output
    assert len(_retracted(url, snap.id)) == 2


def _set_status(url: str, snapshot_id: str, status: SnapshotStatus) -> None:
    async def go() -> None:
        async with Store(url=url) as store, store.transaction() as s:
            await s.execute(update(Snapshot).where(col(Snapshot.id) == snapshot_id).values(status=status))

    asyncio.run(go())


def test_retract_rejected_is_all_or_nothing(tmp_path: Path) -> None:
    """A retraction refused (the snapshot not frozen) leaves no stored audit and no retraction; once the
    snapshot is frozen the same command stores both."""
    url = make_settings(tmp_path).resolved_store_url
    cfg = ["--config", str(tmp_path / "clkt.toml")]
    app, run = _app(), CliRunner().invoke
    _fill(url, per_domain=1)
    _fill(url, per_domain=1, prefix="y")
    assert run(app, ["snapshot", "build", "--period", "2025-06", *cfg]).exit_code == 0
    (snap,), _ = _rows(url)
    sheet = tmp_path / "audit.csv"
    assert run(app, ["audit", "sample", snap.id, "--per-language", "4", "--seed", "3", "--out", str(sheet), *cfg]).exit_code == 0
    rows = list(csv.DictReader(sheet.open()))
    files = [_write(tmp_path / "a.csv", _annotated(rows, {0}))]

    _set_status(url, snap.id, SnapshotStatus.building)
    r = run(app, ["audit", "score", *files, "--retract-rejected", *cfg])
    assert r.exit_code == 2 and "not frozen" in r.output, r.output
    assert not _rows(url)[0][0].audit and _retracted(url, snap.id) == []  # nothing stored

    _set_status(url, snap.id, SnapshotStatus.frozen)
    r = run(app, ["audit", "score", *files, "--retract-rejected", *cfg])
    assert r.exit_code == 0 and "retracted 1 question(s)" in r.output.replace("\n", ""), r.output
    assert _rows(url)[0][0].audit and [x.qid for x in _retracted(url, snap.id)] == [int(rows[0]["qid"])]

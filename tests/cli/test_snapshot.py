"""`clkt snapshot …` and `clkt audit …` through typer's runner on a real store."""

from __future__ import annotations

import asyncio
import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import typer
from sqlalchemy import select
from typer.testing import CliRunner

from clkt.cli.snapshot import register
from storage.engine import Store
from storage.models import GpuJob, Snapshot
from tests.snapshots.factories import fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def _fill(url: str, per_domain: int, prefix: str = "x") -> None:
    async def go() -> None:
        async with Store(url=url) as store:
            await fill_period(store, month_start=JUNE, per_domain=per_domain, prefix=prefix)

    asyncio.run(go())


def _rows(url: str) -> tuple[list[Snapshot], list[GpuJob]]:
    async def go() -> tuple[list[Snapshot], list[GpuJob]]:
        async with Store(url=url) as store, store.session() as s:
            snaps = list((await s.execute(select(Snapshot).order_by(Snapshot.built_at))).scalars().all())
            jobs = list((await s.execute(select(GpuJob))).scalars().all())
            return snaps, jobs

    return asyncio.run(go())


def test_snapshot_and_audit_commands(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    cfg = ["--config", str(tmp_path / "clkt.toml")]
    url = settings.resolved_store_url
    app, run = _app(), CliRunner().invoke
    _fill(url, per_domain=1)

    r = run(app, ["snapshot", "build", "--period", "2025-06", *cfg])
    assert r.exit_code == 1 and "under quota" in r.output and "movies" in r.output
    for bad in (["--period", "2025-13"], ["--period", "2025-06", "--spec", "nope"]):
        r = run(app, ["snapshot", "build", *bad, *cfg])
        assert r.exit_code == 2, r.output
    _fill(url, per_domain=1, prefix="y")
    r = run(app, ["snapshot", "build", "--period", "2025-06", *cfg])
    assert r.exit_code == 0, r.output
    (first,), jobs = _rows(url)
    assert len(jobs) == 3 and {j.snapshot_id for j in jobs} == {first.id}
    r = run(app, ["snapshot", "build", "--period", "2025-06", *cfg])
    assert r.exit_code == 2 and "--force" in r.output

    r = run(app, ["snapshot", "list", *cfg])
    ids = "".join(line.split("│")[1].strip() for line in r.output.splitlines() if line.startswith("│"))
    assert r.exit_code == 0 and first.id in ids  # whole, folded onto two lines at 80 columns
    r = run(app, ["snapshot", "show", first.id[:16], *cfg])
    assert r.exit_code == 0 and "Table 3" in r.output and "movies" in r.output, r.output
    r = run(app, ["snapshot", "show", "nope", *cfg])
    assert r.exit_code == 2 and "unknown snapshot" in r.output

    out = tmp_path / "ref"
    r = run(app, ["snapshot", "export", first.id, "--format", "reference", "--out", str(out), *cfg])
    assert r.exit_code == 0 and (out / "ja" / "val_mc.jsonl").is_file()
    r = run(app, ["snapshot", "export", first.id, "--format", "csv", "--out", str(tmp_path / "x"), *cfg])
    assert r.exit_code == 2

    _fill(url, per_domain=1, prefix="z")
    r = run(app, ["snapshot", "build", "--period", "2025-06", "--force", *cfg])
    assert r.exit_code == 0, r.output
    snaps, _ = _rows(url)
    second = next(s for s in snaps if s.id != first.id)
    r = run(app, ["snapshot", "diff", first.id, second.id, *cfg])
    assert r.exit_code == 0 and "entities added" in r.output, r.output

    # audit: 3 annotators; pair 0 flagged by two of them (majority: wrong), pair 1 by one (majority: correct)
    sheet = tmp_path / "audit.csv"
    r = run(app, ["audit", "sample", first.id, "--fraction", "0.5", "--language", "en", "--out", str(sheet), *cfg])
    assert r.exit_code == 0, r.output
    assert sheet.with_suffix(".html").read_text().startswith("<!doctype html>")
    rows = list(csv.DictReader(sheet.open()))
    assert {r_["domain"] for r_ in rows} == {"movies", "music", "sports", "disasters"}
    assert len(rows) == 4 * 3  # half of the 6 questions of each domain
    files = []
    for k, flags in enumerate(([0, 1], [0], [])):
        f = tmp_path / f"ann{k}.csv"
        with f.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
            w.writeheader()
            for i, row in enumerate(rows):
                w.writerow({**row, "wrong_answer": "x" if i in flags else "", "correct": "" if i in flags else "1"})
        files.append(str(f))
    r = run(app, ["audit", "score", str(sheet), *cfg])  # the form as written: no verdict, refused, nothing stored
    assert r.exit_code == 2 and "no verdict" in r.output and str(sheet) in r.output.replace("\n", "")
    assert not next(s for s in _rows(url)[0] if s.id == first.id).audit
    r = run(app, ["audit", "score", files[0], *cfg])
    assert r.exit_code == 0 and "single annotator" in r.output, r.output
    r = run(app, ["snapshot", "show", first.id, *cfg])
    assert "single annotator" in r.output
    r = run(app, ["audit", "score", *files, *cfg])
    assert r.exit_code == 0, r.output
    assert "majority vote of 3 annotators" in r.output and "Fleiss' kappa" in r.output
    (snap,) = [s for s in _rows(url)[0] if s.id == first.id]
    assert snap.audit["overall"]["pairs"] == 12 and snap.audit["overall"]["correct"] == 11
    d0 = rows[0]["domain"]
    assert snap.audit["domains"][d0]["precision"] == round(2 / 3, 4)
    r = run(app, ["snapshot", "show", first.id, *cfg])
    assert "Human audit" in r.output and "91.7%" in r.output and "majority vote of 3 annotators" in r.output
    assert snap.audit["agreement"]["method"] == "Fleiss' kappa" and snap.audit["annotators"] == 3
    assert json.dumps(snap.audit)  # stored as JSON

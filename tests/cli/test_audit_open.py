"""`clkt audit sample --open` and `clkt audit score` on open forms (issue 47 item 5), on a real SQLite store whose
snapshot's finished jobs stored open answers (`tests.publish._open`): the form is stratified per language, seeded,
blind (no verdict, reason, identified language, job or variant in it); labelled, it scores the normaliser against the
labels per language, says the jury and the judges have no stored verdicts; every bad form exits 2 with one line
and nothing written."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

from clkt.snapshots.audit_open import OPEN_COLUMNS, open_sample_id
from storage.engine import Store
from storage.open_results import OpenResultRow, open_results_for_snapshot
from tests.cli._in_process import clkt
from tests.publish._open import store_open_answers
from tests.publish.conftest import seed_open_snapshot
from tests.snapshots.factories import LANGS, make_settings


def _seeded(tmp_path: Path) -> tuple[str, list[str], list[OpenResultRow]]:
    settings = make_settings(tmp_path)

    async def go() -> tuple[str, list[OpenResultRow]]:
        async with Store(url=settings.resolved_store_url) as store:
            sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
            await store_open_answers(store, sid)
            async with store.session() as s:
                return sid, list(await open_results_for_snapshot(s, sid))

    sid, stored = asyncio.run(go())
    return sid, ["--config", str(tmp_path / "clkt.toml")], stored


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _write(path: Path, rows: list[dict[str, str]]) -> str:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=OPEN_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return str(path)


def test_the_open_form_is_blind_stratified_and_seeded_and_scores_the_normaliser(tmp_path: Path) -> None:
    sid, cfg, stored = _seeded(tmp_path)
    form, again = tmp_path / "open.csv", tmp_path / "again.csv"
    r = clkt("audit", "sample", sid, "--open", "--per-language", "5", "--seed", "7", "--out", str(form), *cfg)
    assert r.returncode == 0 and "15 open answers" in r.stdout, r.stdout + r.stderr
    assert "Save CSV" in form.with_suffix(".html").read_text(encoding="utf-8")
    rows = _read(form)
    assert list(rows[0]) == OPEN_COLUMNS and sorted(r_["language"] for r_ in rows) == sorted(x for x in LANGS for _ in range(5))
    assert all(r_["label"] == "" and r_["question"] and r_["gold"] for r_ in rows)
    text = form.read_text(encoding="utf-8")
    for leak in ("open-normaliser", "other_language", "no alias matched", "NOT_ATTEMPTED", "INCORRECT", "verdict", "reason", "answer_lang"):
        assert leak not in text, leak
    assert len({r_["sample_id"] for r_ in rows}) == 15 and len({(r_["sample_id"].split(":")[2], r_["answer"]) for r_ in rows}) == 15
    assert clkt("audit", "sample", sid, "--open", "--per-language", "5", "--seed", "7", "--out", str(again), *cfg).returncode == 0
    assert again.read_bytes() == form.read_bytes()  # deterministic with a seed
    assert clkt("audit", "sample", sid, "--open", "--per-language", "5", "--seed", "8", "--out", str(again), *cfg).returncode == 0
    assert again.read_bytes() != form.read_bytes()
    # everything: each distinct (question, language, answer) once, though two jobs gave most of them (the base model
    # in both, and the fixture's injected answers alike); the control answer to a question the snapshot lacks is left out
    assert clkt("audit", "sample", sid, "--open", "--per-language", "1000", "--out", str(again), *cfg).returncode == 0
    everything = _read(again)
    distinct = {(v.open_qid, v.lang, v.answer) for v in stored if v.split == "test"}
    assert len(everything) == len(distinct) < len([v for v in stored if v.split == "test"])
    assert len({(r_["sample_id"].split(":")[2], r_["language"], r_["answer"]) for r_ in everything}) == len(distinct)

    # label every answer as the stored normaliser verdict says, but one: agreement 14 of 15
    verdict = {open_sample_id(sid, v.lang, v.open_qid, v.job_id, v.variant): v.verdict for v in stored}
    labelled = [{**r_, "label": verdict[r_["sample_id"]]} for r_ in rows]
    labelled[0]["label"] = "CORRECT" if labelled[0]["label"] != "CORRECT" else "INCORRECT"
    r = clkt("audit", "score", _write(tmp_path / "done.csv", labelled), *cfg, "--json")
    assert r.returncode == 0, r.stderr
    score = json.loads(r.stdout)
    overall = next(a for a in score["agreement"] if a["language"] == "all")
    assert (overall["scorer"], overall["n"], overall["agree"]) == ("open-normaliser", 15, 14)
    assert overall["kappa"] is not None and overall["ci"][0] <= overall["kappa"] <= overall["ci"][1]
    assert {a["language"] for a in score["agreement"]} == {*LANGS, "all"}
    assert all(a["reading"] == "too few" for a in score["agreement"] if a["language"] != "all")  # 5 each
    assert score["without_verdicts"] == ["each judge", "the jury"]
    r = clkt("audit", "score", str(tmp_path / "done.csv"), *cfg)
    assert r.returncode == 0 and "too few (n = 5)" in r.stdout and "no verdicts stored per answer" in r.stdout, r.stdout


def test_every_bad_open_form_exits_2_with_one_line(tmp_path: Path) -> None:
    sid, cfg, _ = _seeded(tmp_path)
    form = tmp_path / "open.csv"
    assert clkt("audit", "sample", sid, "--open", "--per-language", "3", "--out", str(form), *cfg).returncode == 0
    rows = [{**r_, "label": "CORRECT"} for r_ in _read(form)]
    cases = {
        "blank": ([{**r_, "label": ""} for r_ in rows], "no label in this form"),
        "partial": ([*rows[:-1], {**rows[-1], "label": ""}], "has no label"),
        "unknown label": ([{**rows[0], "label": "RIGHT"}, *rows[1:]], "'RIGHT' is not a label"),
        "edited id": ([{**rows[0], "sample_id": rows[0]["sample_id"][:-1] + "0"}, *rows[1:]], "stored answers"),
        "edited answer": ([{**rows[0], "answer": "Somebody else"}, *rows[1:]], "is not the stored answer"),
        "another snapshot": ([{**r_, "sample_id": r_["sample_id"].replace(sid, "demo-1999-01-r0"),
                               "snapshot_id": "demo-1999-01-r0"} for r_ in rows], "does not have"),
    }
    for name, (bad, message) in cases.items():
        r = clkt("audit", "score", _write(tmp_path / f"{name}.csv", bad), *cfg)
        assert r.returncode == 2 and message in r.stderr and r.stdout == "", (name, r.stderr)
        assert r.stderr.strip().count("\n") == 0, (name, r.stderr)
    mcq = tmp_path / "mcq.csv"
    mcq.write_text("sample_id,snapshot_id,domain,unrelated,too_general,unverifiable,wrong_answer\n", encoding="utf-8")
    r = clkt("audit", "score", _write(tmp_path / "ok.csv", rows), str(mcq), *cfg)
    assert r.returncode == 2 and "mix open-answer forms and MCQ" in r.stderr
    r = clkt("audit", "score", str(tmp_path / "ok.csv"), "--retract-rejected", *cfg)
    assert r.returncode == 2 and "--retract-rejected" in r.stderr
    out = tmp_path / "never.csv"
    for args, refusal in ((["--per-language", "0"], "at least 1"), (["--language", "xx"], "no language xx"),
                          (["--fraction", "0.5"], "--fraction")):
        r = clkt("audit", "sample", sid, "--open", *args, "--out", str(out), *cfg)
        assert r.returncode == 2 and refusal in r.stderr and not out.exists(), r.stderr
    assert not list(tmp_path.glob(".never.csv.tmp-*"))

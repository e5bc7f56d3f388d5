"""The open track in result packs (issue 47; format version 2): `open_answers.jsonl` carries the model's short
answers, base and injected, per question, language and split, hashed in the manifest; `clkt submit` checks them
against the snapshot's open questions as frozen here and scores them with its own normaliser (the pack's claims
never stored), stores them and puts the submitted row's open figures in the board's open section, apart; a version-1
pack reads as "no open track"; bad open answers are refused with one line and the store unchanged."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clkt.errors import UserError
from clkt.packs.format import FORMAT_VERSION, MANIFEST_FILE, OPEN_ANSWER_MAX_CHARS, OPEN_FILE, OpenAnswerRow
from clkt.packs.metrics import compute_metrics
from clkt.packs.pack import open_key, read_pack
from tests.cli._in_process import clkt
from tests.inject._fixtures import SNAPSHOT_ID
from tests.inject._open_fixtures import open_qid
from tests.packs._packs import (
    LANGS,
    assert_refused,
    leaderboard_page,
    make_pack,
    make_store,
    open_claims,
    open_rows,
    rows,
    submitted,
)

pytestmark = pytest.mark.usefixtures("wide_console")

FILM_Q = open_qid(1, "film.director")  # gold "Paris"
MATCH_Q = open_qid(2, "match.venue")  # gold "Rome"


def _stored_open(tmp_path: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(tmp_path / "clkt.db")
    try:
        (blob,) = con.execute("SELECT open_answers FROM submitted_pack").fetchone()
    finally:
        con.close()
    return [json.loads(line) for line in gzip.decompress(blob).splitlines()] if blob else []


def _cell(metrics: dict[str, Any], variant: str, split: str, lang: str) -> dict[str, Any]:
    (cell,) = [c for c in metrics["open"]["cells"] if (c["variant"], c["split"], c["lang"]) == (variant, split, lang)]
    return dict(cell)


def _board(cfg: Path, *args: str) -> dict[str, Any]:
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--config", str(cfg), *args)
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout))


def test_a_pack_with_open_answers_reads_back_hashed_at_version_2(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack", opened=open_rows())
    pack = read_pack(tmp_path / "pack")
    assert pack.open_answers == sorted(open_rows(), key=open_key) and len(pack.open_answers) == 12
    manifest = json.loads((tmp_path / "pack" / MANIFEST_FILE).read_text())
    assert OPEN_FILE in manifest["files"] and manifest["format_version"] == FORMAT_VERSION == 2
    claims = json.loads((tmp_path / "pack" / "metrics.json").read_text())
    injected = _cell(claims, "injected", "test", "en")
    assert (injected["n"], injected["correct"], injected["entities"]) == (2, 2, 2)
    # 2 answers: under MIN_CELL_N, too few: the counts, no rate, no interval (the rule of every open cell)
    assert (injected["too_few"], injected["accuracy"], injected["ci"]) == (True, None, None)
    assert _cell(claims, "base", "test", "fr")["correct"] == 0 and _cell(claims, "injected", "control", "fr")["n"] == 1
    make_pack(tmp_path / "pack.tar.gz", opened=open_rows())
    assert read_pack(tmp_path / "pack.tar.gz").sha256 == pack.sha256  # one identity, folder or archive


def test_an_open_answers_file_over_its_limit_is_refused_before_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clkt.openqa.results import MAX_ANSWER_CHARS
    from clkt.packs import pack as packmod

    assert OPEN_ANSWER_MAX_CHARS == MAX_ANSWER_CHARS  # a pack's answer bound is what a job keeps of one
    make_pack(tmp_path / "pack", opened=open_rows())
    monkeypatch.setattr(packmod, "OPEN_MAX_BYTES", 100)
    with pytest.raises(UserError, match=r"open_answers.jsonl is [\d,]+ bytes, more than the 100 a pack's open answers may be"):
        read_pack(tmp_path / "pack")


def test_a_version_1_manifest_that_lists_open_answers_is_refused(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack", opened=open_rows(), format_version=1)
    with pytest.raises(UserError, match=r"open_answers.jsonl is a file of format version 2, and the manifest says version 1"):
        read_pack(tmp_path / "pack")


async def test_a_version_1_pack_is_taken_as_no_open_track(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path, open_track=True)
    make_pack(tmp_path / "pack", format_version=1)
    assert read_pack(tmp_path / "pack").open_answers == []
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "open track: none (the pack holds no open answers)" in res.stdout
    (_, _, match, metrics) = submitted(tmp_path)[0]
    assert match and "open" not in json.loads(metrics) and _stored_open(tmp_path) == []


async def test_open_answers_are_scored_here_stored_and_shown_apart_on_the_board(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path, open_track=True)
    make_pack(tmp_path / "pack", opened=open_rows())
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "does not match" not in res.stderr  # the pack's claims are the figures computed here
    assert "open track (open-normaliser, the answers scored here; never pooled with the multiple-choice figures)" in res.stdout
    assert "trained in en, injected: en too few (2 of n=2 right, 2 entities)" in res.stdout
    assert "trained in en, base: en too few (0 of n=2 right, 2 entities)" in res.stdout
    assert not [line for line in res.stdout.splitlines() if "trained in en, " in line and "%" in line]  # no rate shown
    metrics = json.loads(submitted(tmp_path)[0][3])
    assert _cell(metrics, "injected", "test", "fr")["correct"] == 2 and _cell(metrics, "base", "test", "en")["correct"] == 0
    learn = metrics["open"]["figures"]["learn"]["en"]
    assert (learn["n"], learn["base_accuracy"], learn["injected_accuracy"]) == (2, 0.0, 1.0)
    assert "option-loglik" in metrics["scorers"] and "open-normaliser" not in metrics["scorers"]  # never pooled
    stored = _stored_open(tmp_path)
    assert len(stored) == 12 and {a["verdict"] for a in stored if a["variant"] == "injected"} == {"CORRECT"}

    board = _board(cfg, "--unverified")
    (row,) = board["open_rows"]
    assert (row["target"], row["scorer"], row["track"], row["verified"], row["rank"]) == (
        "tiny (submitted)", "open-normaliser", "submitted", "not reproduced", None)
    assert row["overall"]["value"] == 1.0 and row["overall"]["n"] == 2 and row["overall"]["ci"] is not None
    assert [r["scorer"] for r in board["rows"]] == ["option-loglik"]  # the MCQ row apart
    hidden = _board(cfg)  # not verified here: listed only when asked for, never ranked
    assert "open_rows" not in hidden and any(n.startswith("open track: 1 submitted row(s)") for n in hidden["notes"])


async def test_the_packs_open_claims_are_never_what_is_stored(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path, open_track=True)
    wrong = open_rows(answers={FILM_Q: "Oslo", MATCH_Q: "Oslo"})
    claims = _mcq_claims()
    claims["open"] = open_claims(open_rows())  # the figures of the right answers, claimed for the wrong ones
    make_pack(tmp_path / "pack", opened=wrong, metrics=claims)
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "does not match its predictions (open.cells" in res.stderr
    (_, _, match, metrics) = submitted(tmp_path)[0]
    assert not match and _cell(json.loads(metrics), "injected", "test", "en")["correct"] == 0


async def test_markup_in_an_answer_is_kept_as_text_and_never_shown_as_markup(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path, open_track=True)
    markup = '<script>alert("x")</script><b>Paris</b>'
    make_pack(tmp_path / "pack", opened=open_rows(answers={FILM_Q: markup}))
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert {a["answer"] for a in _stored_open(tmp_path) if a["qid"] == FILM_Q and a["variant"] == "injected"} == {markup}
    status, html = await leaderboard_page(cfg)
    assert status == 200 and "<script>alert" not in html and "tiny (submitted)" in html


def _mcq_claims() -> dict[str, Any]:
    return compute_metrics(rows(), LANGS, format_version=FORMAT_VERSION, snapshot_id=SNAPSHOT_ID).model_dump(mode="json")


def _rewrite(rows_of: Callable[[list[OpenAnswerRow]], list[OpenAnswerRow]]) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        make_pack(tmp_path / "bad", opened=rows_of(open_rows()), metrics=_mcq_claims())  # refused before any claim is read
        return tmp_path / "bad"
    return make


def _long(rs: list[OpenAnswerRow]) -> list[OpenAnswerRow]:
    ten_kb = "Paris " * 1707  # 10,242 characters
    assert len(ten_kb) > 10_000 > OPEN_ANSWER_MAX_CHARS
    return [OpenAnswerRow.model_construct(**{**r.model_dump(), "answer": ten_kb}) if i == 3 else r for i, r in enumerate(rs)]


def _tampered(tmp_path: Path) -> Path:
    make_pack(tmp_path / "bad", opened=open_rows())
    path = tmp_path / "bad" / OPEN_FILE
    path.write_text(path.read_text().replace("Berlin", "Paris!"))  # the base model's answers made right
    return tmp_path / "bad"


def _replace(rs: list[OpenAnswerRow], i: int, **change: Any) -> list[OpenAnswerRow]:
    return [r.model_copy(update=change) if n == i else r for n, r in enumerate(rs)]


BAD = [
    ("unknown question", _rewrite(lambda rs: _replace(rs, 0, qid=12345)),
     f"open_answers.jsonl: open question 12345 is not in snapshot {SNAPSHOT_ID}'s "),
    ("missing", _rewrite(lambda rs: rs[1:]), "is not answered (en, base, "),
    ("duplicate", _rewrite(lambda rs: [*rs, rs[0]]), "is answered twice (en, base, "),
    ("10 KB answer", _rewrite(_long), f"open_answers.jsonl:6: the answer to open question {FILM_Q} in 'fr' is 10,242 "
                                      f"characters, longer than the {OPEN_ANSWER_MAX_CHARS} characters an open answer "
                                      "may be (refused, not cut)"),
    ("tampered", _tampered, "open_answers.jsonl does not match its sha256 in the manifest"),
    ("language not asked", _rewrite(lambda rs: _replace(rs, 0, lang="ja")), "which it is not asked in"),
    ("wrong split", _rewrite(lambda rs: [r.model_copy(update={"split": "control"}) if r.qid == FILM_Q else r for r in rs]),
     "control split"),
    ("other train language", _rewrite(lambda rs: [r.model_copy(update={"train_lang": "fr"}) for r in rs]),
     "is answered by train language 'fr', not one of the pack's ['en']"),
    ("wrong entity", _rewrite(lambda rs: _replace(rs, 0, entity_id=7)), "the answer names entity 7"),
]


@pytest.mark.parametrize(("make", "line"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
async def test_bad_open_answers_are_refused_with_one_line_and_the_store_unchanged(
    tmp_path: Path, make: Callable[[Path], Path], line: str,
) -> None:
    assert_refused(tmp_path, await make_store(tmp_path, open_track=True), make, line)


async def test_open_answers_for_a_snapshot_without_an_open_track_here_are_refused(tmp_path: Path) -> None:
    assert_refused(tmp_path, await make_store(tmp_path), _rewrite(lambda rs: rs),
                   f"it holds open_answers.jsonl, and snapshot {SNAPSHOT_ID} has no open track here")


@pytest.mark.slow
async def test_evaluate_carries_the_jobs_open_answers_and_submit_agrees_with_its_claims(tmp_path: Path) -> None:
    """`clkt evaluate` of a tiny random-weight llama on a snapshot with an open track: the jobs' open pass answers
    every open question (base and injected, test and control, both languages) into `open_answers.jsonl`, and the
    service that takes the pack in scores them to the figures the pack claims."""
    from tests.evaluate._tiny import tiny_model, tiny_tokenizer

    cfg = await make_store(tmp_path, open_track=True)
    model = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    gpu = '[gpu]\ndevices = ["cpu"]\nepochs = 1\ntorch_threads = 1\neval_batch_size = 4\n'
    ecfg = tmp_path / "eval.toml"
    ecfg.write_text(f'data_dir = "{tmp_path / "elsewhere"}"\n[spec]\nlanguages = ["en", "fr"]\nstrategies = ["cpt-lora"]\n'
                    + gpu, encoding="utf-8")
    res = clkt("evaluate", str(tmp_path / "snap"), "--model-path", str(model), "--out", str(tmp_path / "pack"),
               "--cutoff", "2024-08-01", "--train-languages", "en", "--config", str(ecfg), timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert "and 12 open answers" in res.stdout
    pack = read_pack(tmp_path / "pack")
    got = {(r.variant, r.split, r.lang, r.qid) for r in pack.open_answers}
    assert len(got) == len(pack.open_answers) == 12 and {s for _, s, _, _ in got} == {"test", "control"}
    assert pack.claimed_metrics["open"]["scorer"] == "open-normaliser"
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "does not match" not in res.stderr and len(_stored_open(tmp_path)) == 12


async def test_an_upload_with_open_answers_is_scored_by_the_service(tmp_path: Path) -> None:
    """`POST /packs` (the archive verified in the limited child, then read again): the open answers reach the
    intake, are scored there and answered with their figures; a tampered one is a 400 and the store unchanged."""
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.web.intake import INTAKE_PATH
    from storage.engine import Store
    from tests.packs._packs import intake_app, store_dump

    await make_store(tmp_path, open_track=True)
    make_pack(tmp_path / "pack.tar.gz", opened=open_rows())
    wrong = tmp_path / "wrong.tar.gz"
    make_pack(wrong, opened=open_rows()[1:], metrics=_mcq_claims())
    auth = {"Authorization": "Bearer token-0123456789abcdef"}
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, \
            TestClient(TestServer(intake_app(store, token=auth["Authorization"][7:]), host="127.0.0.1")) as client:
        before = store_dump(tmp_path)
        r = await client.post(INTAKE_PATH, data=wrong.read_bytes(), headers=auth)
        assert r.status == 400 and "open_answers.jsonl: open question" in (await r.json())["error"]
        assert store_dump(tmp_path) == before
        r = await client.post(INTAKE_PATH, data=(tmp_path / "pack.tar.gz").read_bytes(), headers=auth)
        got = await r.json()
        assert r.status == 200, got
        assert got["open_answers"] == 12 and got["claims_match"] is True
        cell = _cell(got["metrics"], "injected", "test", "en")
        assert (cell["correct"], cell["n"], cell["too_few"], cell["accuracy"]) == (2, 2, True, None)
    assert len(_stored_open(tmp_path)) == 12


async def test_a_probed_packs_open_figures_leave_out_the_entities_its_model_knew(tmp_path: Path) -> None:
    """The probe judged here excludes entity 1 (its en answer states the film's director): the stored open figures
    of the test split are on entity 2 alone (n 1 per language), as the MCQ figures are; the control split keeps its
    question (its entity is fictional, never probed); the answers themselves are all stored."""
    from tests.packs._packs import store_facts
    from tests.packs.test_probe_pack import probe_rows

    cfg = await make_store(tmp_path, open_track=True)
    store_facts(tmp_path)
    make_pack(tmp_path / "pack", opened=open_rows(), probe=probe_rows())
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "probed here (1 of 2 excluded)" in res.stdout and "does not match" not in res.stderr
    metrics = json.loads(submitted(tmp_path)[0][3])
    cell = _cell(metrics, "injected", "test", "fr")
    assert (cell["n"], cell["correct"], cell["entities"]) == (1, 1, 1)
    assert _cell(metrics, "injected", "control", "fr")["n"] == 1 and len(_stored_open(tmp_path)) == 12

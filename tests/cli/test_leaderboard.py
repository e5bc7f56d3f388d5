"""`clkt leaderboard`: the pooled table, JSON and CSV, the comparison, the predictions CSV behind the figures, and
one clear line with exit 2 for every bad input."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest

import clkt.cli as cli
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.report._window_store import WindowStore, seed_window_store


@pytest.fixture(scope="module")
def lb_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, WindowStore]:
    root = tmp_path_factory.mktemp("lb")

    async def seed() -> WindowStore:
        async with Store(url=f"sqlite+aiosqlite:///{root / 'clkt.db'}") as store:
            return await seed_window_store(store)

    info = asyncio.run(seed())
    cfg = root / "c.toml"
    cfg.write_text(f'data_dir = "{root}"\n[spec]\nname = "lb"\nlanguages = ["en", "fr", "ja"]\n', encoding="utf-8")
    return cfg, info


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli.main(argv)
        code = 0
    except SystemExit as e:
        code = int(e.code) if isinstance(e.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--from", "2024-01", "--to", "2024-06"], "no snapshot of spec 'lb' in the window 2024-01 .. 2024-06 (its periods: 2025-01, 2025-02, 2025-03)"),
        (["--from", "2025-03", "--to", "2025-01"], "--from 2025-03 is after --to 2025-01"),
        (["--spec", "nope"], "no frozen snapshot of spec 'nope' in the store (specs with snapshots: lb, other)"),
        (["--target", "gamma"], "unknown target 'gamma'; known: alpha, beta"),
        (["--compare-targets", "alpha,gamma"], "unknown target 'gamma'"),
        (["--compare-targets", "alpha,alpha"], "--compare-targets 'alpha,alpha': two different names"),
        (["--strategy", "magic"], "unknown strategy 'magic'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora"),
        (["--scorer", "vibes"], "unknown scorer 'vibes'; known: generate, generate-circular, letter-logprob"),
        (["--scorer", "open-jury"], "unknown scorer 'open-jury'"),  # no open answer stored: no jury layer either
        (["--from", "2025-W03"], "--from: invalid period '2025-W03' for the monthly cadence: expected YYYY-MM"),
        (["--to", "2025-13"], "--to: invalid period '2025-13': month 13 out of range"),
        (["--json", "--csv"], "--json and --csv: choose one"),
        (["--predictions", "/nonexistent/dir/p.csv"], "--predictions: no folder /nonexistent/dir"),
        (["--open-predictions", "/nonexistent/dir/o.csv"], "--open-predictions: no folder /nonexistent/dir"),
        (["--by", "colour"], "--by: unknown key 'colour'; known: domain, size, asymmetry"),
        (["--by", "domain", "--transfer-pairs", "some"], "--transfer-pairs: 'some'; known: learned, all"),
        (["--by", "domain", "--compare-targets", "alpha,beta"], "--by with --compare-targets or --predictions: choose one"),
        (["--by", "domain", "--spec", "nope"], "no frozen snapshot of spec 'nope'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(lb_store: tuple[Path, WindowStore], capsys: pytest.CaptureFixture[str],
                                          args: list[str], says: str) -> None:
    cfg, _ = lb_store
    code, out, err = _run(["leaderboard", "--config", str(cfg), *args], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("clkt: ") and says in lines[0], err
    assert out == ""


@pytest.mark.usefixtures("wide_console")
def test_json_csv_and_the_predictions_behind_them(lb_store: tuple[Path, WindowStore], capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    cfg, info = lb_store
    code, out, err = _run(["leaderboard", "--config", str(cfg), "--json", "--compare-targets", "alpha,beta", "--scorer", "generate",
                           "--min-questions", "10"], capsys)
    assert code == 0, err
    board = json.loads(out)
    assert [r["target"] for r in board["rows"]] == ["alpha", "beta"] and board["comparison"]["questions"] == 66
    assert [s["period"] for s in board["snapshots"]] == ["2025-01", "2025-02", "2025-03"]
    code, out, err = _run(["leaderboard", "--config", str(cfg), "--csv", "--from", "2025-02"], capsys)
    assert code == 0, err
    table = list(csv.DictReader(out.splitlines()))
    assert {(r["target"], r["scorer"]) for r in table} == {("alpha", "generate"), ("alpha", "option-loglik"), ("beta", "generate")}
    assert all(r["too_few"] == "True" for r in table if r["target"] == "beta")  # 30 questions in 2025-02 only
    assert "2025-03 overall" in table[0] and "2025-01 overall" not in table[0]
    pred = tmp_path / "p.csv"
    code, out, err = _run(["leaderboard", "--config", str(cfg), "--predictions", str(pred), "--scorer", "generate",
                           "--target", "beta"], capsys)
    assert code == 0, err
    assert "predictions:" in out and "p.csv (792 rows)" in out and "Leaderboard" in out
    rows = list(csv.reader(pred.read_text(encoding="utf-8").splitlines()))
    assert rows[0][:3] == ["snapshot_id", "qid", "lang"]  # the public ids: they join with the snapshot's files
    assert rows[0] == ["snapshot_id", "qid", "lang", "target", "strategy", "job_id", "train_lang", "variant", "scorer",
                       "entity_id", "split", "predicted", "correct", "store_question_id", "store_entity_id"]
    body = rows[1:]
    assert {r[3] for r in body} == {"beta"} and {r[8] for r in body} == {"generate"}
    s2 = info.snapshots["2025-02"]
    excluded = info.excluded[(s2, "beta")]
    assert not any(r[0] == s2 and int(r[14]) in excluded for r in body)  # the exclusions are not behind the figures
    assert {r[0] for r in body} == {info.snapshots["2025-01"], s2}  # nor the snapshot not valid for beta
    # 22 entities x 3 questions x 3 languages x 2 variants x 2 train languages
    assert len(body) == 22 * 3 * 3 * 2 * 2
    public = _public_ids(cfg)
    for r in body:
        assert public[int(r[13])] == (int(r[1]), int(r[9]))  # qid and entity id as the snapshot's files have them
        assert int(r[1]) != int(r[13])
    assert not (tmp_path / "p.csv.part").exists()


def test_the_open_predictions_file_beside_the_mcq_one(lb_store: tuple[Path, WindowStore], capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    """A window whose jobs answered no open question: the open file is its header alone, the MCQ file as before
    (the rows themselves: `tests/publish/test_open_predictions.py`)."""
    from clkt.report.open_predictions import OPEN_CSV_COLUMNS

    cfg, _ = lb_store
    pred, opened = tmp_path / "p.csv", tmp_path / "o.csv"
    code, out, err = _run(["leaderboard", "--config", str(cfg), "--json", "--scorer", "generate", "--target", "beta",
                           "--predictions", str(pred), "--open-predictions", str(opened)], capsys)
    assert code == 0, err
    assert json.loads(out)["rows"]  # the board on stdout, the files' lines on stderr
    assert "p.csv (792 rows)" in err and "open predictions:" in err and "o.csv (0 rows)" in err
    assert opened.read_text(encoding="utf-8") == ",".join(OPEN_CSV_COLUMNS) + "\n"


def _public_ids(cfg: Path) -> dict[int, tuple[int, int]]:
    """store question row -> (public qid, public entity id), from each question's identity (clkt.snapshots.ids)."""
    import sqlite3

    from clkt.snapshots.ids import stable_entity_id, stable_qid

    with sqlite3.connect(cfg.parent / "clkt.db") as db:
        rows = db.execute("SELECT q.id, e.source, e.external_id, q.slot FROM question q JOIN entity e ON e.id = q.entity_id")
        return {qid: (stable_qid(src, ext, slot), stable_entity_id(src, ext)) for qid, src, ext, slot in rows}


def test_the_command_prints_the_tables(lb_store: tuple[Path, WindowStore]) -> None:
    cfg, _ = lb_store
    res = clkt("leaderboard", "--config", str(cfg), "--compare-targets", "alpha,beta", columns=240, timeout_s=300)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    for needle in ("Leaderboard — spec lb, monthly window 2025-01 .. 2025-03 (3 snapshots)", "cpt-lora, generate", "too few",
                   "per snapshot: Overall / Transfer", "not valid", "Transfer % per language pair over the window",
                   "alpha (generate) vs beta (generate), cpt-lora: on the 66 questions", "into ja"):
        assert needle in text, needle


def test_a_result_is_kept_and_read_back_while_the_store_is_unchanged(
    lb_store: tuple[Path, WindowStore], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, _ = lb_store
    kept = cfg.parent / "cache" / "leaderboard"
    argv = ["leaderboard", "--config", str(cfg), "--json", "--seed", "11"]
    code, first, _ = _run(argv, capsys)
    assert code == 0 and len(list(kept.glob("*.json"))) >= 1
    files = {p.name: p.stat().st_mtime_ns for p in kept.glob("*.json")}
    code, again, _ = _run(argv, capsys)
    assert code == 0 and again == first
    assert {p.name: p.stat().st_mtime_ns for p in kept.glob("*.json")} == files  # read, not written again
    code, fresh, _ = _run([*argv, "--no-cache"], capsys)
    assert code == 0 and json.loads(fresh) == json.loads(first)


@pytest.mark.usefixtures("wide_console")
def test_by_domain_size_and_asymmetry(lb_store: tuple[Path, WindowStore], capsys: pytest.CaptureFixture[str]) -> None:
    cfg, _ = lb_store
    base = ["leaderboard", "--config", str(cfg), "--bootstrap", "100"]
    code, out, err = _run([*base, "--by", "domain", "--json"], capsys)
    assert code == 0, err
    board = json.loads(out)
    assert board["transfer_pairs"] == "learned" and len(board["asymmetry"]) == 3  # en-fr of 3 target x scorer groups
    domains = {c["domain"] for c in board["cells"]}
    assert domains == {"movies", "music", "sports", "all", "avg"}
    code, out, err = _run([*base, "--by", "domain", "--csv", "--transfer-pairs", "all", "--target", "beta"], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(out.splitlines()))
    assert {r["target"] for r in rows} == {"beta"} and {r["transfer_over"] for r in rows} == {"all"}
    assert {"overall_mean", "overall_std", "overall_ci_low", "transfer_pairs", "transfer_n", "transfer_over"} <= set(rows[0])
    code, out, err = _run([*base, "--by", "asymmetry", "--csv"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "target,strategy,scorer,lang_1,lang_2,forward,backward,p_value,stronger"
    code, out, err = _run([*base, "--by", "domain"], capsys)
    assert code == 0, err
    assert "Table 2 over the window" in out and "mean ± std" in out and "(paper)" in out and "(clkt)" in out
    code, out, err = _run([*base, "--by", "size"], capsys)
    assert code == 0 and "no target in the window has a size_b" in out, out

"""`clkt evaluate` on the tiny snapshot with a tiny random-weight model (the GPU queue's own job, in a child process,
no store), then `clkt submit` of its pack into a real SQLite store: the path a researcher takes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clkt.packs.format import MANIFEST_FILE
from clkt.packs.pack import read_pack
from tests.cli._in_process import clkt
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.inject._fixtures import SNAPSHOT_ID, public_entity_id
from tests.packs._packs import TEST_QIDS, make_store, store_facts, submitted

pytestmark = pytest.mark.usefixtures("wide_console")


def _tiny_target(folder: Path) -> Path:
    tiny_model("llama", seed=3).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "eval.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n[spec]\nlanguages = ["en", "fr"]\nstrategies = ["cpt-lora"]\n'
                   '[gpu]\ndevices = ["cpu"]\nepochs = 2\ntorch_threads = 1\neval_batch_size = 4\n', encoding="utf-8")
    return cfg


@pytest.mark.slow
async def test_evaluate_writes_a_pack_that_submit_takes_in(tmp_path: Path) -> None:
    store_cfg = await make_store(tmp_path)  # the tiny snapshot at tmp_path/snap, frozen in a store
    model = _tiny_target(tmp_path / "tiny-model")
    out = tmp_path / "out" / "pack.tar.gz"
    args = ["evaluate", str(tmp_path / "snap"), "--model-path", str(model), "--out", str(out), "--cutoff", "2024-08-01",
            "--train-languages", "en", "--set", "epochs=1", "--config", str(_config(tmp_path))]
    res = clkt(*args, "--keep-work", timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert "train en: job starts" in res.stderr and "train en: loading" in res.stderr  # progress, per phase
    # 2 scorers (a base model's option-loglik and its acc_norm) x 2 variants x 2 languages x the test questions
    assert f"wrote {out}: {2 * 2 * 2 * len(TEST_QIDS)} predictions" in res.stdout
    pack = read_pack(out)
    m = pack.manifest
    assert (m.snapshot.id, m.model.name, m.model.cutoff.isoformat() if m.model.cutoff else None) == (
        SNAPSHOT_ID, "tiny-model", "2024-08-01")
    assert m.model.weights_sha256 and len(m.model.weights_sha256) == 64
    assert m.strategy.name == "cpt-lora" and m.strategy.train_languages == ["en"]
    assert m.strategy.settings["epochs"] == 1 and m.strategy.overridden == {
        "epochs": {"config": 2, "used": 1}, "train_languages": {"config": ["en", "fr"], "used": ["en"]}}
    assert m.environment.torch and m.environment.transformers and m.environment.peft and m.environment.device == "cpu"
    assert m.scorers == ["option-loglik", "option-loglik-norm"]
    assert {(r.variant, r.lang) for r in pack.predictions} == {(v, x) for v in ("base", "injected") for x in ("en", "fr")}
    assert {r.qid for r in pack.predictions} == set(TEST_QIDS)

    # the same command again with --probe, the pack gone but its jobs' folder kept: the finished job is read back,
    # not rerun, and the model answers the probe about both entities in both languages (probe.jsonl)
    out.unlink()
    again = clkt(*args, "--probe", timeout_s=600)
    assert again.returncode == 0, again.stderr
    assert "(en read back from an earlier run)" in again.stdout and "job starts" not in again.stderr
    assert "and 4 probe answers" in again.stdout and "probe: 2 entities x 2 languages (4 prompts)" in again.stderr
    assert read_pack(out).predictions == pack.predictions
    assert sorted((r.entity_id, r.lang) for r in read_pack(out).probe) == sorted(
        (public_entity_id(e), lang) for e in (1, 2) for lang in ("en", "fr"))
    assert not (tmp_path / "out" / "pack.work").exists()  # removed once the pack is written

    store_facts(tmp_path)  # what the probe is judged against here
    sub = clkt("submit", str(out), "--config", str(store_cfg))
    assert sub.returncode == 0, sub.stderr
    assert "  probe: probed here (0 of 2 excluded), judged here (template judge)" in sub.stdout  # random weights
    assert f"submitted pack {read_pack(out).sha256[:12]}: tiny-model on {SNAPSHOT_ID}" in sub.stdout
    (row,) = submitted(tmp_path)
    assert row[2] == 1  # its metrics were recomputed and agree with its claims
    assert set(json.loads(row[3])["scorers"]) == {"option-loglik", "option-loglik-norm"}


def test_a_model_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    from tests.inject._fixtures import write_tiny_snapshot

    snap = write_tiny_snapshot(tmp_path / "snap")
    res = clkt("evaluate", str(snap), "--model-path", str(tmp_path / "no-such-model"), "--out", str(tmp_path / "pack"),
               "--cutoff", "2024-08-01", "--config", str(_config(tmp_path)))
    assert res.returncode == 2
    assert "the model folder" in res.stderr and "does not exist" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "pack").exists()


@pytest.mark.parametrize(
    ("extra", "line"),
    [(["--set", "engine=ray"], "--set 'engine=ray': not <setting>=<value> for a job setting of [gpu]"),
     (["--set", "epochs=0"], "--set epochs: Input should be greater than or equal to 1"),
     (["--strategy", "nope"], "nope"),
     (["--train-languages", "de"], "train language(s) ['de'] are not among snapshot"),
     (["--cutoff", "soon"], "--cutoff 'soon': not a date")],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path: Path, extra: list[str], line: str) -> None:
    from tests.inject._fixtures import write_tiny_snapshot

    snap = write_tiny_snapshot(tmp_path / "snap")
    res = clkt("evaluate", str(snap), "--model-path", "embedded:gemma-3-270m", "--out", str(tmp_path / "pack"), *extra,
               "--config", str(_config(tmp_path)))
    assert res.returncode == 2, res.stderr
    assert line in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "pack").exists() and not (tmp_path / "pack.work").exists()


def test_a_snapshot_whose_files_do_not_match_is_refused(tmp_path: Path) -> None:
    from clkt.snapshots.layout import SnapshotManifest
    from tests.inject._fixtures import write_tiny_snapshot

    snap = write_tiny_snapshot(tmp_path / "snap")
    m = SnapshotManifest.model_validate_json((snap / MANIFEST_FILE).read_bytes())
    (snap / MANIFEST_FILE).write_text(m.model_copy(update={"files": {"docs/en.jsonl": "0" * 64}}).model_dump_json())
    res = clkt("evaluate", str(snap), "--model-path", "embedded:gemma-3-270m", "--out", str(tmp_path / "pack"),
               "--config", str(_config(tmp_path)))
    assert res.returncode == 2
    assert "docs/en.jsonl does not match its sha256" in res.stderr
    shutil.rmtree(snap)


@pytest.mark.slow
async def test_evaluate_packs_the_locality_answers_with_the_jobs_kept_percent(tmp_path: Path) -> None:
    """A snapshot whose locality split lists the target: the pack carries its locality answers, metrics.json's kept %
    is the job's own (the report's figure from the job's summary: one number, one interval), `clkt submit` agrees."""
    from clkt.inject.contract import JobOutcome
    from clkt.layout import OUTCOME_FILE
    from clkt.packs.format import LOCALITY_FILE
    from clkt.report.basics import BOOTSTRAP_SAMPLES
    from clkt.report.data import JobInfo
    from clkt.report.locality import kept_langs

    store_cfg = await make_store(tmp_path, known_by={"tiny-model": [7, 8]})
    model = _tiny_target(tmp_path / "tiny-model")
    out = tmp_path / "out" / "pack"
    res = clkt("evaluate", str(tmp_path / "snap"), "--model-path", str(model), "--out", str(out), "--cutoff", "2024-08-01",
               "--train-languages", "en", "--set", "epochs=1", "--config", str(_config(tmp_path)), "--keep-work",
               timeout_s=600)
    assert res.returncode == 0, res.stderr
    # 2 scorers x 2 variants x 2 languages x 3 locality questions
    assert f"{2 * 2 * 2 * len(TEST_QIDS)} predictions and 24 locality answers" in res.stdout
    pack = read_pack(out)
    assert LOCALITY_FILE in pack.manifest.files and len(pack.locality) == 24
    (outcome_path,) = (tmp_path / "out" / "pack.work").glob(f"*/jobs/1/{OUTCOME_FILE}")
    summary = JobOutcome.model_validate_json(outcome_path.read_bytes()).summary
    job = JobInfo(job_id=1, model="tiny-model", strategy="cpt-lora", train_lang="en", status="done", locality=summary.locality)
    report = {(k.scorer, k.lang): k for k in kept_langs([job], snapshot_id=SNAPSHOT_ID, seed=0, samples=BOOTSTRAP_SAMPLES)}
    cells = {(s, c["lang"]): c for s, m in pack.claimed_metrics["scorers"].items() for c in m["locality"]}
    assert set(cells) == set(report) == {(s, x) for s in ("option-loglik", "option-loglik-norm") for x in ("en", "fr")}
    for key, k in report.items():
        c = cells[key]
        assert (c["n"], c["right_before"], c["kept"], c["rate"], c["too_few"]) == (k.n, k.base_right, k.kept, k.rate, k.too_few)
        assert c["ci"] == (list(k.ci) if k.ci is not None else None)
    store_facts(tmp_path)  # what the probe is judged against here
    sub = clkt("submit", str(out), "--config", str(store_cfg))
    assert sub.returncode == 0, sub.stderr
    assert "  probe: not probed here" in sub.stdout  # evaluated without --probe: the pack carries no answers
    assert sub.stderr == ""  # the claims, kept % included, agree with the letters against the store's key
    (row,) = submitted(tmp_path)
    assert row[2] == 1 and json.loads(row[3])["scorers"]["option-loglik"]["locality"] == pack.claimed_metrics["scorers"]["option-loglik"]["locality"]

"""The pack format: written and read back the same, as a folder or an archive (one identity), readable by pandas and
`datasets`, its metrics a function of its predictions, a future version refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.packs.format import FORMAT_VERSION, MANIFEST_FILE, METRICS_FILE, PACK_FILES, PREDICTIONS_FILE
from clkt.packs.metrics import compute_metrics, first_difference
from clkt.packs.pack import read_pack, sort_key
from tests.packs._packs import LANGS, TEST_QIDS, make_pack, rows


def test_a_pack_reads_back_as_written_in_either_form(tmp_path: Path) -> None:
    sha_dir = make_pack(tmp_path / "pack")
    sha_tar = make_pack(tmp_path / "pack.tar.gz")
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == sorted(PACK_FILES)
    folder, archive = read_pack(tmp_path / "pack"), read_pack(tmp_path / "pack.tar.gz")
    assert folder.sha256 == archive.sha256 == sha_dir == sha_tar  # one identity: the manifest's bytes
    assert folder.manifest == archive.manifest
    assert folder.manifest.format_version == FORMAT_VERSION
    assert folder.predictions == archive.predictions
    assert folder.predictions == sorted(rows(), key=sort_key)  # in the canonical order
    assert folder.manifest.strategy.overridden == {"epochs": {"config": 5, "used": 1}}
    assert set(folder.manifest.files) == {PREDICTIONS_FILE, METRICS_FILE}


def test_the_archive_is_the_same_bytes_for_the_same_pack(tmp_path: Path) -> None:
    make_pack(tmp_path / "a.tar.gz")
    make_pack(tmp_path / "b.tar.gz")
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()


def test_predictions_load_in_pandas_and_datasets(tmp_path: Path) -> None:
    import pandas as pd
    from datasets import load_dataset

    make_pack(tmp_path / "pack")
    path = tmp_path / "pack" / PREDICTIONS_FILE
    frame = pd.read_json(path, lines=True)
    assert len(frame) == len(rows()) == 2 * 2 * len(TEST_QIDS)  # 2 variants x 2 languages x the test questions
    assert {"train_lang", "scorer", "variant", "lang", "qid", "predicted", "correct"} <= set(frame.columns)
    assert frame.groupby("variant")["correct"].mean().to_dict() == {"base": 0.5, "injected": 1.0}
    ds = load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == len(frame)
    assert sorted(set(ds["qid"])) == sorted(TEST_QIDS)


def test_metrics_are_computed_from_the_predictions(tmp_path: Path) -> None:
    m = compute_metrics(rows(), LANGS, format_version=FORMAT_VERSION)
    s = m.scorers["option-loglik"]
    (pair,) = s.pairs  # one train language (en) -> one ordered pair, en -> fr
    assert (pair.train_lang, pair.test_lang, pair.a, pair.b, pair.c, pair.d) == ("en", "fr", 2, 0, 0, 0)
    # two questions, one gained: en did not learn (exact McNemar), so Transfer leaves its pair out, as the report
    # and the leaderboard do for the same letters (`clkt.report.metric_table`)
    assert not s.learn["en"].learned
    assert s.means == {"overall": 1.0, "transfer": None}
    learn = s.learn["en"]
    assert (learn.n, learn.base_accuracy, learn.injected_accuracy, learn.gained) == (2, 0.5, 1.0, 1)
    make_pack(tmp_path / "pack")
    claimed = json.loads((tmp_path / "pack" / METRICS_FILE).read_text())
    assert first_difference(claimed, m.model_dump(mode="json")) is None
    claimed["scorers"]["option-loglik"]["means"]["transfer"] = 0.5
    assert first_difference(claimed, m.model_dump(mode="json")) == "scorers.option-loglik.means.transfer: 0.5 != None"


def test_a_future_format_version_is_refused_with_one_line(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack")
    mpath = tmp_path / "pack" / MANIFEST_FILE
    data = json.loads(mpath.read_text())
    data["format_version"] = FORMAT_VERSION + 1
    data["a_field_of_the_future"] = {"x": 1}
    mpath.write_text(json.dumps(data))
    with pytest.raises(UserError, match=rf"format version {FORMAT_VERSION + 1}, newer than this clkt reads \({FORMAT_VERSION}\)"):
        read_pack(tmp_path / "pack")


def test_a_pack_is_never_written_over_something(tmp_path: Path) -> None:
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "x").write_text("mine")
    with pytest.raises(UserError, match="exists"):
        make_pack(tmp_path / "pack")
    assert (tmp_path / "pack" / "x").read_text() == "mine"

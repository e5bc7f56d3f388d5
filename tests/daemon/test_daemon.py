"""The daemon as a real subprocess: clean SIGTERM, restarts, lock, port in use, secrets never leak."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, handles_signal, wait_until

SECRET = "sk-test-0123456789abcdef-SECRET"


def _config(tmp_path: Path, *, port: int = 0, grace: float = 5.0) -> Path:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f"""
data_dir = "{tmp_path / 'data'}"
[http]
port = {port}
[daemon]
grace_period_s = {grace}
poll_interval_s = 0.1
restart_backoff_max_s = 0.5
[sources.tmdb]
enabled = false
api_key_env = "TMDB_API_KEY"
[gpu]
enabled = false
"""
    )
    return cfg


def _seed_tasks(db: Path, n: int) -> None:
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO entity (source, external_id, domain, name, occurred_at, payload, facts, content_hash, status, discovered_at, updated_at)"
        " VALUES ('t','1','sports','n','2026-01-01 00:00:00','{}','{}','h','probing','2026-01-01 00:00:00','2026-01-01 00:00:00')"
    )
    for i in range(n):
        con.execute(
            "INSERT INTO task (stage, entity_id, key, status, attempts, max_attempts, not_before, created_at, updated_at)"
            " VALUES ('probe', 1, ?, 'pending', 0, 5, '2000-01-01 00:00:00', '2000-01-01 00:00:00', '2000-01-01 00:00:00')",
            (str(i),),
        )
    con.commit()
    con.close()


def _start(cfg: Path, marker: Path, log: Path, env_extra: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    marker.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, str(REPO / "tests/daemon/_app.py"), str(cfg), str(marker)],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=REPO,
    )


@pytest.fixture
def daemon_env(tmp_path: Path) -> tuple[Path, Path]:
    cfg = _config(tmp_path)
    # migrate the store first so we can seed work
    subprocess.run([sys.executable, "-m", "clkt.cli", "db", "upgrade", "--config", str(cfg)], check=False, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True)
    return cfg, tmp_path


def test_sigterm_exits_zero_within_grace_and_leaves_no_lease(tmp_path: Path) -> None:
    cfg = _config(tmp_path, grace=5.0)
    db = tmp_path / "data" / "clkt.db"
    marker, log = tmp_path / "m", tmp_path / "daemon.log"
    proc = _start(cfg, marker, log, {"TMDB_API_KEY": SECRET})
    try:
        wait_until(lambda: (tmp_path / "data" / "daemon.json").exists(), timeout=30)
        _seed_tasks(db, 6)
        wait_until(lambda: any(p.name.startswith("started-") for p in marker.iterdir()), timeout=30)
        wait_until(lambda: (marker / "crash-2").exists(), timeout=30)
        wait_until(lambda: (marker / "ticks").exists() and int((marker / "ticks").read_text() or 0) > 3, timeout=30)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=15)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert rc == 0, out
    assert elapsed < 5.0 + 3.0
    started = {p.name.split("-")[1] for p in marker.glob("started-*")}
    done = {p.name.split("-")[1] for p in marker.glob("done-*")}
    assert started and started == done, "in-flight work was not allowed to finish"
    con = sqlite3.connect(db)
    leased = con.execute("SELECT count(*) FROM task WHERE status='leased'").fetchone()[0]
    assert leased == 0
    # crashing service restarted while the others kept running
    assert len(list(marker.glob("crash-*"))) >= 2
    assert int((marker / "ticks").read_text()) > 3
    assert "service crasher crashed" in out
    # the secret never appears in the logs or the store
    assert SECRET not in out
    blob = db.read_bytes() + (db.with_name("clkt.db-wal").read_bytes() if db.with_name("clkt.db-wal").exists() else b"")
    assert SECRET.encode() not in blob
    assert not (tmp_path / "data" / "daemon.json").exists()


def test_second_daemon_is_refused_and_port_in_use_is_reported(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    marker, log = tmp_path / "m", tmp_path / "d1.log"
    first = _start(cfg, marker, log)
    try:
        wait_until(lambda: (tmp_path / "data" / "daemon.json").exists(), timeout=30)
        info = json.loads((tmp_path / "data" / "daemon.json").read_text())
        second = subprocess.run(
            [sys.executable, str(REPO / "tests/daemon/_app.py"), str(cfg), str(tmp_path / "m2")],
            capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert second.returncode == 2
        assert "another clkt daemon is already running" in second.stderr
        assert str(info["pid"]) in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=20) == 0

    # port in use -> clear error, exit 2
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        cfg2 = _config(tmp_path / "p", port=port) if (tmp_path / "p").mkdir() is None else None
        assert cfg2 is not None
        res = subprocess.run(
            [sys.executable, str(REPO / "tests/daemon/_app.py"), str(cfg2), str(tmp_path / "m3")],
            capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert res.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in res.stderr


def test_restart_after_kill_refunds_interrupted_attempts(tmp_path: Path) -> None:
    """Work a killed daemon held is claimable again at restart, its try refunded (kills are not failures)."""
    cfg = _config(tmp_path)
    db = tmp_path / "data" / "clkt.db"
    marker, log = tmp_path / "m", tmp_path / "daemon.log"
    first = _start(cfg, marker, log)
    wait_until(lambda: (tmp_path / "data" / "daemon.json").exists(), timeout=30)
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=20) == 0
    _seed_tasks(db, 1)
    con = sqlite3.connect(db)
    # as a daemon killed with SIGKILL on the task's last allowed try leaves it
    con.execute("UPDATE task SET status='leased', lease_owner='gone:1:x', attempts=5, max_attempts=5,"
                " lease_expires_at='2999-01-01 00:00:00'")
    con.commit()
    con.close()
    proc = _start(cfg, marker, log)
    try:
        wait_until(lambda: any(marker.glob("done-*")), timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    con = sqlite3.connect(db)
    assert con.execute("SELECT status, attempts FROM task").fetchall() == [("done", 5)]
    assert "recovered 1 stage leases" in log.read_text()


def test_sigterm_during_startup_is_a_clean_stop(tmp_path: Path) -> None:
    """The real entry point on the offline default: a SIGTERM while it is still starting exits 0."""
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f'offline_demo = true\ndata_dir = "{tmp_path / "data"}"\n[gpu]\nenabled = false\n')
    log = tmp_path / "d.log"
    proc = subprocess.Popen([sys.executable, str(REPO / "run_daemon.py"), "--config", str(cfg)], stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        # the entry point's first act is to catch SIGTERM (`remember_early_stops`): the signal goes in then,
        # while clkt's heavy imports and start-up still run
        wait_until(lambda: handles_signal(proc.pid, signal.SIGTERM) or proc.poll() is not None, timeout=60,
                   what="run_daemon.py to catch SIGTERM")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 0, log.read_text()[-3000:]

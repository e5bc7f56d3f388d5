"""SIGTERM edge cases of the real entry points: one in the first moments of `clkt run`, a second one while
stopping, and a stop that does not wait for a worker thread still converting a model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, handles_signal, wait_until


def test_clkt_run_sigterm_early_and_twice_is_a_clean_stop(tmp_path: Path) -> None:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f'offline_demo = true\ndata_dir = "{tmp_path / "data"}"\n[gpu]\nenabled = false\n')
    log = tmp_path / "d.log"
    proc = subprocess.Popen([sys.executable, "-m", "clkt.cli", "run", "--config", str(cfg)], stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        # the CLI's first act is to catch SIGTERM (`remember_early_stops`): the signal goes in then, inside the
        # CLI's own imports, before any daemon code runs
        wait_until(lambda: handles_signal(proc.pid, signal.SIGTERM) or proc.poll() is not None, timeout=60,
                   what="clkt run to catch SIGTERM")
        proc.send_signal(signal.SIGTERM)
        # a second one while stopping: once the daemon says it stops (or the process has already ended)
        wait_until(lambda: proc.poll() is not None or "stopping (" in log.read_text(), timeout=60,
                   what="the daemon to say it stops")
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()


def test_the_process_exits_without_waiting_for_a_worker_thread(tmp_path: Path) -> None:
    script = (
        "import asyncio, time\n"
        "from clkt.process import exit_now_if_threads_linger, run_without_waiting_for_threads\n"
        "async def main():\n"
        "    asyncio.get_running_loop().run_in_executor(None, time.sleep, 60)  # a long model conversion\n"
        "    await asyncio.sleep(0.1)  # the daemon's short run (not a wait), then it returns\n"
        "    return 0\n"
        "rc = run_without_waiting_for_threads(main())\n"
        "exit_now_if_threads_linger(rc)\n"
        "raise SystemExit(3)  # not reached when a thread lingers\n"
    )
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-c", script], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 < 20  # not the thread's 60 s


def test_a_daemon_that_cannot_start_says_so_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file where the data directory belongs")
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n[gpu]\nenabled = false\n')
    res = subprocess.run([sys.executable, "run_daemon.py", "--config", str(cfg)], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("clkt:")]
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert len(errors) == 1 and "File exists" in errors[0] and str(tmp_path / "data") in errors[0]

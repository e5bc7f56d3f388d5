"""A GPU job on a Ray worker node: the actor that runs `python -m clkt.inject.run_job` there (`JobRunner`).

The driver creates one detached, named actor per job (`job-<store key>-<job id>`), asking Ray for the job's
`num_gpus`, `num_cpus` and custom resources; Ray places it on a node that has them and sets its
`CUDA_VISIBLE_DEVICES`. The actor unpacks the snapshot and the base answers it was given into a scratch folder
under the node's `worker_dir`, writes a spec with the node's own paths (device `auto`: the GPUs Ray gave it),
and starts the job process, which dies with the actor (see `run_job`). It answers `poll` (still running? the
job's progress, and whether base answers appeared), `base_files` and `collect` (what travels back:
`clkt.inject.bundles`), and `close` (the scratch folder removed).

Detached, it outlives a daemon killed mid-job: the next daemon's driver finds it by name and collects it. One
that nobody polls for `UNCLAIMED_TTL_S` after its job ended removes its folder and exits, so a daemon that never
comes back leaves no GPU held.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import ClassVar

from clkt.inject.bundles import artifacts_bundle, pack, unpack
from clkt.inject.contract import JobSpec, write_json_atomic
from clkt.inject.ray_protocol import RunnerStatus
from clkt.layout import BASE_DIR, JOBS_DIR, LOG_FILE, PROGRESS_FILE, SPEC_FILE

__all__ = ["JobRunner", "worker_root"]

log = logging.getLogger(__name__)


def worker_root(worker_dir: str | None) -> Path:
    return Path(worker_dir) if worker_dir else Path(tempfile.gettempdir()) / "clkt-ray"


class JobRunner:
    """Runs one job on the node it was placed on (methods are called by the driver through Ray)."""

    UNCLAIMED_TTL_S: ClassVar[float] = 3600.0
    KILL_GRACE_S: ClassVar[float] = 10.0

    def __init__(self, spec_json: str, fingerprint: str, snapshot: bytes, base: bytes, worker_dir: str | None) -> None:
        spec = JobSpec.model_validate_json(spec_json)
        root = worker_root(worker_dir)
        self.fp = fingerprint
        self.work = root / JOBS_DIR / f"{spec.job_id}-{fingerprint[:12]}"
        shutil.rmtree(self.work, ignore_errors=True)
        unpack(snapshot, self.work / "snapshot")
        self.base_dir = self.work / BASE_DIR
        self.shipped = set(unpack(base, self.base_dir))
        self.artifacts = self.work / "artifacts"
        self.artifacts.mkdir(parents=True)
        local = spec.model_copy(update={
            "snapshot_dir": self.work / "snapshot", "data_dir": root, "artifacts_dir": self.artifacts,
            "base_cache_dir": self.base_dir, "device": "auto",
        })
        spec_path = self.artifacts / SPEC_FILE
        write_json_atomic(spec_path, local)
        self.node = _node_name()
        with (self.artifacts / LOG_FILE).open("ab") as logf:
            logf.write(f"--- job {spec.job_id} on Ray node {self.node} ---\n".encode())
            logf.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "clkt.inject.run_job", str(spec_path)], stdout=logf, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(self.work),
            )
        self.last_contact = time.monotonic()
        self._closed = False
        threading.Thread(target=self._watch, name="job-runner-watchdog", daemon=True).start()

    def fingerprint(self) -> str:
        self.last_contact = time.monotonic()
        return self.fp

    def poll(self) -> str:
        self.last_contact = time.monotonic()
        try:
            progress: str | None = (self.artifacts / PROGRESS_FILE).read_text(encoding="utf-8")
        except OSError:
            progress = None
        return RunnerStatus(
            fingerprint=self.fp, node=self.node, returncode=self.proc.poll(), progress=progress,
            base_ready=any(p.name not in self.shipped for p in self.base_dir.glob("*.jsonl")),
        ).model_dump_json()

    def base_files(self) -> bytes:
        """The base answers the job computed (not those it was given)."""
        self.last_contact = time.monotonic()
        return pack((p.name, p.read_bytes()) for p in sorted(self.base_dir.glob("*.jsonl")) if p.name not in self.shipped)

    def collect(self) -> bytes:
        self.last_contact = time.monotonic()
        return artifacts_bundle(self.artifacts, base_dir=self.base_dir, shipped=self.shipped)

    def stop(self) -> None:
        """End the job process (SIGTERM, then SIGKILL)."""
        self.last_contact = time.monotonic()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                return
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=self.KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                continue

    def close(self) -> None:
        """Stop the job and remove its scratch folder (the driver kills the actor next)."""
        self._closed = True
        self.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def _watch(self) -> None:
        while not self._closed:
            time.sleep(min(30.0, self.UNCLAIMED_TTL_S / 4))
            if self.proc.poll() is not None and time.monotonic() - self.last_contact > self.UNCLAIMED_TTL_S:
                log.warning("job runner %s: finished and unclaimed for %.0f s; exiting", self.work.name, self.UNCLAIMED_TTL_S)
                shutil.rmtree(self.work, ignore_errors=True)
                os._exit(0)


def _node_name() -> str:
    try:
        import ray

        node = ray.get_runtime_context().get_node_id()[:8]
    except Exception:  # noqa: BLE001 - outside Ray (tests of the class itself)
        node = "?"
    return f"{socket.gethostname()}/{node}"

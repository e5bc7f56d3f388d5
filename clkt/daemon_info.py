"""The daemon's info file, `<data_dir>/daemon.json`: pid, host, lease owner id, HTTP port, start time.

Written atomically once the daemon is up (tools and tests read the bound port from it), removed at a clean
stop; a second daemon refused by the store lock names the holder from it.
"""

from __future__ import annotations

import json
import os
import socket
from contextlib import suppress
from pathlib import Path

from storage.types import utcnow

__all__ = ["daemon_info_path", "describe_holder", "remove_daemon_info", "write_daemon_info"]


def daemon_info_path(data_dir: Path) -> Path:
    return data_dir / "daemon.json"


def write_daemon_info(
    data_dir: Path, *, owner: str, http_host: str, http_port: int | None, offline_demo: bool
) -> None:
    info = {
        "pid": os.getpid(), "host": socket.gethostname(), "owner": owner, "http_port": http_port,
        "http_host": http_host, "started_at": utcnow().isoformat(), "offline_demo": offline_demo,
    }
    path = daemon_info_path(data_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=2))
    tmp.replace(path)


def remove_daemon_info(data_dir: Path) -> None:
    with suppress(OSError):
        daemon_info_path(data_dir).unlink()


def describe_holder(data_dir: Path) -> str:
    """Who runs the daemon on this data directory, as far as its info file says."""
    try:
        data = json.loads(daemon_info_path(data_dir).read_text())
        return f"pid {data.get('pid')} on {data.get('host')}, started {data.get('started_at')}"
    except (OSError, ValueError, AttributeError):
        return "holder unknown"

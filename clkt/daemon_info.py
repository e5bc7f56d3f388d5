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

from clkt.config import Settings
from storage.types import utcnow

__all__ = ["daemon_info_path", "describe_holder", "remove_daemon_info", "write_daemon_info"]


def daemon_info_path(settings: Settings) -> Path:
    return settings.data_dir / "daemon.json"


def write_daemon_info(settings: Settings, *, owner: str, http_port: int | None) -> None:
    info = {
        "pid": os.getpid(), "host": socket.gethostname(), "owner": owner, "http_port": http_port,
        "http_host": settings.http.host, "started_at": utcnow().isoformat(), "offline_demo": settings.offline_demo,
    }
    path = daemon_info_path(settings)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=2))
    tmp.replace(path)


def remove_daemon_info(settings: Settings) -> None:
    with suppress(OSError):
        daemon_info_path(settings).unlink()


def describe_holder(settings: Settings) -> str:
    """Who runs the daemon on this data directory, as far as its info file says."""
    try:
        data = json.loads(daemon_info_path(settings).read_text())
        return f"pid {data.get('pid')} on {data.get('host')}, started {data.get('started_at')}"
    except (OSError, ValueError, AttributeError):
        return "holder unknown"

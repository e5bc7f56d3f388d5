"""Lease owner ids: `<host>:<pid>:<nonce>`, and whether the process behind one is gone.

The daemon and `clkt worker` name themselves this way in every lease they take; at start the daemon puts
back the GPU-job leases of processes of this host that no longer exist (`is_dead_local_owner`).
"""

from __future__ import annotations

import os
import socket
import uuid

__all__ = ["is_dead_local_owner", "new_owner_id"]


def new_owner_id(prefix: str = "") -> str:
    """A fresh owner id for this process; `prefix` marks its kind (e.g. "worker-")."""
    return f"{socket.gethostname()}:{os.getpid()}:{prefix}{uuid.uuid4().hex[:8]}"


def is_dead_local_owner(owner: str | None, host: str | None = None) -> bool:
    """`owner` names a process of this host (or of `host`) that no longer exists."""
    if not owner:
        return False
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != (host or socket.gethostname()) or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False

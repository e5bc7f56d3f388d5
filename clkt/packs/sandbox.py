"""A pack archive from a stranger verified in a child process with memory and time limits.

`read_pack_isolated(archive)` hands it to a `python -m clkt.packs.sandbox` child (started ahead, `_Spare`, with an
environment of its own: no secret of the service's reaches it): the child lowers its own limits first
(`resource.setrlimit`: its address space to `MEMORY_BYTES`, its CPU time to `TIME_S`, the largest file it may write
to the archive's decompressed limit), then extracts the archive (`clkt.packs.archive.SafeExtract`, every limit counted
on the stream) into a private folder and reads every file against the manifest (`clkt.packs.pack.read_pack`). It
answers one JSON line: the folder the pack's files are in, or the one line that refuses it. Only then does the caller
read the verified folder. A child that passes a limit or dies is one refusal (`UserError`) naming the limit; the
caller's process never holds more of the archive than its name, and the folder is removed whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import ClassVar

from clkt.errors import UserError
from clkt.packs._tarstream import Limits
from clkt.packs.archive import SafeExtract
from clkt.packs.pack import Pack, read_pack

__all__ = ["Sandbox", "read_pack_isolated"]


class Sandbox:
    """The child's limits (class constants: tests and the bench change them)."""

    MEMORY_BYTES: ClassVar[int] = 1 << 30  # the child's address space (Python and pydantic take ~250 MB of it)
    TIME_S: ClassVar[int] = 60  # the child's CPU seconds; its wall clock is allowed twice that


def _answer(out: bytes, code: int, shown: str) -> str:
    """The child's folder, or `UserError` with its refusal (or why it died)."""
    try:
        said = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
    except (IndexError, ValueError):
        said = None
    if isinstance(said, dict) and isinstance(said.get("error"), str):
        raise UserError(said["error"])
    if code == 0 and isinstance(said, dict) and isinstance(said.get("root"), str):
        return str(said["root"])
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise UserError(f"pack {shown}: its verification passed the {Sandbox.TIME_S} s CPU limit; refused")
    raise UserError(f"pack {shown}: its verification passed the {Sandbox.MEMORY_BYTES:,}-byte memory limit or "
                    f"failed (the verifier exited with {code}); refused")


def _child_env() -> dict[str, str]:
    """The child's whole environment: where clkt is, nothing else (no secret of this process reaches it)."""
    return {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PYTHONNOUSERSITE": "1", "LC_ALL": "C.UTF-8"}


class _Spare:
    """One verifier child started ahead of the upload it will verify: its interpreter and imports (a few tenths of a
    second, most of a refusal's time) are paid while the service waits for the next upload. It reads one job line
    and exits; each upload takes the spare and starts the next one, so no child ever verifies two packs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: subprocess.Popen[bytes] | None = None

    @staticmethod
    def _start() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "clkt.packs.sandbox"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_child_env())

    def take(self) -> subprocess.Popen[bytes]:
        with self._lock:
            child, self._next = self._next, self._start()
        if child is None or child.poll() is not None:
            child = self._start()
        return child


_SPARE = _Spare()


@contextlib.contextmanager
def _verified_folder(archive: Path, shown: str) -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="clkt-verify-"))
    try:
        job = {"archive": str(archive), "dest": str(tmp / "x"), "shown": shown, "limits": asdict(SafeExtract.limits()),
               "memory": Sandbox.MEMORY_BYTES, "cpu": Sandbox.TIME_S}
        child = _SPARE.take()
        try:
            out, _ = child.communicate(json.dumps(job).encode() + b"\n", timeout=2 * Sandbox.TIME_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise UserError(f"pack {shown}: its verification passed {2 * Sandbox.TIME_S} s; refused") from None
        yield Path(_answer(out, child.returncode, shown))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_pack_isolated(archive: Path, *, shown: str | None = None) -> Pack:
    """The pack in `archive`, verified first in a limited child (see the module docstring); `shown` names the archive
    in a refusal in place of its path."""
    name = shown or str(archive)
    with _verified_folder(archive, name) as root:
        pack = read_pack(root)
    return replace(pack, source=Path(name))  # every file it read (the probe answers too), named as shown


def _limit(kind: int, value: int) -> None:
    _, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def _child() -> int:
    """A spare's life: wait for one job line (`_verified_folder`), lower the limits, verify, answer one line."""
    line = sys.stdin.buffer.readline(1 << 16)
    if not line.strip():
        return 0  # the service went away before sending a job
    job = json.loads(line)
    shown, archive = str(job["shown"]), str(job["archive"])
    limits = Limits(**job["limits"])
    _limit(resource.RLIMIT_AS, int(job["memory"]))
    _limit(resource.RLIMIT_CPU, int(job["cpu"]))
    _limit(resource.RLIMIT_FSIZE, limits.unpacked_bytes + (1 << 20))
    root = Path(job["dest"])
    try:
        root.mkdir()
        root = SafeExtract(Path(archive), limits=limits).extract(root)
        read_pack(root)
    except UserError as e:
        print(json.dumps({"error": str(e).replace(archive, shown).replace(str(root), shown)}))
        return 1
    except MemoryError:
        print(json.dumps({"error": f"pack {shown}: its verification passed the {int(job['memory']):,}-byte memory "
                                   "limit; refused"}))
        return 1
    print(json.dumps({"root": str(root)}))
    return 0


if __name__ == "__main__":
    sys.exit(_child())

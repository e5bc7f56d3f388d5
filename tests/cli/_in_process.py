"""`clkt ARGS` run by `clkt.cli.main` in this process, as `python -m clkt.cli ARGS` would run it: its exit code,
stdout and stderr. A process costs a second or more of imports each time (the whole CLI, SQLAlchemy, pydantic,
matplotlib for a report); the tests that check what a command prints, writes and exits with run it here. What
only a process shows stays a process: signals and the daemon (`tests/daemon`), `clkt worker`, a server's port
(`test_serve.py`), the imports of `--help` (`test_main.py`).

The command runs in a thread of its own (its `asyncio.run` cannot run inside an async test's loop), with the
consoles `columns` wide (what COLUMNS gives a process) and writing to buffers."""

from __future__ import annotations

import io
import threading
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import pytest

__all__ = ["Ran", "clkt"]


@dataclass(frozen=True)
class Ran:
    """What a command left: the names of `subprocess.CompletedProcess`'s fields, for the tests written for one."""

    returncode: int
    stdout: str
    stderr: str


def _code(e: SystemExit) -> int:
    return e.code if isinstance(e.code, int) else 0 if e.code is None else 1


def clkt(*args: str, columns: int = 200, timeout_s: float = 120.0) -> Ran:
    import clkt.cli as cli
    from clkt.cli import common

    got: list[Ran] = []

    def run() -> None:
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with redirect_stdout(out), redirect_stderr(err):
            try:
                cli.main(list(args))
            except SystemExit as e:
                code = _code(e)
        got.append(Ran(returncode=code, stdout=out.getvalue(), stderr=err.getvalue()))

    with pytest.MonkeyPatch.context() as mp:
        for console in (common.console, common.err_console):
            mp.setattr(console, "_width", columns)  # what `width = ...` sets; the console reads COLUMNS only once
        thread = threading.Thread(target=run, name=f"clkt {' '.join(args[:1])}")
        thread.start()
        thread.join(timeout_s)
    assert not thread.is_alive(), f"clkt {' '.join(args)} still runs after {timeout_s:.0f} s"
    (ran,) = got
    return ran

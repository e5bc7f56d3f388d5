"""Where a GPU job runs: the engine behind the consumer (`JobEngine`), a run in progress (`RunningJob`), and how
a run ends (`JobEnd`).

The consumer (`clkt.inject.consumer`) owns the queue and the store: it claims a job, writes its spec to
`<data_dir>/jobs/<id>/spec.json`, hands it to the engine, heartbeats the lease while the engine runs it, and
commits what the run left in that folder (`outcome.json` or `failure.json`, `predictions.jsonl`, the
checkpoints) in one transaction. An engine only runs jobs, and leaves their files in that folder:

- `LocalEngine` (`[gpu] engine = "local"`, the default): one child process per job on this machine, one job at
  a time per configured device (`clkt.inject.local_engine`);
- `RayEngine` (`engine = "ray"`): each job is Ray work on an existing cluster, its inputs shipped with it and
  its outputs brought back (`clkt.inject.ray_engine`).

`clkt.inject.consumer.build_engine` picks one from `gpu.engine`. An engine says whether jobs can start now
(`status()`: ready, or why not: the cluster is unreachable, or no node offers what a job asks for); the
consumer claims only when it is ready, and records why it waits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from clkt.inject.contract import JobSpec

__all__ = ["EndKind", "EngineState", "EngineStatus", "JobEnd", "JobEngine", "RunningJob"]


class EngineState(str, Enum):
    ready = "ready"  # jobs can start
    connecting = "connecting"  # not connected yet
    unreachable = "unreachable"  # the cluster cannot be reached (its reason in the detail); retried
    unschedulable = "unschedulable"  # no node offers what a job asks for (the request and the nodes in the detail)
    stopped = "stopped"


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineStatus:
    engine: str  # "local" | "ray"
    state: EngineState
    detail: str = ""  # why jobs wait; for a ready cluster, what it offers
    address: str | None = None

    @property
    def claimable(self) -> bool:
        return self.state is EngineState.ready


class EndKind(str, Enum):
    exited = "exited"  # the job process ended: its files say how (outcome.json, failure.json, or neither)
    lost = "lost"  # the machine that ran it was lost (a cluster node): it runs again elsewhere
    unavailable = "unavailable"  # the engine went away (the cluster became unreachable): handed back, not failed


@dataclass(frozen=True, slots=True, kw_only=True)
class JobEnd:
    kind: EndKind
    returncode: int | None = None  # `exited`: the job process's exit status (negative: killed by that signal)
    detail: str = ""
    where: str = ""  # where it ran ("local", "ray:<node>")


class RunningJob(ABC):
    """One job handed to an engine."""

    where: str = ""

    @abstractmethod
    async def wait(self, timeout_s: float) -> JobEnd | None:
        """How the run ended, or None when it is still running after `timeout_s` (real) seconds."""

    @abstractmethod
    async def stop(self) -> None:
        """End the run now (a timeout, a lost lease); returns once it has ended."""

    @abstractmethod
    async def hand_back(self) -> str:
        """The daemon stops: end the run or leave it running for the next daemon to find (the engine's choice);
        returns what happens to it, for the job's record."""


class JobEngine(ABC):
    """Runs GPU jobs; see the module's docstring."""

    name: ClassVar[str]

    @abstractmethod
    def slots(self) -> list[str]:
        """One name per job that may run at once (the consumer runs one claiming loop per slot)."""

    def device_of(self, slot: str) -> str:
        """The device a job on `slot` is told to use ("auto": the engine's node decides)."""
        return "auto"

    @abstractmethod
    def status(self) -> EngineStatus:
        """Whether jobs can start now, and why not."""

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Before the first job (connect)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """After the last job; runs still going are handed back first."""

    @abstractmethod
    async def submit(self, spec: JobSpec, spec_path: Path, *, slot: str) -> RunningJob:
        """Start (or find again) the run of `spec`, whose file is `spec_path`, on `slot`."""

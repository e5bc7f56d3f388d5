"""The messages between the daemon's `RayEngine` and its Ray driver process, one JSON object a line.

The daemon writes a `DriverConfig` line, then `Command`s (submit a job, stop one) on the driver's stdin; the
driver writes `Event`s on its stdout: its `StatusEvent` at start and every few seconds (connected or not, and
the cluster's nodes with their resources: also its heartbeat), and per job `StartedEvent` (on which node,
found again or started) and `EndedEvent`. Closing stdin ends the driver; the runs on the cluster go on, and
the next driver finds them by name. `RunnerStatus` is what a job's actor answers the driver's polls.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Command", "DriverConfig", "EndedEvent", "Event", "NodeInfo", "RunnerStatus", "StartedEvent", "StatusEvent",
    "StopCommand", "SubmitCommand", "fits", "job_request",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DriverConfig(_Model):
    address: str
    namespace: str
    store_key: str  # names this store's runs: `job-<store_key>-<job id>`
    num_gpus: float
    num_cpus: float
    resources: dict[str, float] = Field(default_factory=dict)
    worker_dir: str | None = None  # on the nodes (None: <tmp>/clkt-ray)
    status_every_s: float = 5.0
    connect_timeout_s: float = 60.0


class SubmitCommand(_Model):
    op: Literal["submit"] = "submit"
    job_id: int
    spec_path: str  # the job's spec.json in the daemon's data dir


class StopCommand(_Model):
    op: Literal["stop"] = "stop"
    job_id: int


Command = Annotated[SubmitCommand | StopCommand, Field(discriminator="op")]


class NodeInfo(_Model):
    node_id: str
    host: str
    alive: bool
    resources: dict[str, float] = Field(default_factory=dict)


class StatusEvent(_Model):
    ev: Literal["status"] = "status"
    state: Literal["ready", "unreachable"]
    detail: str = ""
    nodes: list[NodeInfo] = Field(default_factory=list)


class StartedEvent(_Model):
    ev: Literal["started"] = "started"
    job_id: int
    node: str = ""
    attached: bool = False  # True: a run of this job was already on the cluster (the daemon restarted)


class EndedEvent(_Model):
    ev: Literal["ended"] = "ended"
    job_id: int
    kind: Literal["exited", "lost", "unavailable"]
    returncode: int | None = None
    detail: str = ""
    node: str = ""


Event = Annotated[StatusEvent | StartedEvent | EndedEvent, Field(discriminator="ev")]


class RunnerStatus(_Model):
    fingerprint: str
    node: str
    returncode: int | None  # None: the job process still runs
    progress: str | None = None  # the job's progress.json, as written
    base_ready: bool = False  # the job wrote base answers it was not given


def job_request(*, num_gpus: float, num_cpus: float, resources: dict[str, float]) -> dict[str, float]:
    """The resources one job asks of a node."""
    req = {"GPU": num_gpus, **resources}
    if num_cpus > 0:
        req["CPU"] = num_cpus
    return req


def fits(request: dict[str, float], nodes: list[NodeInfo]) -> bool:
    """Whether some alive node offers every resource of `request` (in total, busy or not)."""
    return any(n.alive and all(n.resources.get(k, 0.0) >= v for k, v in request.items()) for n in nodes)

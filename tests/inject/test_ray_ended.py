"""On a real local Ray cluster (CPU only, `tests/inject/test_ray_cluster.py`'s): a run that ended and was brought
back while the daemon died before committing it is taken by the restarted daemon (its outcome committed), not run a
second time."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from clkt.context import ServiceContext
from clkt.inject.consumer import GpuConsumer
from clkt.layout import ENDED_FILE, LOG_FILE, OUTCOME_FILE, job_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.leases import recover_gpu_leases
from storage.models import LeaseStatus
from tests.inject._fixtures import make_consumer
from tests.inject.test_ray_cluster import (
    RESULTS_PER_JOB,
    LocalCluster,
    _jobs,
    _results,
    _seed,
    _settings,
    cluster,
    worker_dir,
)

__all__ = ["cluster", "worker_dir"]  # the module's fixtures, shared with test_ray_cluster.py

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


class _Died(BaseException):
    """The daemon dies between the run's end (its files brought back) and the commit."""


async def test_a_restarted_daemon_commits_the_ended_runs_outcome_instead_of_running_it_again(
    cluster: LocalCluster, tmp_path: Path, worker_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _settings(tmp_path, cluster.address, worker_dir)
    url = await _seed(tmp_path, settings, {"cpt-lora": {}})

    async def die(*_: object, **__: object) -> None:
        raise _Died

    async with Store(url=url) as store:
        with monkeypatch.context() as m:
            m.setattr(GpuConsumer, "_store_outcome", die)
            async with aiohttp.ClientSession() as http:
                with pytest.raises(_Died):
                    await make_consumer(settings, burst=True).run(
                        ServiceContext(store=store, http=http, owner="dead-daemon", metrics=Metrics()))
        (job,) = await _jobs(store)
        art = job_dir(settings.data_dir, job.id)
        assert job.status == LeaseStatus.leased and (art / ENDED_FILE).is_file() and (art / OUTCOME_FILE).is_file()
        outcome = (art / OUTCOME_FILE).read_bytes()
        async with store.transaction() as s:  # the next daemon's start: the dead one's lease is put back
            assert await recover_gpu_leases(s, is_dead=lambda owner: owner == "dead-daemon") == 1
        consumer = make_consumer(settings, burst=True)
        async with aiohttp.ClientSession() as http:
            await consumer.run(ServiceContext(store=store, http=http, owner="next-daemon", metrics=Metrics()))
        (job,) = await _jobs(store)
        assert job.status == LeaseStatus.done, job.last_error
        assert await _results(store, job.id) == RESULTS_PER_JOB  # committed once
    assert (art / OUTCOME_FILE).read_bytes() == outcome  # the first run's outcome, not a second run's
    assert (art / LOG_FILE).read_text().count("on Ray node") == 1  # one run on the cluster
    assert not (art / ENDED_FILE).exists()
    assert [r.status for r in consumer.finished] == [LeaseStatus.done]

"""Fixtures of the publishing tests: the stand-in Hub on loopback (`tests.fakes.hub_server.FakeHub`), a guard that
fails a test when anything tries to connect beyond loopback, settings pointing `[publish]` at the stand-in, and
real frozen snapshots with finished GPU jobs and a recorded report (`seed_snapshot`)."""

from __future__ import annotations

import json
import random
import socket
import traceback
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from clkt.config import Settings, load_settings
from clkt.context import ServiceContext
from clkt.owner import new_owner_id
from clkt.publish.publisher import Publisher
from clkt.publish.runner import TryResult, run_task
from clkt.services import snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.content import load_item_refs
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.publish import claim_publish_tasks, enqueue_publish
from storage.reports import finished_snapshots, record_report
from storage.snapshots import FrozenHook
from tests.fakes.hub_server import FakeHub
from tests.snapshots.factories import LANGS, fill_period, make_settings

TOKEN = "hf_clktTestTok3n0123456789abcdefXYZ"
REPO = "clkt-lab/live-bench"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every connection and name lookup of the test stays on loopback; an attempt elsewhere fails the test."""
    attempts: list[str] = []
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address[0] not in _LOOPBACK:
            attempts.append(f"connect {address!r}: " + "".join(traceback.format_stack(limit=12)))
            raise OSError(f"test: a connection to {address!r} (beyond loopback)")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and (host.decode() if isinstance(host, bytes) else str(host)) not in _LOOPBACK:
            attempts.append(f"resolve {host!r}: " + "".join(traceback.format_stack(limit=12)))
            raise socket.gaierror(socket.EAI_NONAME, f"test: no name lookup beyond loopback ({host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert attempts == [], f"something tried to leave loopback: {attempts}"


@pytest.fixture
def online_hub_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub read HF_HUB_OFFLINE=1 when it was imported (the suite runs offline): let it talk to the stand-in.
    Its LFS / Xet upload path (taken only for files the Hub's pre-upload calls `lfs`) fails the test if it is ever taken."""
    import huggingface_hub._commit_api
    import huggingface_hub.constants

    def no_lfs_or_xet(**_: Any) -> None:
        raise AssertionError("huggingface_hub took its LFS / Xet upload path: every file must travel inline")

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub._commit_api, "_upload_files", no_lfs_or_xet)


@pytest.fixture
async def hub(online_hub_client: None) -> AsyncIterator[FakeHub]:
    h = FakeHub(token=TOKEN)
    await h.start()
    try:
        yield h
    finally:
        await h.close()


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def publish_settings(
    tmp_path: Path, hub_url: str | None, *, environ: dict[str, str] | None = None, store_url: str | None = None,
    **publish: object,
) -> Settings:
    """The snapshot tests' settings (`make_settings`: 3 languages, monthly, quotas of 2) with `[publish]` pointed at the
    stand-in; the token in the environment given (default: HF_TOKEN)."""
    make_settings(tmp_path)
    toml = tmp_path / "clkt.toml"
    values: dict[str, object] = {"backoff_start_s": 0.05, "backoff_max_s": 0.2, **publish}
    if hub_url is not None:
        values["endpoint"] = hub_url
    lines = ["[publish]", *[f"{k} = {_toml(v)}" for k, v in values.items()]]
    text = toml.read_text().replace("[spec]\n", "[gpu]\nenabled = false\n[spec]\n")  # no GPU jobs of the spec
    if store_url is not None:
        text = f'store_url = "{store_url}"\n' + text
    toml.write_text(text + "\n".join(lines) + "\n")
    return load_settings(toml, environ={"HF_TOKEN": TOKEN} if environ is None else environ)


async def seed_snapshot(
    store: Store, settings: Settings, *, month: int, prefix: str, report: bool = True, on_frozen: FrozenHook | None = None,
) -> str:
    """Freeze the 2025-`month` snapshot (8 entities, 24 questions in 3 languages); with `report`, two finished GPU jobs
    (train en, fr) answered every question in every language and their report is recorded."""
    start = datetime(2025, month, 1, tzinfo=UTC)
    await fill_period(store, month_start=start, per_domain=2, prefix=prefix)
    res = await build_snapshot(store, snapshot_config(settings), period=f"2025-{month:02d}",
                               now=datetime(2025, month + 1, 3, tzinfo=UTC), on_frozen=on_frozen)
    assert res.snapshot_id is not None
    if report:
        await finish_jobs(store, res.snapshot_id, settings)
    return res.snapshot_id


OPEN_DIRECTOR = "Osric Palandri"
OPEN_TWIN_SLOTS = {"slot0": "director", "slot1": "release_date"}  # a movie's MCQs on the facts of its open questions


async def seed_open_snapshot(
    store: Store, settings: Settings, *, month: int, prefix: str, hook: FrozenHook | None = None,
) -> str:
    """The 2025-`month` snapshot with facts on its movies (so they have open questions; two of each movie's MCQs ask
    the facts of two of them: `OPEN_TWIN_SLOTS`), and a finished report."""
    from datetime import date

    from sqlalchemy import select

    from clkt.facts import FilmFacts
    from storage.models import Entity, Question

    start = datetime(2025, month, 1, tzinfo=UTC)
    await fill_period(store, month_start=start, per_domain=2, prefix=prefix)
    film = FilmFacts(title=f"Velmora {prefix}", release_date=date(2025, month, 2), directors=[f"{OPEN_DIRECTOR} {prefix}"],
                     runtime_min=90 + month)
    async with store.session() as s:
        for e in (await s.execute(select(Entity).where(Entity.domain == "movies"))).scalars():
            if e.external_id.startswith(prefix):
                e.facts = film.model_dump(mode="json")
                for q in (await s.execute(select(Question).where(Question.entity_id == e.id))).scalars():
                    q.slot = OPEN_TWIN_SLOTS.get(q.slot, q.slot)  # MCQs that ask what two open questions ask
        await s.commit()
    res = await build_snapshot(store, snapshot_config(settings), period=f"2025-{month:02d}",
                               now=datetime(2025, month + 1, 3, tzinfo=UTC), on_frozen=hook)
    assert res.snapshot_id is not None
    await finish_jobs(store, res.snapshot_id, settings)
    return res.snapshot_id


async def finish_jobs(store: Store, sid: str, settings: Settings) -> None:
    from sqlmodel import col, select

    from storage.models import GpuJob, LeaseStatus

    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=sid, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                               train_langs=["en", "fr"], config=settings.gpu, max_attempts=1)
    async with store.session() as s:
        items = await load_item_refs(s, sid)
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == sid))).scalars().all()
        for job in jobs:
            assert job.id is not None
            rng = random.Random(f"{sid}/{job.train_lang}")
            recs = [
                ResultRecord(question_id=it.question_row, lang=lang, variant=variant, scorer="option-loglik",
                             split=it.split, predicted=rng.choice("ABCD"), correct=rng.random() < (0.3 if variant == "base" else 0.7),
                             raw=f"answer {lang} {variant}")
                for it in items for lang in LANGS for variant in ("base", "injected")
            ]
            await write_job_results(s, job.id, recs)
            job.status, job.best_epoch, job.device, job.attempts = LeaseStatus.done, 1, "cpu", 1
    async with store.transaction() as s:
        fin = (await finished_snapshots(s, sid))[0]
        await record_report(s, snapshot_id=sid, fingerprint=fin.fingerprint, jobs=fin.jobs,
                            path=str(settings.data_dir / "reports" / sid))


async def publish_now(
    store: Store, settings: Settings, sid: str, *, repo: str = REPO, branch: str | None = None, private: bool = False,
    owner: str = "test:1:publisher",
) -> TryResult:
    """Ask for and run one publish try of `sid` the way `clkt snapshot publish` does."""
    from datetime import timedelta

    cfg = settings.publish
    publisher = Publisher(store=store, publish=cfg, hub=Publisher.hub_factory(cfg, settings.secret(cfg.token_env)),
                          staging_dir=settings.data_dir / "publish")
    async with store.transaction() as s:
        task = await enqueue_publish(s, repo=repo, branch=branch or cfg.revision, snapshot_id=sid, private=private,
                                     reason="test", max_attempts=cfg.max_attempts, urgent=True)
    async with store.transaction() as s:
        leases = await claim_publish_tasks(s, owner=owner, lease=timedelta(seconds=60), task_id=task.id)
    assert leases, "the publish task could not be claimed"
    return await run_task(store, leases[0], owner=owner, publisher=publisher, publish=cfg, lease_s=60)


@asynccontextmanager
async def service_ctx(store: Store) -> AsyncIterator[ServiceContext]:
    async with aiohttp.ClientSession() as http:
        yield ServiceContext(store=store, http=http, owner=new_owner_id("test-"), metrics=Metrics())


def held_test_items(frozen: Path) -> tuple[set[int], set[str]]:
    """The test split of a frozen folder: its qids and every language's question text."""
    qids: set[int] = set()
    texts: set[str] = set()
    for f in sorted((frozen / "questions").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["split"] == "test":
                qids.add(int(row["qid"]))
                texts.add(row["question"])
    return qids, texts


def leaks(hub: FakeHub, repo: str, needles: Iterable[str]) -> list[tuple[str, str, str]]:
    """(commit, path, needle) for every needle found in any byte of any file of any commit of the repo."""
    wanted = [(n, n.encode("utf-8")) for n in needles]
    return [(oid[:8], path, n) for oid, path, data in hub.every_committed_file(repo) for n, b in wanted if b in data]

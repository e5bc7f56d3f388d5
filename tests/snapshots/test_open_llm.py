"""The open track written by the LLM roles at freeze (`agents.backend = "llm"`), against the fake OpenAI-compatible
server on loopback: the questions frozen in every language and hashed, the control split's kept from its facts, the
snapshot loaded back from its files (never rewritten), the verifier's rejections counted in the manifest, and a build
without the LLM roles refused before anything is frozen."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from agents.cache import MemoryCallCache
from agents.llm import LlmBackend
from clkt.config import AgentSettings, Settings
from clkt.errors import SnapshotError, UserError
from clkt.openqa.frozen import load_open_questions
from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildResult, build_snapshot
from clkt.snapshots.layout import load_snapshot_dir
from clkt.snapshots.stored import load_snapshot
from storage.engine import Store
from storage.models import Snapshot
from tests.fakes.openai_server import FakeOpenAI
from tests.snapshots.factories import LANGS, fill_period, make_settings, state_numbers

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)
ENTITIES = 8  # fill_period's 2 per domain


pytestmark = pytest.mark.usefixtures("loopback_models")  # only the fake server on 127.0.0.1 is reached


def llm_settings(tmp_path: Path, fake_openai: FakeOpenAI, *, concurrency: int = 4) -> Settings:
    s = make_settings(tmp_path)
    agents = AgentSettings.model_validate({
        "backend": "llm", "judge_model": "fake:judge", "generator_model": "fake:gen", "verifier_model": "fake:verifier",
        "translator_model": "fake:translator", "output_retries": 1, "concurrency": concurrency,
        "providers": {"fake": {"base_url": fake_openai.base_url, "rpm": 6000, "tpm": 10_000_000, "timeout_s": 5.0,
                               "max_attempts": 1}},
    })
    return s.model_copy(update={"agents": agents})


async def fill(store: Store) -> None:
    """The period's entities, each English document stating one number the fake writer asks about."""
    await fill_period(store, month_start=JUNE, per_domain=2)
    await state_numbers(store)


async def build(store: Store, settings: Settings) -> BuildResult:
    roles = LlmBackend(agents=settings.agents, languages=settings.spec.languages, cache=MemoryCallCache())
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW, open_roles=roles)
    assert res.path is not None and res.snapshot_id is not None
    return res


@pytest.fixture
async def frozen(store: Store, tmp_path: Path, fake_openai: FakeOpenAI) -> BuildResult:
    """A snapshot of the period's entities whose open track the LLM roles wrote."""
    await fill(store)
    return await build(store, llm_settings(tmp_path, fake_openai))


async def test_the_llm_roles_write_the_open_track_at_freeze(
    store: Store, frozen: BuildResult, fake_openai: FakeOpenAI,
) -> None:
    res = frozen
    assert res.path is not None
    manifest = load_snapshot_dir(res.path).manifest  # every file's hash checks
    info = manifest.open
    assert info is not None and info.engine == "open-llm-1"
    assert (info.questions, info.entities, info.entities_without, info.dropped, info.refused, info.failed) == (
        ENTITIES, ENTITIES, 0, 0, 0, 0)
    assert info.control_questions > 0  # the control split's, from its facts
    assert {k: manifest.agents.prompt_versions[k] for k in ("generate_open", "verify_open", "translate_open")} == {
        "generate_open": ["generate_open.v1"], "verify_open": ["verify_open.v1"], "translate_open": ["translate_open.v1"]}
    real = load_open_questions(res.path)
    assert len(real) == ENTITIES and all(q.question.kind.value == "number" for q in real)
    for q in real:
        assert q.question.langs == tuple(sorted(LANGS))
        golds = {q.question.gold(lang).answer for lang in LANGS}  # the fake translator keeps the number
        assert len(golds) == 1 and 2000 < int(golds.pop()) < 3000
    assert {q.source for q in load_open_questions(res.path, control=True)} == {"control"}
    # writer + verifier + a translation per other language, per entity: the roles were asked through the stack
    assert len(fake_openai.stats.requests) == ENTITIES * (1 + 1 + (len(LANGS) - 1))
    async with store.session() as s:  # loaded back from the files: the content hash checks the rows
        loaded = await load_snapshot(s, res.snapshot_id or "")
    assert loaded.manifest.open == info and len(loaded.content.open_questions) == ENTITIES * len(LANGS)
    assert {r.question for r in loaded.content.open_in("fr")} == {q.question.questions["fr"] for q in real}


async def test_a_missing_open_file_of_an_llm_track_is_named(store: Store, frozen: BuildResult) -> None:
    res = frozen
    assert res.path is not None
    (res.path / "open" / "fr.jsonl").unlink()
    async with store.session() as s:
        with pytest.raises(SnapshotError, match=r"open-track file open/fr\.jsonl is missing"):
            await load_snapshot(s, res.snapshot_id or "")


async def test_the_verifiers_rejection_is_counted_in_the_manifest(
    store: Store, tmp_path: Path, fake_openai: FakeOpenAI,
) -> None:
    await fill(store)
    rejected = {"answerable": True, "supported": False, "not_given_away": True,
                "reasons": {"supported": "the document gives no attendance"}}
    fake_openai.script.extend([{}, {"args": rejected}])  # the first entity's writer, then its verifier (one at a time)
    res = await build(store, llm_settings(tmp_path, fake_openai, concurrency=1))
    assert res.path is not None
    info = load_snapshot_dir(res.path).manifest.open
    assert info is not None and (info.questions, info.entities_without, info.dropped) == (ENTITIES - 1, 1, 1)


async def test_an_llm_backend_without_its_roles_freezes_nothing(
    store: Store, tmp_path: Path, fake_openai: FakeOpenAI,
) -> None:
    await fill(store)
    with pytest.raises(UserError, match=r"agents\.backend = 'llm' writes the open track"):
        await build_snapshot(store, snapshot_config(llm_settings(tmp_path, fake_openai)), period="2025-06", now=NOW)
    async with store.session() as s:
        assert (await s.execute(select(func.count()).select_from(Snapshot))).scalar_one() == 0
    assert not fake_openai.stats.requests


async def test_entities_are_asked_concurrently_within_the_bound(store: Store, tmp_path: Path) -> None:
    await fill(store)
    async with FakeOpenAI(latency_ms=30, latency_sigma=0.0) as slow:
        res = await build(store, llm_settings(tmp_path, slow, concurrency=2))
        assert slow.stats.max_in_flight == 2  # two entities at once, each one call at a time
    assert res.path is not None
    info = load_snapshot_dir(res.path).manifest.open
    assert info is not None and info.questions == ENTITIES

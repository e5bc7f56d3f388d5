"""Stage `probe`: does any target model already know the entity? (one task per entity, key "")

For every target of the spec and every spec language, the target is asked at temperature 0 "Provide a
brief factual summary of '<name>'." (translated; chat template for instruct models, a plain completion
prompt for base models: `clkt.targets.summary.build_probe_prompt`), and the backend's judge compares each
answer with the English document and facts. Judged probes are stored as they are made (unique per
entity, target, language), so a re-run only asks what is missing. Known by ANY target in ANY language →
the entity is `known` (dropped; probing stops at the first hit); otherwise it advances along the flow
(`generating` + a generate task). A known entity still gets its questions, for the locality split of the
snapshots (`clkt.snapshots.locality`: what an injection keeps of what the target knew), while fewer than
`locality_entities` entities of its month of occurrence have: a generate task keyed `LOCALITY_KEY` carries it
through generate, verify and translate, and it stays `known` (never selected as a real entity). Concurrent
probes may pass the bound by a few; the builder takes at most `snapshot.locality_entities` per snapshot.

A task whose key names a target (`probe_only_key(name)`) asks only that target, in every spec language (up to
its first "known"), stores the verdicts and changes nothing else: not the entity's status, no next stage, and
when its tries are spent it fails alone (the entity keeps its status).
Such tasks observe: a target added after a snapshot froze is asked about that snapshot's entities, and entities
the gate turned away are sampled to see what a target knew before its declared cutoff. A key naming a target
that is not (or no longer) in the spec finishes the task with nothing asked. The worker keeps `OBSERVE_SLOTS` of
its slots for observing tasks while any wait (`ProbeWorker.claim`): a target added to a long history catches up
beside the new entities, whose probes a period's snapshot waits for and which take every other slot; either kind
takes the slots the other leaves free. (Claiming own probes first and observing ones only in the gaps starved the
catch-up: in a year run the backlog of ~180 stayed for five simulated months.)

Local targets run through transformers in the process's one model thread (`clkt.cpu_share.run_model_work`: one
generation at a time; the model stays loaded between tasks); the worker probes up to `CONCURRENCY` entities at once and a `PromptBatcher`
gathers their prompts into one generation per target (`clkt.targets.batching`: greedy decoding of a small
batch costs about as much as of one prompt; while entities arrive steadily, a prompt waits up to half a minute for
enough neighbours to fill a batch). `backend = "openai"` targets are asked over HTTP (e.g. a vLLM
server), one request per prompt. `backend = "api"` targets (a model string the agents accept) are asked through
the agents' model stack (`clkt.targets.api`: the provider's limiter, the LLM call cache, the budget); a provider
without a key stops the start (`ProbeWorker.from_config`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Self

import aiohttp
from pydantic import SecretStr

from clkt import cpu_share
from clkt.config import AgentSettings, DaemonSettings, SecretLookup, SpecSettings, TargetSettings
from clkt.context import ServiceContext
from clkt.errors import AgentError, ModelUnavailableError
from clkt.facts import EntityFacts, RenderedDocument
from clkt.pipeline._entities import facts_of, load_entity, paid, source_document
from clkt.pipeline.backends import backend_for
from clkt.pipeline.batches import prefetch
from clkt.pipeline.stage_worker import LOCALITY_KEY, StageConfig, StageWorker, Step, finish
from clkt.targets.api import ApiTargets, api_targets_for, check_api_targets, is_api_target
from clkt.targets.batching import PromptBatcher
from clkt.targets.summary import PROBE_PROMPT_VERSION, build_probe_prompt, probe_texts
from storage.engine import Session
from storage.entities import set_status
from storage.enums import EntityStatus, Stage
from storage.questions import ProbeRecord, add_probes, probes_of
from storage.tasks import TaskLease, claim_tasks, count_keyed_tasks, enqueue
from storage.types import utcnow

__all__ = ["ProbeFn", "ProbeWorker", "probe_only_key", "probe_target", "target_of_key"]

# (target, prompts, ctx) -> one answer per prompt
ProbeFn = Callable[[TargetSettings, list[str], ServiceContext], Awaitable[list[str]]]

_OPEN = {EntityStatus.discovered, EntityStatus.probing, EntityStatus.generating}


async def probe_target(
    target: TargetSettings, prompts: list[str], *, http: aiohttp.ClientSession, max_new_tokens: int, data_dir: Path,
    device: str, api_key: SecretStr | None = None,
) -> list[str]:
    """Greedy answers of `target` to `prompts` (local transformers on `device`, or an OpenAI-compatible endpoint
    with `api_key`), at most `max_new_tokens` each."""
    if target.backend == "openai":
        return [await _ask_openai(target, p, http=http, max_new=max_new_tokens, key=api_key) for p in prompts]
    return await cpu_share.run_model_work(
        partial(probe_texts, target, prompts, data_dir=data_dir, device=device, max_new_tokens=max_new_tokens)
    )


async def _ask_openai(
    target: TargetSettings, prompt: str, *, http: aiohttp.ClientSession, max_new: int, key: SecretStr | None
) -> str:
    if not target.base_url:
        raise ModelUnavailableError(f"target {target.name}: backend 'openai' needs base_url")
    headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key is not None else {}
    base = target.base_url.rstrip("/")
    model = target.model
    body: dict[str, Any] = {"model": model, "temperature": 0, "max_tokens": max_new}
    if target.kind == "instruct":
        url, body["messages"] = f"{base}/chat/completions", [{"role": "user", "content": prompt}]
    else:
        url, body["prompt"] = f"{base}/completions", prompt
    async with http.post(url, json=body, headers=headers) as resp:
        if resp.status >= 400:
            raise ModelUnavailableError(f"target {target.name}: HTTP {resp.status} from {url}")
        data = await resp.json()
    choice = data["choices"][0]
    text = choice["message"]["content"] if target.kind == "instruct" else choice["text"]
    return str(text or "").strip()


class ProbeWorker(StageWorker):
    CONCURRENCY: ClassVar[int] = 8  # entities probed at once (their local prompts share one generation)
    # slots kept for observing tasks while any wait: a target added to a long history catches up beside the new
    # entities (which keep the other slots, and every slot the catch-up leaves free), never behind them
    OBSERVE_SLOTS: ClassVar[int] = 2

    def __init__(
        self, *, step: Step, daemon: DaemonSettings, spec: SpecSettings, agents: AgentSettings, data_dir: Path,
        device: str, secret: SecretLookup, concurrency: int | None = None, probe_fn: ProbeFn | None = None,
        locality_entities: int = 0,
    ) -> None:
        """`spec`: the targets and languages; `agents`: the judge's mode and the probe answers' length;
        `data_dir`/`device`: where local targets are cached and run; `secret`: the targets' API keys;
        `probe_fn`: instead of asking the targets (tests); `locality_entities`: known entities per month of
        occurrence that go on to get locality questions (0: none)."""
        super().__init__(step=step, daemon=daemon, concurrency=self.CONCURRENCY if concurrency is None else concurrency)
        self.spec = spec
        self.agents = agents
        self.data_dir = data_dir
        self.device = device
        self.secret = secret
        self.probe_fn: ProbeFn = probe_fn or self._probe
        self.locality_entities = locality_entities
        self._batcher: PromptBatcher[str] | None = None
        self._api: ApiTargets | None = None

    @classmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        check_api_targets(config.spec.targets, config.agents, secret=config.secret)  # at start: keys, providers
        # several entities at once: their prompts share one local generation
        return cls(step=step, daemon=config.daemon, spec=config.spec, agents=config.agents, data_dir=config.data_dir,
                   device=config.device, secret=config.secret, locality_entities=config.locality_entities)

    async def run(self, ctx: ServiceContext) -> None:
        try:
            await super().run(ctx)
        finally:
            if self._batcher is not None:
                await self._batcher.aclose()
                self._batcher = None

    async def claim(
        self, session: Session, ctx: ServiceContext, *, lease: timedelta, free: int, running: list[TaskLease],
    ) -> list[TaskLease]:
        """Observing tasks up to their share of the slots (`OBSERVE_SLOTS`, counting those in flight), then the
        entities' own probes, then observing tasks again in whatever is left: neither kind starves the other,
        and a slot neither needs is never held back."""
        claim = partial(claim_tasks, session, stage=self.stage, owner=ctx.owner, lease=lease)
        share = min(free, max(0, min(self.OBSERVE_SLOTS, self.concurrency - 1) - sum(t.key != "" for t in running)))
        observing = await claim(limit=share, keyed=True)
        own = await claim(limit=free - len(observing), keyed=False)
        left = free - len(observing) - len(own) if len(observing) == share else 0  # fewer than asked: none waits
        return observing + own + await claim(limit=left, keyed=True)

    async def _probe(self, target: TargetSettings, prompts: list[str], ctx: ServiceContext) -> list[str]:
        """`probe_target`, with the prompts of concurrent tasks for the same local target batched together."""
        max_new = self.agents.probe_max_new_tokens
        if is_api_target(target):
            if self._api is None:
                self._api = api_targets_for(ctx, agents=self.agents, secret=self.secret)
            api = self._api
            return [(await api.ask(target, p, max_tokens=max_new, stage="probe")).text for p in prompts]
        if target.backend == "openai":
            return await probe_target(
                target, prompts, http=ctx.http, max_new_tokens=max_new, data_dir=self.data_dir, device=self.device,
                api_key=self.secret(target.api_key_env),
            )
        if self._batcher is None:
            targets = {t.name: t for t in self.spec.targets}

            def run(name: str, batch: list[str]) -> list[str]:
                return probe_texts(
                    targets[name], batch, data_dir=self.data_dir, device=self.device, max_new_tokens=max_new
                )

            self._batcher = PromptBatcher(run, name="probe-batcher")
        return await self._batcher.submit(target.name, prompts)

    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        async with ctx.store.session() as s:
            entity = await load_entity(s, task.entity_id)
            facts = facts_of(entity)
            document = await source_document(s, entity, facts)
            stored = await probes_of(s, entity.id)
        done = {(p.target_model, p.lang): p for p in stored}
        only = target_of_key(task.key)
        if only is not None:  # observe: one target, nothing advances
            target = next((t for t in self.spec.targets if t.name == only), None)
            if target is not None and not any(p.known for p in stored if p.target_model == only):
                await self._ask(ctx, target, entity.id, entity.name, document, facts, done)  # a failure is retried
            async with ctx.store.transaction() as s:
                await finish(s, task, ctx)
            return
        hit = next((p for p in stored if p.known), None)
        for target in self.spec.targets:
            if hit is not None:
                break
            try:
                rows = await self._ask(ctx, target, entity.id, entity.name, document, facts, done)
            except AgentError as e:
                await self._give_up(ctx, task, f"judge failed: {e}")
                return
            hit = next((r for r in rows if r.known), None)
        async with ctx.store.transaction() as s:
            if hit is not None:
                reason = f"known by {hit.target_model} in {hit.lang}: {hit.reason}"[:500]
                await set_status(s, task.entity_id, EntityStatus.known, reason)
                if await self._locality_open(s, entity.occurred_at):  # its questions, for the locality split
                    await enqueue(s, Stage.generate, entity.id, LOCALITY_KEY, max_attempts=self.daemon.max_attempts)
            else:
                await self.advance(s, task, move=entity.status in _OPEN)  # a re-run never moves a finished entity back
            await finish(s, task, ctx)

    async def _ask(
        self, ctx: ServiceContext, target: TargetSettings, entity_id: int, name: str, document: RenderedDocument,
        facts: EntityFacts, done: dict[tuple[str, str], ProbeRecord],
    ) -> list[ProbeRecord]:
        """Ask `target` about the entity in every spec language it has no verdict in yet (up to the first
        "known"), judge and store the answers; the new verdicts. `AgentError` when the judge failed (the
        verdicts judged before it are kept)."""
        todo = [lang for lang in self.spec.languages if (target.name, lang) not in done]
        if not todo:
            return []
        backend = backend_for(ctx)
        prompts = [build_probe_prompt(target, name, lang) for lang in todo]
        answers = await self.probe_fn(target, prompts, ctx)
        if self.agents.batched(self.step.role):  # every language's judgement in one batch round
            await prefetch(
                backend.judge(entity_name=name, document=document, facts=facts, response=a, lang=lang)
                for lang, a in zip(todo, answers, strict=True)
            )
        rows: list[ProbeRecord] = []
        for lang, prompt, answer in zip(todo, prompts, answers, strict=True):
            try:
                verdict = await paid(
                    backend.judge(entity_name=name, document=document, facts=facts, response=answer, lang=lang)
                )
            except AgentError:
                await ctx.store.run_with_retry(partial(add_probes, probes=rows))
                raise
            rows.append(ProbeRecord(
                entity_id=entity_id, target_model=target.name, lang=lang, prompt=prompt, response=answer,
                known=verdict.known, matched_facts=tuple(verdict.matched_facts), reason=verdict.reason,
                judge=backend.producer("judge"), prompt_version=_version(backend.prompt_version("judge")),
                created_at=utcnow(),
            ))
            if verdict.known:
                break  # known in one language is enough
        await ctx.store.run_with_retry(partial(add_probes, probes=rows))
        return rows

    async def _locality_open(self, session: Session, occurred_at: datetime) -> bool:
        """Whether fewer than `locality_entities` entities of this month of occurrence went on for locality."""
        if self.locality_entities <= 0:
            return False
        start = occurred_at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        taken = await count_keyed_tasks(session, stage=Stage.generate, key=LOCALITY_KEY, occurred_from=start, occurred_to=end)
        return taken < self.locality_entities

    async def _give_up(self, ctx: ServiceContext, task: TaskLease, reason: str) -> None:
        async with ctx.store.transaction() as s:
            await set_status(s, task.entity_id, EntityStatus.failed, reason[:500])
            await finish(s, task, ctx)

    async def on_failed(self, session: Session, task: TaskLease, error: str) -> None:
        if target_of_key(task.key) is not None:
            return  # an observing task changes nothing, its failure neither (its reader decides: clkt.roster)
        await set_status(session, task.entity_id, EntityStatus.failed, f"probe: {error}"[:500])


_ONLY = "target:"


def probe_only_key(target: str) -> str:
    """The key of a probe task that asks only `target` and changes nothing else (see the module docstring)."""
    return f"{_ONLY}{target}"


def target_of_key(key: str) -> str | None:
    """The target a probe task's key names, or None for the entity's full probe (key "")."""
    return key[len(_ONLY):] if key.startswith(_ONLY) else None


def _version(judge_version: str) -> str:
    """The probe row's prompt version: the probe wording and the judge prompt together."""
    return f"{PROBE_PROMPT_VERSION}+{judge_version}"[:32]

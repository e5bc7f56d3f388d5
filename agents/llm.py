"""Backend 1: pydantic-ai LLM agents, one per role, with typed outputs and repairing validators.

Each role has an `Agent` whose `output_type` is the typed model of `clkt.outputs`, whose instructions are
the versioned prompt file, and whose output validators raise `ModelRetry` with the reason (evidence not in
the document, answer given away, duplicate slots, wrong language, numbers or names lost...) so the model
repairs its answer. After `agents.output_retries` repairs the call fails with `AgentError` naming the last
reason. Untrusted text enters the user prompt only through `data_block()`. The open track's writer, verifier and
translator (`agents.open_roles`: `generate_open`, `verify_open`, `translate_open`) are agents of this backend too,
on their roles' models, always online.

Models: `ModelFactory` (limits + cache around the configured provider models), or `raw_models` (tests:
FunctionModel/TestModel per role, still wrapped with limits + cache). The backend receives the `[agents]`
section, the spec's languages and the secret lookup for the providers' keys, never the whole configuration.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, SecretStr
from pydantic_ai import Agent, ModelRetry, PromptedOutput, RunContext, capture_run_messages
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from agents._prompting import data_block, load_prompt
from agents._repair import reasons_given, set_validator
from agents.cache import CallCache
from agents.checks import check_translated_document, check_translated_mcq
from agents.factory import ROLES, ModelFactory
from agents.open_roles import (
    OPEN_AGENTS,
    OPEN_OUTPUTS,
    OPEN_VALIDATORS,
    OpenDraft,
    OpenDraftSet,
    OpenVerdict,
    TranslatedOpen,
    open_user_prompt,
)
from clkt.config import AgentSettings, SecretLookup
from clkt.errors import AgentError
from clkt.facts import EntityFacts, RenderedDocument
from clkt.outputs import MCQ, KnownVerdict, TranslatedDocument, TranslatedMCQ, VerifierReport, check_against_document

__all__ = ["LANG_NAMES", "LlmBackend", "MCQSet", "build_user_prompt", "settle_gc"]

log = logging.getLogger(__name__)

LANG_NAMES = {
    "en": "English", "ja": "Japanese", "zh": "Chinese (Simplified)", "fr": "French", "es": "Spanish",
    "de": "German", "it": "Italian", "pt": "Portuguese", "ko": "Korean", "ru": "Russian", "ar": "Arabic",
    "hi": "Hindi",
}
# agent name -> (backend role for models/producer, prompt role)
_AGENTS = {
    "judge": "judge",
    "generate": "generate",
    "verify": "verify",
    "translate_mcq": "translate",
    "translate_document": "translate",
    **OPEN_AGENTS,  # the open track's writer, verifier and translator
}


class MCQSet(BaseModel):
    """The generator's output: grounded MCQs about distinct fact slots."""

    questions: list[MCQ] = Field(min_length=1)


@dataclass(kw_only=True)
class _Deps:
    document: str
    facts: EntityFacts | None = None
    n: int = 0
    source: MCQ | None = None
    lang: str = "en"
    langs: tuple[str, ...] = ()
    fact_sentences: tuple[str, ...] = ()
    reasons: list[str] = field(default_factory=list)

    def retry(self, ctx: RunContext[_Deps], problems: list[str]) -> ModelRetry:
        reason = "; ".join(problems)
        self.reasons.append(reason)
        return ModelRetry(f"Fix these problems and answer again: {reason}")


def build_user_prompt(agent: str, **kw: Any) -> str:
    """The user message of one call; every untrusted string goes through `data_block()`.

    Cache-friendly order: what repeats across the calls of one entity (the task sentence, the entity, the
    document) comes first and what varies (the response judged, the question, the target language) last,
    so the provider's prefix cache serves the repeated part at the cached-input price."""
    if agent == "judge":
        lang = kw["lang"]
        return (
            "Judge whether the response shows that the model already knows the entity.\n\n"
            + data_block("entity", kw["entity_name"]) + "\n\n"
            + data_block("document", kw["document"]) + "\n\n"
            + f"The response is written in {LANG_NAMES.get(lang, lang)}.\n\n"
            + data_block("response", kw["response"])
        )
    if agent == "generate":
        return (
            "Write multiple-choice questions about distinct facts of the document.\n\n"
            + data_block("entity", kw["entity_name"]) + "\n\n"
            + data_block("document", kw["document"]) + "\n\n"
            + f"Write {kw['n']} multiple-choice questions."
        )
    if agent == "verify":
        q = {"question": kw["mcq"].question, "options": kw["mcq"].options, "answer_index": kw["mcq"].answer_index,
             "evidence": kw["mcq"].evidence}
        return (
            "Verify the question against the document on every criterion.\n\n"
            + data_block("document", kw["document"]) + "\n\n"
            + data_block("question", json.dumps(q, ensure_ascii=False, indent=1))
        )
    if agent == "translate_mcq":
        q = {"question": kw["mcq"].question, "options": kw["mcq"].options, "answer_index": kw["mcq"].answer_index}
        lang = kw["lang"]
        return (
            "Translate the source question and its options.\n\n"
            + data_block("source", json.dumps(q, ensure_ascii=False, indent=1)) + "\n\n"
            + f"Translate into {LANG_NAMES.get(lang, lang)} (lang = {lang!r})."
        )
    if agent in OPEN_AGENTS:
        lang = kw.get("lang", "en")
        return open_user_prompt(agent, lang_name=LANG_NAMES.get(lang, lang), **kw)
    if agent == "translate_document":
        lang = kw["lang"]
        return (
            "Translate the document.\n\n" + data_block("document", kw["document"]) + "\n\n"
            + f"Translate into {LANG_NAMES.get(lang, lang)} (lang = {lang!r})."
        )
    raise AgentError(f"unknown agent {agent!r}")


GC_GEN0_THRESHOLD = 5000  # allocations between young collections (CPython's default: 700)
_gc_settled = False


def settle_gc() -> None:
    """Once per process, when the backend is built: what exists now (the imported SDKs, the agents) lives as
    long as the process, so it is moved out of the collector's reach (`gc.freeze`, after one collection so no
    garbage is kept), and the young generation is collected less often. A call allocates thousands of
    short-lived objects: measured on the pacing bench's client, the collector's time fell from 3.2 to 0.4 ms
    per call and its longest pause (a full collection walking every SDK object: an event-loop stall the
    pacer must absorb) from 320 to 30 ms."""
    global _gc_settled
    if _gc_settled:
        return
    _gc_settled = True
    gc.collect()
    gc.freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    if 0 < gen0 < GC_GEN0_THRESHOLD:
        gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def _no_secrets(_env_name: str | None) -> SecretStr | None:
    return None


class LlmBackend:
    """`AgentBackend` over pydantic-ai agents."""

    name = "llm"

    def __init__(
        self,
        *,
        agents: AgentSettings,
        languages: Sequence[str],
        cache: CallCache,
        secret: SecretLookup = _no_secrets,
        raw_models: Mapping[str, Model] | None = None,
        factory: ModelFactory | None = None,
    ) -> None:
        """`agents`: the models, retries and prices; `languages`: the spec's (the translations' checks);
        `secret`: the providers' keys, when no `factory` is given."""
        self.agent_settings = agents
        self.factory = factory or ModelFactory(agents=agents, secret=secret, cache=cache)
        self.langs = tuple(languages)
        self._producers: dict[str, str] = {}
        self._warned: set[str] = set()  # agents whose model was found unable to call tools (logged once)
        self.agents: dict[str, Agent[_Deps, Any]] = {}
        self._models: dict[str, tuple[Model, str]] = {}  # agent -> (its model, instructions): the prompted rebuild
        self.prompted: set[str] = set()  # agents answering with JSON in the text (`output_modes`, or found so)
        for agent_name, role in _AGENTS.items():
            prompt = load_prompt(agent_name)
            label, model = self._model_of(agent_name, prompt.version, raw_models)
            self._producers[role] = label
            self._models[agent_name] = (model, prompt.instructions)
            prompted = agents.output_mode(role) == "prompted"
            if prompted:
                self.prompted.add(agent_name)
            self.agents[agent_name] = self._build(agent_name, model, prompt.instructions, prompted=prompted)
        settle_gc()

    def _model_of(self, agent_name: str, prompt_version: str, raw_models: Mapping[str, Model] | None) -> tuple[str, Model]:
        """The agent's model string and model: its role's, limited and cached by the factory. The open track's roles
        (`agents.open_roles`) run online whatever the role's mode (a freeze does not wait a day for a batch), their
        call records labelled with their own stage ("generate_open"...) so their cost is seen apart."""
        role = _AGENTS[agent_name]
        open_role = agent_name in OPEN_AGENTS
        stage = agent_name if open_role else role
        if raw_models is not None and role in raw_models:
            raw = raw_models[role]
            label = getattr(self.agent_settings, ROLES[role]) or f"test:{raw.model_name}"
            return label, self.factory.wrap(raw, model=label, provider=label.partition(":")[0], stage=stage,
                                            prompt_version=prompt_version)
        label = getattr(self.agent_settings, ROLES[role])
        if open_role:
            return label, self.factory.for_model(label, key=f"agents.{ROLES[role]}", stage=stage,
                                                 prompt_version=prompt_version)
        return label, self.factory.for_role(role, prompt_version=prompt_version)

    # -- AgentBackend ---------------------------------------------------------------------------
    def producer(self, role: str) -> str:
        return self._producers[role]

    def prompt_version(self, role: str) -> str:
        agent = {"translate": "translate_mcq"}.get(role, role)
        return load_prompt(agent).version

    async def judge(
        self, *, entity_name: str, document: RenderedDocument, facts: EntityFacts, response: str, lang: str
    ) -> KnownVerdict:
        prompt = build_user_prompt(
            "judge", entity_name=entity_name, document=document.text, response=response, lang=lang
        )
        verdict: KnownVerdict = await self._run("judge", prompt, _Deps(document=document.text, facts=facts, lang=lang))
        return verdict

    async def generate(
        self, *, entity_name: str, document: RenderedDocument, facts: EntityFacts, n: int
    ) -> list[MCQ]:
        prompt = build_user_prompt("generate", entity_name=entity_name, document=document.text, n=n)
        out: MCQSet = await self._run("generate", prompt, _Deps(document=document.text, facts=facts, n=n))
        return out.questions[:n]

    async def verify(self, *, document: RenderedDocument, facts: EntityFacts, mcq: MCQ) -> VerifierReport:
        prompt = build_user_prompt("verify", document=document.text, mcq=mcq)
        deps = _Deps(document=document.text, facts=facts, source=mcq)
        report: VerifierReport = await self._run("verify", prompt, deps)
        return report

    async def translate_mcq(
        self, *, mcq: MCQ, document: RenderedDocument, facts: EntityFacts, target_lang: str
    ) -> TranslatedMCQ:
        prompt = build_user_prompt("translate_mcq", mcq=mcq, lang=target_lang)
        deps = _Deps(document=document.text, facts=facts, source=mcq, lang=target_lang, langs=self.langs)
        out: TranslatedMCQ = await self._run("translate_mcq", prompt, deps)
        return out

    async def translate_document(
        self, *, document: RenderedDocument, facts: EntityFacts, target_lang: str
    ) -> TranslatedDocument:
        prompt = build_user_prompt("translate_document", document=document.text, lang=target_lang)
        deps = _Deps(document=document.text, facts=facts, lang=target_lang, langs=self.langs,
                     fact_sentences=tuple(document.sentences.values()))
        out: TranslatedDocument = await self._run("translate_document", prompt, deps)
        return out

    # -- the open track's roles (agents.open_roles) -------------------------------------------------
    async def generate_open(
        self, *, entity_name: str, document: str, facts: str | None, lang: str, n: int
    ) -> list[OpenDraft]:
        """Up to `n` short-answer questions in `lang` (the document's) from `document`; `facts`: the entity's typed
        facts as JSON, given as hints (None: none)."""
        prompt = build_user_prompt("generate_open", entity_name=entity_name, document=document, facts=facts, lang=lang,
                                   n=n)
        out: OpenDraftSet = await self._run("generate_open", prompt, _Deps(document=document, lang=lang, n=n))
        return out.open_questions[:n]

    async def verify_open(self, *, document: str, draft: OpenDraft) -> OpenVerdict:
        prompt = build_user_prompt("verify_open", document=document, draft=draft)
        verdict: OpenVerdict = await self._run("verify_open", prompt, _Deps(document=document))
        return verdict

    async def translate_open(self, *, draft: OpenDraft, target_lang: str) -> TranslatedOpen:
        prompt = build_user_prompt("translate_open", draft=draft, lang=target_lang)
        out: TranslatedOpen = await self._run("translate_open", prompt, _Deps(document="", lang=target_lang))
        return out

    # -- internals ------------------------------------------------------------------------------
    async def _run(self, agent_name: str, prompt: str, deps: _Deps) -> Any:
        try:
            return await self._run_once(agent_name, prompt, deps)
        except _NoToolCalls as e:
            role = _AGENTS[agent_name]
            if self.agent_settings.output_mode(role) != "auto" or agent_name in self.prompted:
                raise AgentError(self._no_tool_calls(agent_name)) from e
            self._to_prompted(agent_name, str(e))
            deps.reasons.clear()
            return await self._run_once(agent_name, prompt, deps)

    def _to_prompted(self, agent_name: str, why: str) -> None:
        """`output_modes` "auto": the agent's model cannot call tools, so from now on it is asked for JSON in the
        text (pydantic-ai's `PromptedOutput`: the schema in the instructions, the answer parsed and validated)."""
        model, instructions = self._models[agent_name]
        self.prompted.add(agent_name)
        self.agents[agent_name] = self._build(agent_name, model, instructions, prompted=True)
        log.warning("%s: %s %s; asking it for JSON in the text from now on", agent_name,
                    self._producers[_AGENTS[agent_name]], why)

    async def _run_once(self, agent_name: str, prompt: str, deps: _Deps) -> Any:
        agent = self.agents[agent_name]
        with capture_run_messages() as messages:
            try:
                result = await agent.run(prompt, deps=deps)
            except ModelHTTPError as e:
                if agent_name not in self.prompted and _refuses_tools(e):
                    raise _NoToolCalls(f"refused tools ({e.status_code})") from e
                raise
            except UnexpectedModelBehavior as e:
                if agent_name not in self.prompted and _never_called_a_tool(messages):
                    raise _NoToolCalls("answered in plain text and never called the output tool") from e
                last = deps.reasons[-1] if deps.reasons else str(e)
                tries = self.agent_settings.output_retries + 1
                raise AgentError(f"{agent_name}: no valid output after {tries} tries: {last}") from e
        return result.output

    def _no_tool_calls(self, agent_name: str) -> str:
        """The one line of a role in `output_modes` "tool" whose model answered only in plain text, never calling
        the output tool: a model or server without tool calling (a small chat model on `transformers serve`, a vLLM
        started without `--enable-auto-tool-choice`) cannot give a typed output through the tool, whatever the
        retries ("auto", the default, asks it for JSON in the text instead). Logged once per agent (every call of
        the role fails the same way: the stages store it as each entity's reason)."""
        role = _AGENTS[agent_name]
        line = (f"{agent_name}: {self._producers[role]} answered in plain text and never called the output tool: "
                f"agents.{ROLES[role]} needs a model and server with tool calling (structured output), or "
                f"agents.output_modes.{role} = 'prompted' or 'auto' (JSON in the text)")
        if agent_name not in self._warned:
            self._warned.add(agent_name)
            log.error("%s", line)
        return line

    def _build(self, agent_name: str, model: Model, instructions: str, *, prompted: bool = False) -> Agent[_Deps, Any]:
        """The agent: its typed output through the output tool, or with `prompted` as JSON in the text; its
        answers capped at the role's `max_tokens`."""
        output_type: Any = {
            "judge": KnownVerdict,
            "generate": MCQSet,
            "verify": VerifierReport,
            "translate_mcq": TranslatedMCQ,
            "translate_document": TranslatedDocument,
            **OPEN_OUTPUTS,
        }[agent_name]
        settings: ModelSettings = {"temperature": 0.0}
        cap = self.agent_settings.max_tokens_of(_AGENTS[agent_name])
        if cap is not None:
            settings["max_tokens"] = cap
        agent: Agent[_Deps, Any] = Agent(
            model,
            output_type=PromptedOutput(output_type) if prompted else output_type,
            instructions=instructions,
            deps_type=_Deps,
            name=agent_name,
            retries={"output": self.agent_settings.output_retries},
            model_settings=settings,
        )
        agent.output_validator(_on_the_loop(_VALIDATORS[agent_name]))
        return agent


class _NoToolCalls(Exception):
    """The role's model cannot give the output tool's call (answered in text only, or its server refused tools)."""


def _refuses_tools(e: ModelHTTPError) -> bool:
    """A 400/422 whose body speaks of tools: a server without tool calling (vLLM without
    `--enable-auto-tool-choice`, a chat template without tools)."""
    return e.status_code in (400, 422) and "tool" in json.dumps(e.body, default=str).lower()


def _never_called_a_tool(messages: Sequence[ModelMessage]) -> bool:
    """Whether the model answered at least once and never with a tool call (every answer plain text)."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    return bool(responses) and not any(isinstance(p, ToolCallPart) for r in responses for p in r.parts)


def _on_the_loop(validate: Any) -> Any:
    """The validator as a coroutine function: pydantic-ai runs a plain `def` validator in a worker thread (a
    thread hand-off and two wake-ups per call, for checks that take microseconds); a coroutine runs inline."""

    async def validator(ctx: RunContext[_Deps], out: Any) -> Any:
        return validate(ctx, out)

    validator.__name__ = validator.__qualname__ = validate.__name__
    return validator


def _validate_judge(ctx: RunContext[_Deps], out: KnownVerdict) -> KnownVerdict:
    if out.known and not out.matched_facts:
        raise ctx.deps.retry(ctx, ["known = true needs at least one matched document fact in matched_facts"])
    return out


def _validate_translate_mcq(ctx: RunContext[_Deps], out: TranslatedMCQ) -> TranslatedMCQ:
    deps = ctx.deps
    assert deps.source is not None and deps.facts is not None
    problems = check_translated_mcq(deps.source, out, lang=deps.lang, facts=deps.facts, langs=deps.langs)
    if problems:
        raise deps.retry(ctx, problems)
    return out


def _validate_translate_document(ctx: RunContext[_Deps], out: TranslatedDocument) -> TranslatedDocument:
    deps = ctx.deps
    assert deps.facts is not None
    problems = check_translated_document(
        deps.document, out, lang=deps.lang, facts=deps.facts, langs=deps.langs, fact_sentences=deps.fact_sentences
    )
    if problems:
        raise deps.retry(ctx, problems)
    return out


_VALIDATORS: dict[str, Any] = {
    "judge": _validate_judge,
    "generate": set_validator(items=lambda o: o.questions, check=check_against_document,
                              rebuild=lambda good: MCQSet(questions=good)),
    "verify": reasons_given,
    "translate_mcq": _validate_translate_mcq,
    "translate_document": _validate_translate_document,
    **OPEN_VALIDATORS,
}

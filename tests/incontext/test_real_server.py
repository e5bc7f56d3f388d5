"""A real OpenAI-compatible server on loopback: `transformers serve` (the `serving` extra of transformers) serving the
converted embedded instruct target (SmolLM2 135M). The in-context track of an API target pointing at it, and one
call through each agent role, go through the product's own model stack; whatever the real server does differently
from the fake (`tests/fakes/openai_server.py`) is the product's to handle:

- it refuses a model name it does not serve with 400 and `{"detail": ...}` (not OpenAI's error object): the track
  stops with one line naming it, nothing stored;
- it ignores `tool_choice` and `response_format`, and a model whose chat template has no tools answers the agent
  roles in plain text, never calling the output tool: the role is asked for JSON in the text from then on
  (`[agents] output_modes` "auto", `agents.llm.LlmBackend`); a role that still gets no valid output fails with one
  line, never a crash.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

from agents.cache import MemoryCallCache
from agents.llm import LlmBackend
from clkt.config import AgentSettings, GpuSettings, ProviderSettings, SpecSettings, TargetSettings
from clkt.errors import AgentError
from clkt.incontext.runner import run_incontext
from clkt.outputs import MCQ, KnownVerdict, TranslatedDocument, TranslatedMCQ, VerifierReport
from clkt.report.writer import load_report_data
from clkt.targets.embedded import EMBEDDED_MODELS, ensure_converted
from storage.engine import Store
from storage.incontext import incontext_answers
from tests.agents._util import LIVERPOOL_SWANSEA, match_doc
from tests.conftest import wait_until
from tests.incontext._helpers import no_secrets
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot
from tests.targets.conftest import models_data_dir  # noqa: F401 - the shared fixture (the converted models)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

READY_TIMEOUT_S = 240.0  # the server loads the model before it answers /v1/models
PROMPTS = 12  # the tiny snapshot: 2 test questions x 2 languages, each without the document and with en and fr


@dataclass(frozen=True)
class Served:
    base_url: str  # http://127.0.0.1:<port>/v1
    model: str  # the name the server serves (the folder's path, as given on its command line)
    log: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serves(base_url: str, model: str, proc: subprocess.Popen[bytes], log: Path) -> bool:
    """Whether the server lists `model` at /v1/models; raises when the server process died."""
    if proc.poll() is not None:
        raise AssertionError(f"transformers serve exited {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as r:
            models = json.load(r)
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return any(m.get("id") == model for m in models.get("data", []))


@pytest.fixture(scope="module")
def served(models_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:  # noqa: F811
    """`transformers serve <the converted SmolLM2 folder>` on 127.0.0.1 at a free port, offline, on the CPU; ready
    once /v1/models lists the model; its process group killed at the end whatever happened."""
    pytest.importorskip("uvicorn", reason="`transformers serve` needs the serving extra: pip install 'transformers[serving]'")
    folder = ensure_converted(EMBEDDED_MODELS["smollm2-135m-instruct"], models_data_dir / "models")
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve", str(folder),
           "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--log-level", "warning"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    s = Served(base_url=f"http://127.0.0.1:{port}/v1", model=str(folder), log=log)
    try:
        wait_until(lambda: _serves(s.base_url, s.model, proc, log), timeout=READY_TIMEOUT_S, interval=0.25,
                   what="transformers serve lists the model")
        yield s
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and the model process it spawned
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def _agents(s: Served, **kw: object) -> AgentSettings:
    """A provider `local` on the server: no key (none needed on loopback), one try per call."""
    provider = ProviderSettings(base_url=s.base_url, rpm=6000, max_attempts=1, timeout_s=300)
    return AgentSettings.model_validate({"providers": {"local": provider}, **kw})


def _target(model: str, name: str = "smol-served") -> TargetSettings:
    return TargetSettings(name=name, model=model, backend="api", kind="instruct", cutoff=date(2024, 11, 1))


async def test_the_in_context_track_runs_against_transformers_serve(
    served: Served, store: Store, tmp_path: Path
) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    target = _target(f"local:{served.model}")
    spec = SpecSettings(targets=[target], languages=["en", "fr"])
    gpu = GpuSettings(max_new_tokens=8)
    [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=_agents(served), gpu=gpu,
                                data_dir=tmp_path, secret=no_secrets)
    assert run.error is None and run.counts.asked == PROMPTS and run.counts.skipped == 0
    async with store.session() as s:
        rows = await incontext_answers(s, SNAPSHOT_ID, target=target.name)
    assert len(rows) == PROMPTS
    # every answer parsed into a letter, or counted as unparsable (scored wrong), as the paper's parse does
    assert all((r.status == "answered" and r.letter in "ABCD") or (r.status == "unparsed" and r.letter is None)
               for r in rows)
    assert sum(r.status == "unparsed" for r in rows) == run.counts.unparsed
    assert not any(r.correct for r in rows if r.status == "unparsed")
    assert all(r.input_tokens > 0 and 0 < r.output_tokens <= 8 for r in rows)  # the server's usage, bounded
    again = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=_agents(served), gpu=gpu,
                                data_dir=tmp_path, secret=no_secrets)
    assert again[0].counts.asked == 0 and again[0].counts.already == PROMPTS  # stored: nothing asked twice
    data = await load_report_data(store, SNAPSHOT_ID)
    [t] = data.incontext
    assert (t.target, t.answered, t.unparsed, t.skipped) == (target.name, PROMPTS - run.counts.unparsed,
                                                              run.counts.unparsed, 0)


async def test_a_name_the_server_does_not_serve_stops_the_track_in_one_line(
    served: Served, store: Store, tmp_path: Path
) -> None:
    """transformers serve answers 400 with `{"detail": ...}` for a model it is not pinned to: the track stops, the
    error is one line naming the server's reason, nothing is stored (a rerun with the right name resumes)."""
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    spec = SpecSettings(targets=[_target("local:smollm2", name="wrong-name")], languages=["en", "fr"])
    [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=_agents(served),
                                gpu=GpuSettings(max_new_tokens=8), data_dir=tmp_path, secret=no_secrets)
    assert run.error is not None and "\n" not in run.error
    assert "400" in run.error and "pinned to" in run.error and run.counts.asked == 0
    async with store.session() as s:
        assert await incontext_answers(s, SNAPSHOT_ID, target="wrong-name") == []


PLAIN_TEXT = "answered in plain text and never called the output tool"


async def test_one_call_through_each_agent_role(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    """Each role's call comes back typed, or fails with the product's one line: a model without tool calling
    answers in plain text, which no retry repairs (logged once per agent, never a crash)."""
    m = f"local:{served.model}"
    # every answer capped (`max_tokens`): a role asked for JSON in the text ("auto") would otherwise let the
    # small model write until the server's own limit, minutes per call on 2 CPU cores (a 300 s timeout hit so)
    agents = _agents(served, backend="llm", judge_model=m, generator_model=m, verifier_model=m, translator_model=m,
                     allow_same_verifier=True, output_retries=0,
                     max_tokens={role: 256 for role in ("judge", "generate", "verify", "translate")})
    backend = LlmBackend(agents=agents, languages=["en", "fr"], cache=MemoryCallCache())
    doc, facts = match_doc(), LIVERPOOL_SWANSEA
    evidence = next(iter(doc.sentences.values()))
    mcq = MCQ(question="Which team won the match?", options=["Liverpool", "Swansea", "Chelsea", "Arsenal"],
              answer_index=0, evidence=evidence, slot="winner")
    calls = {
        "judge": (KnownVerdict, lambda: backend.judge(entity_name="Liverpool vs Swansea", document=doc, facts=facts,
                                                      response="I do not know this match.", lang="en")),
        "generate": (list, lambda: backend.generate(entity_name="Liverpool vs Swansea", document=doc, facts=facts, n=1)),
        "verify": (VerifierReport, lambda: backend.verify(document=doc, facts=facts, mcq=mcq)),
        "translate_mcq": (TranslatedMCQ, lambda: backend.translate_mcq(mcq=mcq, document=doc, facts=facts,
                                                                       target_lang="fr")),
        "translate_document": (TranslatedDocument, lambda: backend.translate_document(document=doc, facts=facts,
                                                                                      target_lang="fr")),
    }
    plain: list[str] = []
    with caplog.at_level(logging.ERROR, logger="agents.llm"):
        for name, (typed, call) in calls.items():
            try:
                out = await call()
            except AgentError as e:  # the product's error: one line naming the agent
                msg = str(e)
                assert msg.startswith(f"{name}: ") and "\n" not in msg, msg
                if PLAIN_TEXT in msg:
                    plain.append(name)
                    assert m in msg and "tool calling" in msg
                continue
            assert isinstance(out, typed), (name, out)
            if isinstance(out, list):
                assert out and all(isinstance(q, MCQ) for q in out)
        # a second judge call fails the same way without a second log line
        if "judge" in plain:
            with pytest.raises(AgentError, match=PLAIN_TEXT):
                await backend.judge(entity_name="Liverpool vs Swansea", document=doc, facts=facts,
                                    response="Liverpool won 4-1.", lang="en")
    logged = [r.getMessage() for r in caplog.records if PLAIN_TEXT in r.getMessage()]
    assert sorted(line.partition(":")[0] for line in logged) == sorted(plain)  # once per agent that could not
    assert backend.factory.stats.input_tokens > 0  # every call reached the server and came back with its usage

"""A pydantic-ai `FunctionModel` that answers every agent role validly (see `llm_responder`), counting calls.

`ScriptedLlm(overrides={"generate": [bad_args, ...]})` answers the first calls of a role from the list (to
exercise `ModelRetry` repairs) and falls back to the valid responder.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.fakes.llm_responder import respond, role_of_schema

__all__ = ["ScriptedLlm", "user_prompt"]


def user_prompt(messages: list[ModelMessage]) -> str:
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, UserPromptPart) and isinstance(p.content, str):
                    return p.content
    return ""


class ScriptedLlm:
    def __init__(self, overrides: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.overrides = {k: list(v) for k, v in (overrides or {}).items()}
        self.calls: Counter[str] = Counter()
        self.instructions: list[str] = []
        self.prompts: list[str] = []
        self.retry_messages: list[str] = []

    def model(self, name: str = "scripted") -> FunctionModel:
        return FunctionModel(self._fn, model_name=name)

    def _fn(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0]
        role = role_of_schema(tool.parameters_json_schema["properties"])
        self.calls[role] += 1
        self.instructions.append(info.instructions or "")
        prompt = user_prompt(messages)
        self.prompts.append(prompt)
        last = messages[-1]
        if isinstance(last, ModelRequest):
            for p in last.parts:
                if getattr(p, "part_kind", "") in ("retry-prompt", "tool-return"):
                    self.retry_messages.append(str(getattr(p, "content", "")))
        queue = self.overrides.get(role)
        args = queue.pop(0) if queue else respond(role, prompt)
        return ModelResponse(parts=[ToolCallPart(tool.name, args)])

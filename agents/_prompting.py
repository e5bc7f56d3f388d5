"""Versioned prompt files and the data delimiters that keep documents out of the instructions.

A prompt lives in `agents/prompts/<role>.v<N>.md`; its version string (`"judge.v1"`) is stored with every row
the agent produces and is part of the LLM cache key. Untrusted text (documents, probe responses, questions)
only ever enters a prompt through `data_block()`, which wraps it in `<tag>…</tag>` and neutralises any tag
of the same name inside it, so planted text cannot close the block and speak as instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from clkt.errors import UserError

__all__ = ["PROMPT_DIR", "PROMPT_VERSIONS", "Prompt", "data_block", "load_prompt"]

PROMPT_DIR = Path(__file__).parent / "prompts"

# role -> the prompt version in use (bump the file name to change a prompt; old rows keep their version)
PROMPT_VERSIONS: dict[str, str] = {
    "judge": "judge.v1",
    "generate": "generate.v1",
    "verify": "verify.v1",
    "translate_mcq": "translate_mcq.v1",
    "translate_document": "translate_document.v1",
    "open_judge": "open_judge.v1",  # the open track's jury (agents.jury)
    "generate_open": "generate_open.v1",  # the open track's writer, verifier and translator (agents.open_roles)
    "verify_open": "verify_open.v1",
    "translate_open": "translate_open.v1",
}


@dataclass(frozen=True, slots=True)
class Prompt:
    role: str
    version: str
    instructions: str


@cache
def load_prompt(role: str) -> Prompt:
    version = PROMPT_VERSIONS.get(role)
    if version is None:
        raise UserError(f"no prompt for role {role!r}; known: {sorted(PROMPT_VERSIONS)}")
    path = PROMPT_DIR / f"{version}.md"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise UserError(f"prompt file {path} is missing") from None
    return Prompt(role=role, version=version, instructions=text)


def data_block(tag: str, text: str) -> str:
    """`<tag>\\ntext\\n</tag>` with any `<tag…>`/`</tag…>` inside `text` defused: any case and spacing, with
    attributes (`</document foo=1>`) or left unclosed (`</document` at the end) — none can end the block."""
    if not re.fullmatch(r"[a-z_]+", tag):
        raise UserError(f"bad data tag {tag!r}")
    defused = re.sub(rf"<\s*(/?)\s*{tag}(?![a-z_])([^<>]*)>?", rf"[\1{tag}\2]", text, flags=re.IGNORECASE)
    return f"<{tag}>\n{defused}\n</{tag}>"

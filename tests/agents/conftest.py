"""Agent tests never reach a real model: pydantic-ai refuses any real request."""

from __future__ import annotations

import pydantic_ai.models

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

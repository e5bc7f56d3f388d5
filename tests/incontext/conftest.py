"""The in-context track's tests reach only the fake servers on 127.0.0.1: model requests are allowed here (the
agents' tests forbid them for the session: `tests/agents/conftest.py`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests


@pytest.fixture(autouse=True)
def _allow_loopback_requests() -> Iterator[None]:
    with override_allow_model_requests(True):
        yield

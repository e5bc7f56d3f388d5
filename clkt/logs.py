"""Logging set-up: one line per record, secrets redacted by value as a last line of defence."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

from pydantic import SecretStr

__all__ = ["setup_logging", "SecretRedactor"]


class SecretRedactor(logging.Filter):
    """Replaces any known secret value in a record's final message with `***`."""

    def __init__(self, secrets: Iterable[SecretStr]) -> None:
        super().__init__()
        self._values = sorted({s.get_secret_value() for s in secrets if len(s.get_secret_value()) >= 4}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._values:
            return True
        msg = record.getMessage()
        red = msg
        for v in self._values:
            red = red.replace(v, "***")
        if red != msg:
            record.msg, record.args = red, None
        return True


def setup_logging(level: str = "INFO", *, secrets: Iterable[SecretStr] = (), stream: object = None) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = logging.StreamHandler(stream or sys.stderr)  # type: ignore[arg-type]
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    handler.addFilter(SecretRedactor(secrets))
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("aiohttp.access", "httpx", "httpcore", "urllib3", "filelock", "alembic.runtime.migration"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

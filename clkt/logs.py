"""Logging set-up, and the ONE redaction point of the product.

`redact(text)` is what every path that writes text out goes through: log lines and their tracebacks (the
handler's formatter), error texts saved in the store (skips, failed work, GPU jobs), the CLI's messages
and printed URLs. It removes

- every known secret value (the keys named by `api_key_env`, registered by `register_secrets`, which
  `load_settings` calls), also in their URL-encoded form;
- credential-looking query parameters (`api_key=`, `token=`, `access_token=`, `key=`...) whatever their value;
- the password of a URL (`postgresql://user:pw@host` -> `postgresql://user:***@host`);
- `Bearer` tokens.

`sanitize_text(text)` makes crawled text safe for a terminal: control characters (escape sequences
included) are removed. Rich markup is never applied to crawled text (the CLI prints it with
`markup=False` or escapes it).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Iterable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TextIO
from urllib.parse import quote, quote_plus

from pydantic import SecretStr

__all__ = [
    "LIBRARY_LOGGERS", "RedactingFormatter", "SecretRedactor", "redact", "register_secrets", "sanitize_text", "setup_logging",
]

MIN_SECRET_LEN = 4  # shorter values would redact ordinary words
_lock = threading.Lock()
_secrets: set[str] = set()
_ordered: list[str] = []

_SECRET_PARAM = re.compile(
    r"(?i)\b(api[_-]?key|apikey|access[_-]?token|token|key|secret|password|passwd|appname|auth)"
    r"(=|%3D)([^&\s\"'<>#;,]+)"
)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:/@\s\"'<>]*):([^@/\s\"'<>]+)@")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]+")
# C0 and C1 control characters except tab and newline; DEL; the lone surrogates
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def register_secrets(secrets: Iterable[SecretStr | str]) -> None:
    """Add secret values that `redact` removes from now on (process-wide; adding twice is harmless)."""
    global _ordered
    with _lock:
        for s in secrets:
            v = s.get_secret_value() if isinstance(s, SecretStr) else s
            if v and len(v) >= MIN_SECRET_LEN:
                _secrets.update({v, quote(v, safe=""), quote_plus(v)})
        _ordered = sorted(_secrets, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` without known secrets, credential query parameters, URL passwords and Bearer tokens."""
    if not text:
        return text
    for v in _ordered:
        if v in text:
            text = text.replace(v, "***")
    text = _SECRET_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    text = _URL_PASSWORD.sub(r"\1:***@", text)
    return _BEARER.sub(r"\1 ***", text)


def sanitize_text(text: str) -> str:
    """Crawled text for a terminal: control characters (escape sequences, NUL, lone surrogates) removed."""
    return _CONTROL.sub("", text)


class SecretRedactor(logging.Filter):
    """Registers the given secrets and redacts each record's message (the formatter redacts the rest)."""

    def __init__(self, secrets: Iterable[SecretStr]) -> None:
        super().__init__()
        register_secrets(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        red = redact(msg)
        if red != msg:
            record.msg, record.args = red, None
        return True


class RedactingFormatter(logging.Formatter):
    """The whole formatted line, traceback and exception text included, goes through `redact`; control
    characters (a crawled name's terminal escapes) are removed, newlines and tabs kept."""

    def format(self, record: logging.LogRecord) -> str:
        return sanitize_text(redact(super().format(record)))


# The libraries' loggers that talk at INFO about their own work (alembic: seven "setup plugin" lines at every
# start; httpx: a line per request; aiohttp.access: one per GET of the endpoint): kept at WARNING (or at our
# level when it is higher), and heard only when our own level is DEBUG.
LIBRARY_LOGGERS = (
    "aiohttp.access", "aiosqlite", "alembic", "anthropic", "datasets", "filelock", "fsspec", "httpcore", "httpx",
    "huggingface_hub", "matplotlib", "openai", "peft", "urllib3",
)


def setup_logging(
    level: str = "INFO", *, secrets: Iterable[SecretStr] = (), stream: TextIO | None = None, log_file: Path | None = None,
    max_bytes: int = 10 << 20, backups: int = 5,
) -> None:
    """The root logger to `stream` (stderr), redacted; `log_file`: also to that file, rotated at `max_bytes` with
    `backups` older files kept (`logging.handlers.RotatingFileHandler`: at most max_bytes x (backups + 1) on disk)."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
        if isinstance(h, logging.FileHandler):
            h.close()
    handlers: list[logging.Handler] = [logging.StreamHandler(stream or sys.stderr)]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(RotatingFileHandler(log_file, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"))
    redactor = SecretRedactor(secrets)
    for handler in handlers:
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
        handler.addFilter(redactor)
        root.addHandler(handler)
    root.setLevel(level)
    ours = root.getEffectiveLevel()
    libraries = logging.NOTSET if ours <= logging.DEBUG else max(logging.WARNING, ours)  # NOTSET: root's level
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(libraries)

"""What the user reads when something escapes: ONE printable, redacted line naming the cause, and an exit code.

Used by the CLI (`clkt.cli.main`) and the daemon process (`clkt.process`): a `ClktError` is refused input or
config (exit 2), an `OSError`, a store driver error or anything else an environment or internal failure
(exit 1). Crawled text inside a message never reaches the terminal as markup or control characters.
"""

from __future__ import annotations

from clkt.errors import ClktError
from clkt.logs import redact, sanitize_text

__all__ = ["MAX_MESSAGE_CHARS", "describe_error", "one_line"]

MAX_MESSAGE_CHARS = 2000


def one_line(text: str) -> str:
    """`text` as one printable, redacted line: control characters removed, newlines folded, capped."""
    flat = " ".join(sanitize_text(redact(str(text))).split())
    return flat if len(flat) <= MAX_MESSAGE_CHARS else flat[:MAX_MESSAGE_CHARS] + "…"


def describe_error(e: BaseException) -> tuple[str, int]:
    """The one-line cause of an error that escaped a command, and the exit code."""
    if isinstance(e, ClktError):
        return str(e), 2
    if isinstance(e, OSError):
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        return f"{e.strerror or type(e).__name__}:{where}" if e.strerror else f"{type(e).__name__}:{where} {e}", 1
    # imported here, not at the top: every `clkt` command loads this module, most never open the store, and
    # SQLAlchemy costs half a second to import (a store error means it is loaded already)
    from storage.engine import describe_store_error

    store = describe_store_error(e)
    if store is not None:
        return store, 1
    if isinstance(e, MemoryError):
        return "out of memory", 1
    text = str(e).splitlines()[0] if str(e) else ""
    return f"internal error ({type(e).__name__}){': ' + text if text else ''}", 1

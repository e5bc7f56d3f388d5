"""One exception hierarchy for the product, rooted at `ClktError`."""

from __future__ import annotations

from datetime import timedelta

__all__ = [
    "AgentError",
    "BudgetExhausted",
    "ClktError",
    "ConfigError",
    "DiskFullError",
    "ForeignDatabaseError",
    "FreezeConflict",
    "JobError",
    "LeaseLost",
    "ModelUnavailableError",
    "PayloadError",
    "RetryLater",
    "SourceBlocked",
    "SourceError",
    "SourceHttpError",
    "StoreError",
    "StoreLockedError",
    "TaskTimeout",
    "UserError",
]


class ClktError(Exception):
    """Root of every error this product raises on purpose."""


class ConfigError(ClktError):
    """The configuration is invalid; `key` names the offending setting."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"invalid config: {key}: {reason}")


class UserError(ClktError):
    """A programming or usage mistake (wrong call, unknown id): not retried."""


class StoreError(ClktError):
    pass


class StoreLockedError(StoreError):
    """Another daemon already runs on this store."""


class ForeignDatabaseError(StoreError):
    """The store file is corrupt or belongs to something else."""


class LeaseLost(StoreError):
    """The row is no longer leased by us (expired and re-claimed elsewhere, or released): our work on it is
    void and must not be written."""


class RetryLater(ClktError):
    """Try this work item again after `defer` without counting it as a failure of the item."""

    def __init__(self, reason: str, *, defer: timedelta = timedelta(seconds=30)) -> None:
        self.defer = defer
        super().__init__(reason)


class TaskTimeout(ClktError):
    """One try of a stage task ran past `daemon.task_timeout_s`: that try failed (retried while tries are left)."""


class SourceError(ClktError):
    pass


class SourceBlocked(SourceError):
    """The source refuses us for now (rate limit, circuit open): back off, spend no retry budget."""

    def __init__(self, reason: str, *, retry_after_s: float | None = None) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(reason)


class SourceHttpError(SourceError):
    """A source answered with an HTTP status that retrying will not fix (400, 401, 403...)."""

    def __init__(self, status: int, url: str, detail: str = "") -> None:
        self.status = status
        self.url = url  # already redacted
        super().__init__(f"HTTP {status} from {url}" + (f": {detail}" if detail else ""))


class PayloadError(SourceError):
    """A record that does not parse or fails the domain's eligibility rules."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class ModelUnavailableError(ClktError):
    """A model (target or agent) cannot be loaded or reached."""


class AgentError(ClktError):
    pass


class BudgetExhausted(AgentError):
    """The monthly LLM budget is spent: paid stages pause until the next month."""


class SnapshotError(ClktError):
    pass


class FreezeConflict(SnapshotError):
    """Another builder froze the period, or placed one of the entities, while this one froze: nothing was written
    (the freezing transaction rolled back); the next check builds what is left."""


class JobError(ClktError):
    pass


class DiskFullError(ClktError):
    """The data directory's disk is (nearly) full."""

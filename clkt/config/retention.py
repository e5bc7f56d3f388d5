"""`[retention]`: what the data directory keeps once a GPU job is committed, and the daemon's own log file.

Defaults keep the best epoch's adapter and every result and report and drop the rest once a job is committed
(`clkt.retention`: automatically after each commit, and `clkt gc`). Nothing a result or a snapshot references is
ever removed; a setting that would remove it is refused here, with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from clkt.config._base import Section

__all__ = ["RetentionSettings"]

MIB = 1 << 20


class RetentionSettings(Section):
    """What the data directory keeps once a GPU job is committed, and the daemon's own log file."""

    # the checkpoint folders of a committed job's epochs: "best" keeps the best epoch's adapter (its weights, state
    # and validation score) and drops the other epochs and the optimizer state; "all" keeps every epoch whole.
    # ("none" is refused: the best adapter is what the job's results were measured with.)
    epoch_adapters: Literal["best", "all", "none"] = "best"
    # the base model's answers shared by the jobs of one (snapshot, target): "until-done" drops them once no job
    # of that pair is pending or leased; "keep" never
    base_caches: Literal["until-done", "keep"] = "until-done"
    # days a committed job's log (job.log) and progress file are kept (0: dropped at the commit); a failed job
    # keeps its folder whole (what it says is why it failed, and a retry resumes from it)
    job_logs_days: int = Field(default=0, ge=0, le=3650)
    # "drop": files of a report folder that its snapshot's current report no longer lists (a figure of an
    # earlier write) and report folders of snapshots the store no longer has; the current report is always kept
    old_reports: Literal["keep", "drop"] = "keep"
    # run the retention of a job right after its commit (else only `clkt gc` frees files)
    after_commit: bool = True
    # the daemon's own log: None = stderr only; a path (relative to data_dir) adds a rotating file
    daemon_log: Path | None = None
    daemon_log_max_bytes: int = Field(default=10 * MIB, ge=64 * 1024, le=1 << 30)  # one file at most this big
    daemon_log_backups: int = Field(default=5, ge=1, le=100)  # rotated files kept beside it

    @field_validator("epoch_adapters")
    @classmethod
    def _keep_best(cls, v: str) -> str:
        if v == "none":
            raise ValueError(
                '"none" would remove each committed job\'s best adapter, which its results were measured with and '
                'which the job row references (best_epoch, artifacts_dir); choose "best" (the default) or "all"'
            )
        return v

    @field_validator("daemon_log")
    @classmethod
    def _log_path(cls, v: Path | None) -> Path | None:
        if v is not None and (not str(v).strip() or v.name in ("", ".", "..")):
            raise ValueError("must name a file (e.g. \"logs/clkt.log\", relative to data_dir)")
        return v

    def log_file(self, data_dir: Path) -> Path | None:
        """Where the daemon's log file goes (None: no file)."""
        if self.daemon_log is None:
            return None
        return self.daemon_log if self.daemon_log.is_absolute() else data_dir / self.daemon_log

    @property
    def log_cap_bytes(self) -> int:
        """The most the daemon's log files take on disk (the file and its rotated backups)."""
        return self.daemon_log_max_bytes * (self.daemon_log_backups + 1) if self.daemon_log is not None else 0

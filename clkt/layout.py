"""The data directory's layout: every folder and file name clkt keeps under `<data_dir>`, declared once.

A GPU job's folder is `<data_dir>/jobs/<id>/` (`job_dir`). The consumer writes `spec.json` there (`JobSpec`);
the job process writes `progress.json` while it runs, `job.log` (its output), then `outcome.json` (`JobOutcome`)
or `failure.json` (`JobFailure`), `predictions.jsonl` (every answer) and one checkpoint folder per epoch,
`checkpoints/epoch-<n>/` (the trainable weights, `state.json`, `val.json`, and `optim.pt` for the last epoch
only). The base model's answers, shared by every job of one snapshot x target, are cached in
`<data_dir>/jobs/base/<snapshot>/<target>-<key>.jsonl` (`base_cache_dir`, `base_cache_name`).

Beside `jobs/`: `reports/<snapshot>/` (a snapshot's report), `models/` (converted target models),
`cache/leaderboard/` (`clkt leaderboard`'s kept results, `board_cache_dir`), `edit-stats/` (knowledge editing's
key statistics per model x layer, `clkt.inject.editing.covariance`) and the store (`clkt.db*`).

Everything that writes, reads, ships or removes these (clkt.inject, clkt.retention, clkt.web, clkt.report)
takes the names from here: a new job artefact is one constant in this module. This module imports nothing of
the product (a kernel module: storage may read it too).
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "BASE_CACHE_KEY_HEX",
    "BASE_DIR",
    "BOARD_CACHE_DIR",
    "BOARD_CACHE_KEEP",
    "CACHE_DIR",
    "CKPT_DIR",
    "EDITS_FILE",
    "EDIT_STATS_DIR",
    "EPOCH_PREFIX",
    "FAILURE_FILE",
    "JOBS_DIR",
    "LOG_FILE",
    "MODELS_DIR",
    "OPEN_PREDICTIONS_FILE",
    "OPTIM_FILE",
    "OUTCOME_FILE",
    "PREDICTIONS_FILE",
    "PROGRESS_FILE",
    "REPORTS_DIR",
    "SPEC_FILE",
    "STATE_FILE",
    "STORE_PREFIX",
    "VAL_FILE",
    "base_cache_dir",
    "base_cache_name",
    "base_cache_target",
    "board_cache_dir",
    "epoch_dir",
    "epoch_of",
    "hub_cache_dir",
    "job_dir",
]

# --- the top of the data directory
JOBS_DIR = "jobs"  # one folder per GPU job, and the base caches
REPORTS_DIR = "reports"  # reports/<snapshot>/
MODELS_DIR = "models"  # converted target models
CACHE_DIR = "cache"  # kept results of commands (cache/leaderboard/)
BOARD_CACHE_DIR = "leaderboard"  # under CACHE_DIR: `clkt leaderboard`'s results (clkt.report.board_cache)
BOARD_CACHE_KEEP = 32  # how many of those results are kept (the newest)
STORE_PREFIX = "clkt.db"  # the SQLite store and its -wal/-shm files
EDIT_STATS_DIR = "edit-stats"  # knowledge editing's key statistics, one file per model x layer (kept by retention)

# --- a job's folder, jobs/<id>/
SPEC_FILE = "spec.json"  # JobSpec: what the consumer asks (clkt.inject.contract)
OUTCOME_FILE = "outcome.json"  # JobOutcome: the job's results, written last on success
FAILURE_FILE = "failure.json"  # JobFailure: why it failed
ENDED_FILE = "ended.json"  # RunEnded: a run that ended, brought back, not committed yet (a restarted daemon takes it)
PROGRESS_FILE = "progress.json"  # JobProgress: where it is (the status page, the consumer's log)
LOG_FILE = "job.log"  # the job process's output
PREDICTIONS_FILE = "predictions.jsonl"  # every answer, the control split's too
OPEN_PREDICTIONS_FILE = "open_predictions.jsonl"  # every open answer (the open track), scored, both splits
CKPT_DIR = "checkpoints"  # checkpoints/epoch-<n>/, one per finished epoch
EPOCH_PREFIX = "epoch-"
STATE_FILE = "state.json"  # in an epoch's folder: the epoch's loss, tokens and time (it counts once this is there)
OPTIM_FILE = "optim.pt"  # in an epoch's folder: the optimizer/scheduler state (the last epoch only)
VAL_FILE = "val.json"  # in an epoch's folder: its validation score (clkt.inject.best_epoch)
EDITS_FILE = "edits.json"  # in checkpoints/ of a knowledge-editing job: its requests, layers and update norms

# --- the base model's answers, jobs/base/<snapshot>/<target>-<key>.jsonl
BASE_DIR = "base"
BASE_CACHE_KEY_HEX = 16  # the key: 16 hex digits of what the answers depend on
_BASE_CACHE_SUFFIX = ".jsonl"


def job_dir(data_dir: Path, job_id: int) -> Path:
    """A GPU job's folder."""
    return data_dir / JOBS_DIR / str(job_id)


def epoch_dir(ckpt_root: Path, epoch: int) -> Path:
    """An epoch's checkpoint folder under a job's `checkpoints/`."""
    return ckpt_root / f"{EPOCH_PREFIX}{epoch}"


def epoch_of(name: str) -> int | None:
    """The epoch an `epoch-<n>` folder name holds; None for any other name."""
    n = name.removeprefix(EPOCH_PREFIX)
    return int(n) if n != name and n.isdigit() else None


def base_cache_dir(data_dir: Path, snapshot_id: str) -> Path:
    """Where the base answers of a snapshot's jobs are cached."""
    return data_dir / JOBS_DIR / BASE_DIR / snapshot_id


def base_cache_name(target: str, key: str) -> str:
    """A base cache file's name: the target's answers under one key."""
    return f"{target}-{key}{_BASE_CACHE_SUFFIX}"


def base_cache_target(name: str) -> str | None:
    """The target a base cache file's name is for; None when `name` is not one."""
    stem = name.removesuffix(_BASE_CACHE_SUFFIX)
    k = BASE_CACHE_KEY_HEX
    if stem == name or len(stem) <= k + 1 or stem[-k - 1] != "-":
        return None
    return stem[: -k - 1]


def board_cache_dir(data_dir: Path) -> Path:
    """`clkt leaderboard`'s kept results."""
    return data_dir / CACHE_DIR / BOARD_CACHE_DIR


def hub_cache_dir(data_dir: Path) -> Path:
    """Snapshots read from the Hub by `clkt evaluate hf://...` (`clkt.packs.hub`): `<repo>/<commit>/<snapshot id>/`."""
    return data_dir / CACHE_DIR / "hub"

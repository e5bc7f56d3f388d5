"""The job process: `python -m clkt.inject.run_job <artifacts>/spec.json`.

Runs one `JobSpec` (`clkt.inject.job.InjectionJob`) and writes `outcome.json` (exit 0) or `failure.json`
(exit 3 for a failure that retrying cannot fix, 1 otherwise). The GPU consumer starts it, so an out-of-memory error or a
crash inside torch ends this process, never the daemon. An out-of-memory error is retried at a smaller size
(`retry_with`: half the training micro-batch, or half the configured evaluation batch) until there is none.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from clkt.errors import ModelUnavailableError, SnapshotError, UserError
from clkt.evaluate.memory import OutOfMemory
from clkt.inject.contract import (
    FailureKind,
    JobFailure,
    JobSpec,
    RetryWith,
    write_json_atomic,
)
from clkt.inject.job import InjectionJob, check_spec
from clkt.inject.trainer import TrainingDiverged
from clkt.layout import FAILURE_FILE, OUTCOME_FILE

__all__ = ["EXIT_OK", "EXIT_PERMANENT", "EXIT_RETRYABLE", "main", "oom_retry"]

EXIT_OK = 0
EXIT_RETRYABLE = 1
EXIT_PERMANENT = 3


def _die_with_parent() -> None:
    """A job must not outlive the daemon that started it (kill -9 of the daemon included): on Linux the
    kernel sends SIGKILL when the parent dies; elsewhere a watchdog thread notices the new parent."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(EXIT_RETRYABLE)
            time.sleep(1.0)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(EXIT_RETRYABLE)


def oom_retry(e: OutOfMemory, spec: JobSpec) -> RetryWith | None:
    """The smaller size the next attempt runs at after `e`, or None when there is none left."""
    size = e.batch_size
    if size is None or size <= 1:
        return None
    if e.where == "train":
        return RetryWith(micro_batch_size=size // 2)
    if e.where == "eval" and spec.gpu.eval_batch_size is not None:  # an automatic size has halved to 1 already
        return RetryWith(eval_batch_size=size // 2)
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    _die_with_parent()
    if len(args) != 1:
        print("usage: python -m clkt.inject.run_job <spec.json>", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)

    spec = JobSpec.model_validate_json(Path(args[0]).read_text(encoding="utf-8"))
    out_dir = spec.artifacts_dir
    (out_dir / FAILURE_FILE).unlink(missing_ok=True)

    def failed(kind: FailureKind, message: str, permanent: bool, retry: RetryWith | None = None) -> int:
        write_json_atomic(out_dir / FAILURE_FILE, JobFailure(kind=kind, message=message, permanent=permanent, retry_with=retry))
        logging.getLogger("clkt.inject").error("job %d failed (%s): %s", spec.job_id, kind.value, message)
        return EXIT_PERMANENT if permanent else EXIT_RETRYABLE

    try:
        check_spec(spec)
        outcome = InjectionJob(spec).run()
    except TrainingDiverged as e:
        return failed(FailureKind.nan_loss, str(e), True)
    except OutOfMemory as e:
        retry = oom_retry(e, spec)
        if retry is None:
            hint = "" if spec.gpu.gradient_checkpointing or e.where != "train" else " (gpu.gradient_checkpointing = true saves memory)"
            return failed(FailureKind.out_of_memory, f"{e}; nothing smaller to retry at{hint}", True)
        return failed(FailureKind.out_of_memory, str(e), False, retry)
    except ModelUnavailableError as e:
        return failed(FailureKind.model_unavailable, str(e), True)
    except (SnapshotError, UserError) as e:
        return failed(FailureKind.bad_input, str(e), True)
    except MemoryError as e:
        return failed(FailureKind.out_of_memory, f"out of host memory: {e}", True)
    except Exception as e:  # noqa: BLE001 - torch errors and the like: record, let the queue retry
        if "out of memory" in str(e).lower():
            return failed(FailureKind.out_of_memory, str(e)[:2000], True)
        traceback.print_exc()
        return failed(FailureKind.crashed, f"{type(e).__name__}: {e}"[:4000], False)
    write_json_atomic(out_dir / OUTCOME_FILE, outcome)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

"""Micro-batching of local generation: the prompts that concurrent callers submit together run as one call.

Greedy decoding of a small batch is bound by reading the weights once per step, not by arithmetic, so one
`generate` over the prompts of many entities costs little more than over one entity's (the probe stage on 2
CPU cores, Gemma 3 270M, 9 entities x 5 languages x 48 new tokens: 175 s one entity at a time, 38 s all at
once, the same 45 answers). `PromptBatcher` waits `window_s` after the first request for the others, groups
the requests by key (the target), runs each group once in the model thread (`clkt.cpu_share.run_model_work`),
one run at a time, and hands every caller its own answers in order. A caller that is cancelled only loses its own answers; a failed run fails
the callers of that group with its exception.

Requests that trickle in (one entity every few seconds, each with a prompt per language) would run in batches of
one or two, each as dear as a batch of eight (`bench/probe_batch.py`: Gemma 3 270M on one thread, 1.7 s a prompt
in batches of 2, 0.45 s in batches of 8). So while prompts of a key have been arriving steadily (their rate over
the last `RATE_WINDOW_S`), the first request waits on for as long as that rate says its group needs to reach
`fill` prompts, never past `max_wait_s` after it came; a group that reaches `fill`, or whose rate no longer
promises it in time, runs at once. A lone request (no steady arrivals) waits `window_s` only. In `bench/year.py`
the probes of a month's ~40 entities, two languages and two targets, took a whole core in batches of about 2.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar

from clkt import cpu_share
from clkt.errors import UserError

__all__ = ["PromptBatcher"]

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)
class _Request(Generic[K]):
    key: K
    prompts: list[str]
    future: asyncio.Future[list[str]] = field(repr=False)
    at: float = 0.0  # when it was submitted (the event loop's clock)


class PromptBatcher(Generic[K]):
    """`await batcher.submit(key, prompts)` -> one answer per prompt; `run(key, prompts)` is synchronous."""

    WINDOW_S: ClassVar[float] = 0.2  # how long the first request waits for its neighbours
    FILL: ClassVar[int] = 8  # prompts of one key worth waiting for while they arrive steadily
    MAX_WAIT_S: ClassVar[float] = 30.0  # the longest a request waits for them
    RATE_WINDOW_S: ClassVar[float] = 60.0  # the arrival rate of a key's prompts is counted over this long

    def __init__(
        self, run: Callable[[K, list[str]], list[str]], *, name: str, window_s: float | None = None,
        fill: int | None = None, max_wait_s: float | None = None,
    ) -> None:
        """`fill`/`max_wait_s`: see the module docstring (`fill = 1` or `max_wait_s = 0`: never wait past `window_s`)."""
        self._run = run
        self._name = name
        self._window_s = self.WINDOW_S if window_s is None else window_s
        self._fill = self.FILL if fill is None else fill
        self._max_wait_s = self.MAX_WAIT_S if max_wait_s is None else max_wait_s
        self._arrivals: dict[K, deque[tuple[float, int]]] = {}  # key -> (when, prompts) over the last RATE_WINDOW_S
        self._arrived = asyncio.Event()
        self._queue: list[_Request[K]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.runs = 0  # calls of `run` so far

    async def submit(self, key: K, prompts: Sequence[str]) -> list[str]:
        if self._closed:
            raise UserError(f"{self._name} is closed")
        if not prompts:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[str]] = loop.create_future()
        self._queue.append(_Request(key, list(prompts), future, loop.time()))
        self._recent(key, loop.time()).append((loop.time(), len(prompts)))
        self._arrived.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name=self._name)
        return await future

    async def aclose(self) -> None:
        """Cancel the run in progress (its thread finishes on its own) and every waiting caller; idempotent."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for r in self._queue:
            r.future.cancel()
        self._queue.clear()

    async def _drain(self) -> None:
        while self._queue:
            await asyncio.sleep(self._window_s)
            await self._gather()
            batch, self._queue = self._queue, []
            try:
                groups: dict[K, list[_Request[K]]] = {}
                for r in batch:
                    if not r.future.done():  # a caller cancelled while it waited needs no answers
                        groups.setdefault(r.key, []).append(r)
                for key, requests in groups.items():
                    await self._run_group(key, requests)
            finally:  # cancelled (daemon stop): nobody of this round may wait for ever
                for r in batch:
                    if not r.future.done():
                        r.future.cancel()

    async def _gather(self) -> None:
        """Wait on while a queued group is due to reach `fill` prompts before its first request has waited
        `max_wait_s` (woken by each arrival to look again)."""
        loop = asyncio.get_running_loop()
        while self._queue:
            now = loop.time()
            left = self._max_wait_s - (now - min(r.at for r in self._queue))
            if left <= 0 or not self._due(now, left):
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), timeout=left)
            except TimeoutError:
                return

    def _due(self, now: float, left: float) -> bool:
        """Whether no queued group has `fill` prompts yet and one of them should, at its key's recent rate of
        arrival, within `left` seconds."""
        queued: dict[K, int] = {}
        for r in self._queue:
            if not r.future.done():
                queued[r.key] = queued.get(r.key, 0) + len(r.prompts)
        if not queued or max(queued.values()) >= self._fill:
            return False
        for key, n in queued.items():
            rate = sum(k for _, k in self._recent(key, now)) / self.RATE_WINDOW_S
            if rate > 0 and (self._fill - n) / rate <= left:
                return True
        return False

    def _recent(self, key: K, now: float) -> deque[tuple[float, int]]:
        """The arrivals of `key`'s prompts within the last `RATE_WINDOW_S` before `now` (older ones dropped)."""
        seen = self._arrivals.setdefault(key, deque())
        while seen and seen[0][0] < now - self.RATE_WINDOW_S:
            seen.popleft()
        return seen

    async def _run_group(self, key: K, requests: list[_Request[K]]) -> None:
        flat = [p for r in requests for p in r.prompts]
        self.runs += 1
        try:
            answers = await cpu_share.run_model_work(self._run, key, flat)
            if len(answers) != len(flat):
                raise RuntimeError(f"{self._name}: {len(answers)} answers for {len(flat)} prompts")
        except Exception as e:  # noqa: BLE001 - handed to every caller of this group, who decides
            for r in requests:
                if not r.future.done():
                    r.future.set_exception(e)
            return
        start = 0
        for r in requests:
            end = start + len(r.prompts)
            if not r.future.done():
                r.future.set_result(answers[start:end])
            start = end

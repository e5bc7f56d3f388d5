"""PromptBatcher: concurrent callers share one run per key; each gets its own answers; failures and
cancellations stay with the callers they belong to."""

from __future__ import annotations

import asyncio
import threading

import pytest

from clkt.errors import UserError
from clkt.targets.batching import PromptBatcher
from tests.conftest import wait_for


class Recorder:
    def __init__(self, *, fail_on: str | None = None, gate: threading.Event | None = None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_on = fail_on
        self.gate = gate

    def __call__(self, key: str, prompts: list[str]) -> list[str]:
        if self.gate is not None:
            self.gate.wait(5)
        self.calls.append((key, list(prompts)))
        if key == self.fail_on:
            raise RuntimeError(f"model {key} failed")
        return [f"{key}:{p.upper()}" for p in prompts]


async def test_concurrent_requests_share_one_run_per_key() -> None:
    rec = Recorder()
    b: PromptBatcher[str] = PromptBatcher(rec, name="t", window_s=0.05)
    res = await asyncio.gather(b.submit("m", ["a", "b"]), b.submit("m", ["c"]), b.submit("n", ["d"]), b.submit("m", []))
    assert res == [["m:A", "m:B"], ["m:C"], ["n:D"], []]
    assert sorted(rec.calls) == [("m", ["a", "b", "c"]), ("n", ["d"])] and b.runs == 2
    await b.aclose()


async def test_requests_during_a_run_go_into_the_next_one() -> None:
    gate = threading.Event()
    rec = Recorder(gate=gate)
    b: PromptBatcher[str] = PromptBatcher(rec, name="t", window_s=0.01)
    first = asyncio.create_task(b.submit("m", ["1"]))
    await wait_for(lambda: b.runs > 0)
    later = [asyncio.create_task(b.submit("m", [str(i)])) for i in (2, 3)]
    await wait_for(lambda: len(b._queue) == 2)  # both queued while the first run holds the gate
    gate.set()
    assert await first == ["m:1"] and [await t for t in later] == [["m:2"], ["m:3"]]
    assert rec.calls == [("m", ["1"]), ("m", ["2", "3"])]
    await b.aclose()


async def test_a_failed_run_fails_only_its_own_group() -> None:
    b: PromptBatcher[str] = PromptBatcher(Recorder(fail_on="bad"), name="t", window_s=0.05)
    good, bad1, bad2 = await asyncio.gather(
        b.submit("ok", ["x"]), b.submit("bad", ["y"]), b.submit("bad", ["z"]), return_exceptions=True
    )
    assert good == ["ok:X"]
    assert isinstance(bad1, RuntimeError) and isinstance(bad2, RuntimeError) and "model bad failed" in str(bad1)
    assert await b.submit("ok", ["again"]) == ["ok:AGAIN"]  # the batcher lives on
    await b.aclose()


async def test_a_wrong_answer_count_is_an_error_not_a_shifted_answer() -> None:
    b: PromptBatcher[str] = PromptBatcher(lambda key, prompts: prompts[:-1], name="t", window_s=0.01)
    with pytest.raises(RuntimeError, match="1 answers for 2 prompts"):
        await b.submit("m", ["a", "b"])
    await b.aclose()


async def test_a_cancelled_caller_loses_only_its_answers() -> None:
    rec = Recorder()
    b: PromptBatcher[str] = PromptBatcher(rec, name="t", window_s=0.05)
    gone = asyncio.create_task(b.submit("m", ["gone"]))
    kept = asyncio.create_task(b.submit("m", ["kept"]))
    await wait_for(lambda: len(b._queue) == 2, interval=0.001)  # both queued, inside the 50 ms window
    gone.cancel()
    assert await kept == ["m:KEPT"]
    assert rec.calls == [("m", ["kept"])]  # the cancelled caller's prompt was never run
    await b.aclose()


async def test_close_cancels_the_waiting_callers_and_refuses_new_ones() -> None:
    gate = threading.Event()
    b: PromptBatcher[str] = PromptBatcher(Recorder(gate=gate), name="t", window_s=0.01)
    waiting = asyncio.create_task(b.submit("m", ["a"]))
    await wait_for(lambda: b.runs > 0)
    await b.aclose()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    with pytest.raises(UserError, match="closed"):
        await b.submit("m", ["b"])


class _Steady(PromptBatcher[str]):
    RATE_WINDOW_S = 0.5


async def _trickle(b: PromptBatcher[str], n: int, every_s: float) -> list[list[str]]:
    """`n` one-prompt requests, one every `every_s` seconds, none waiting for the others' answers."""
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(b.submit("m", [str(i)])))
        await asyncio.sleep(every_s)
    return await asyncio.gather(*tasks)


async def test_steady_arrivals_wait_for_a_full_batch_a_lone_one_does_not() -> None:
    eager, filling = Recorder(), Recorder()
    eager_b = _Steady(eager, name="eager", window_s=0.001, fill=1)
    filling_b = _Steady(filling, name="filling", window_s=0.001, fill=8, max_wait_s=2.0)
    assert await _trickle(filling_b, 40, 0.02) == [[f"m:{i}"] for i in range(40)]  # every answer, in order
    await _trickle(eager_b, 40, 0.02)
    sizes = [len(p) for _, p in filling.calls]
    assert sum(sizes) == 40 and max(sizes) >= 8 and len(sizes) < len(eager.calls) / 2, (sizes, len(eager.calls))
    assert [p for _, p in filling.calls] == [[str(i) for i in range(a, a + k)] for a, k in
                                             zip([sum(sizes[:j]) for j in range(len(sizes))], sizes, strict=True)]
    await asyncio.sleep(0.6)  # the trickle is over: its rate has left the window
    t = asyncio.get_running_loop().time()
    assert await filling_b.submit("m", ["lone"]) == ["m:LONE"]
    assert asyncio.get_running_loop().time() - t < 1.0  # the window only, never max_wait_s
    await eager_b.aclose()
    await filling_b.aclose()


async def test_a_request_waits_no_longer_than_max_wait_for_neighbours_that_do_not_come() -> None:
    rec = Recorder()
    b = _Steady(rec, name="t", window_s=0.001, fill=4, max_wait_s=0.4)
    await asyncio.gather(*(b.submit("m", [str(i)]) for i in range(3)))  # 3 prompts in the last 0.5 s: 6 a second
    t = asyncio.get_running_loop().time()
    assert await b.submit("m", ["x"]) == ["m:X"]  # 2 more were due within 0.4 s; none came
    assert 0.35 <= asyncio.get_running_loop().time() - t < 3.0
    assert rec.calls[-1] == ("m", ["x"])
    await b.aclose()

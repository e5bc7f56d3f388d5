"""`bench/incontext.py`'s own parts that decide its figures: the proxy's limit model (the fake provider's: a minute's
bucket and the limit enforced per second) and where it finds the demo snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.incontext as bench


def test_the_proxy_admits_a_request_a_second_within_the_minutes_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(bench.time, "monotonic", lambda: clock[0])
    p = bench.Proxy(upstream="http://127.0.0.1:9", rpm=3)
    p._last, p._second, p._minute = clock[0], p.burst, 3.0  # as start() leaves it: full
    assert p.admit() == 0.0
    assert p.admit() == pytest.approx(1.0)  # a second's bucket holds one request: refused, 1 s to wait
    clock[0] += 1.0
    assert p.admit() == 0.0
    clock[0] += 1.0
    assert p.admit() == 0.0
    clock[0] += 1.0
    assert p.admit() == pytest.approx(20.0 - 3.0 * 3 / 60 * 20, abs=1e-6)  # the minute's 3 spent: 17 s more
    assert len(p.admit_times) == 3
    fast = bench.Proxy(upstream="http://127.0.0.1:9", rpm=600)  # 10/s: a second holds 10
    fast._last, fast._second, fast._minute = clock[0], fast.burst, 600.0
    assert [fast.admit() for _ in range(11)][-2:] == [0.0, pytest.approx(0.1)]


def test_the_snapshot_is_the_single_demo_one_or_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"give --demo DIR \(a finished `clkt demo` folder\) or --snapshot DIR"):
        bench.find_snapshot(None, None)  # no default folder (it was /tmp/demo1)
    with pytest.raises(SystemExit, match=r"--demo .*nowhere: no such folder"):
        bench.find_snapshot(None, str(tmp_path / "nowhere"))
    demo = str(tmp_path)
    with pytest.raises(SystemExit, match=r"no single demo snapshot under .* \(none\); give --snapshot DIR"):
        bench.find_snapshot(None, demo)
    one = tmp_path / "snapshots" / "demo" / "2026-12-03"
    one.mkdir(parents=True)
    (one / "manifest.json").write_text(json.dumps({"snapshot_id": "demo-x"}), encoding="utf-8")
    assert bench.find_snapshot(None, demo) == one
    two = tmp_path / "clkt-data" / "snapshots" / "demo" / "2026-12-04"
    two.mkdir(parents=True)
    (two / "manifest.json").write_text(json.dumps({"snapshot_id": "demo-y"}), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"\(2: "):
        bench.find_snapshot(None, demo)
    assert bench.find_snapshot(str(one), demo) == one
    with pytest.raises(SystemExit, match=r"no manifest\.json there"):
        bench.find_snapshot(str(tmp_path / "nothing"), None)

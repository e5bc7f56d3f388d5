"""The probe stage's device and its model cache: least recently used evicted, bounded by count and by weight bytes;
an attention implementation that is not installed is one clear error before any weight is read."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch

from clkt.config import GpuSettings, TargetSettings
from clkt.errors import UserError
from clkt.targets import loader
from clkt.targets.loader import ModelCache, check_attention, probe_device, resolve_device


@pytest.fixture()
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`load_target` replaced by one that builds a small module (1,000 float32 weights per model)."""
    seen: list[str] = []

    def fake(target: TargetSettings, *, data_dir: Path, device: str = "cpu", **_: Any) -> tuple[Any, Any]:
        seen.append(target.name)
        return torch.nn.Linear(10, 100, bias=False), object()

    monkeypatch.setattr(loader, "load_target", fake)
    return seen


def _t(name: str) -> TargetSettings:
    return TargetSettings(name=name, model=f"/models/{name}")


def test_least_recently_used_is_evicted(loads: list[str], tmp_path: Path) -> None:
    cache = ModelCache(size=2)
    for name in ("a", "b", "a", "c", "a", "b"):
        cache.get(_t(name), data_dir=tmp_path, device="cpu")
    # a, b loaded; a hit (a most recent); c evicts b; a hit; b again evicts c
    assert loads == ["a", "b", "c", "b"]
    assert [k[0] for k in cache.resident()] == ["/models/a", "/models/b"]


def test_weight_bytes_bound_the_cache(loads: list[str], tmp_path: Path) -> None:
    cache = ModelCache(size=8, max_bytes=9_000)  # two models of 4,000 bytes fit, three do not
    for name in ("a", "b", "c"):
        cache.get(_t(name), data_dir=tmp_path, device="cpu")
    assert [k[0] for k in cache.resident()] == ["/models/b", "/models/c"]
    cache.configure(size=1, max_bytes=None)
    assert [k[0] for k in cache.resident()] == ["/models/c"]


def test_probe_device_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe_device(GpuSettings(probe_device="cuda:3")) == "cuda:3"
    assert probe_device(GpuSettings(devices=["cpu"])) == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    # two GPUs, one trains: the probe takes the other
    assert resolve_device(probe_device(GpuSettings(devices=["cuda:0"]))) == "cuda:1"
    assert resolve_device(probe_device(GpuSettings(devices=["auto"]))) == "cuda:1"
    # every GPU trains: shared with the first training device
    assert resolve_device(probe_device(GpuSettings(devices=["cuda:0", "cuda:1"]))) == "cuda:0"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device(probe_device(GpuSettings(devices=["cuda:0"]))) == "cuda:0"  # one GPU: shared


def test_probe_device_with_the_ray_engine_is_this_machines_first() -> None:
    gpu = GpuSettings(engine="ray", ray_address="10.0.0.1:6379", devices=["cuda:0"])
    assert probe_device(gpu) == "cuda:0"


def test_attention_not_installed_is_one_clear_error() -> None:
    check_attention("sdpa")
    check_attention(None)
    if importlib.util.find_spec("flash_attn") is not None:  # installed here: accepted
        check_attention("flash_attention_2")
        return
    with pytest.raises(UserError, match="flash-attn package, which is not installed on"):
        check_attention("flash_attention_2")

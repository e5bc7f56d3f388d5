"""The settings of the leaderboard work: the gate's sample of rejected entities to probe (`spec.ineligible_probe_rate`,
a share in [0, 1]) and CircularEval (`gpu.circular`, a target's `circular`); bad values name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.config import load_settings
from clkt.errors import ConfigError


def test_the_defaults_and_a_file_that_sets_them(tmp_path: Path) -> None:
    s = load_settings(None, environ={})
    assert s.spec.ineligible_probe_rate == 0.05 and s.gpu.circular is False and s.spec.targets[0].circular is None
    cfg = tmp_path / "c.toml"
    cfg.write_text('[spec]\nineligible_probe_rate = 0.25\n[gpu]\ncircular = true\n'
                   '[[spec.targets]]\nname = "t"\nmodel = "org/qwen2.5-7b"\ncircular = false\n')
    s = load_settings(cfg, environ={})
    assert s.spec.ineligible_probe_rate == 0.25 and s.gpu.circular is True and s.spec.targets[0].circular is False


@pytest.mark.parametrize(
    ("toml", "env", "key", "reason"),
    [
        ("[spec]\nineligible_probe_rate = 1.5\n", {}, "spec.ineligible_probe_rate", "less than or equal to 1"),
        ("[spec]\nineligible_probe_rate = -0.1\n", {}, "spec.ineligible_probe_rate", "greater than or equal to 0"),
        ("[spec]\nineligible_probe_rate = nan\n", {}, "spec.ineligible_probe_rate", "finite number"),
        ("", {"CLKT_SPEC__INELIGIBLE_PROBE_RATE": "inf"}, "spec.ineligible_probe_rate", "finite number"),
        ("[gpu]\ncircular = \"maybe\"\n", {}, "gpu.circular", "valid boolean"),
    ],
)
def test_a_bad_value_names_the_key(tmp_path: Path, toml: str, env: dict[str, str], key: str, reason: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    with pytest.raises(ConfigError) as ei:
        load_settings(cfg, environ=env)
    assert ei.value.key == key
    assert reason in ei.value.reason

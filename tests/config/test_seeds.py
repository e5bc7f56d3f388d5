"""`spec.seeds`: the training seeds every GPU job of the spec runs with (issue 35, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.config import load_settings
from clkt.config.spec import MAX_SEED, SpecSettings, training_seed
from clkt.errors import ConfigError


def test_the_default_is_one_seed_zero_which_trains_as_before() -> None:
    assert SpecSettings().seeds == [0]
    assert training_seed(7, 0) == 7  # `[gpu] seed` alone, as a job trained before seeds
    assert training_seed(7, 2) == 9
    assert training_seed(MAX_SEED, 1) == 0  # wraps into the seed range


def test_several_seeds_load_from_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "ok.toml"
    cfg.write_text("[spec]\nseeds = [0, 1, 2]\n")
    assert load_settings(cfg, environ={}).spec.seeds == [0, 1, 2]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("[]", "at least one training seed"),
        ("[0, 1, 1]", "distinct, [1] repeated"),
        ("[0, -3]", "from 0 to 4294967295, got [-3]"),
        ("[4294967296]", "got [4294967296]"),
    ],
)
def test_bad_seeds_are_refused_in_one_line_naming_the_field(tmp_path: Path, value: str, reason: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f"[spec]\nseeds = {value}\n")
    with pytest.raises(ConfigError) as ei:
        load_settings(cfg, environ={})
    assert ei.value.key == "spec.seeds"
    assert reason in ei.value.reason
    assert "\n" not in str(ei.value)

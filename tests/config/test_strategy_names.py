"""The strategy names, declared once in the kernel: the config accepts those, refuses others in one line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clkt.config import SpecSettings
from clkt.config.strategies import (
    BUILTIN_STRATEGIES,
    StrategyConflictError,
    StrategyName,
    StrategyNames,
    UnknownStrategyError,
    check_strategy,
    strategy_label,
    strategy_names,
)
from clkt.errors import UserError


def test_the_builtin_names_are_the_configs_and_the_default_is_first() -> None:
    assert strategy_names() == ["cpt-lora", "sft-lora", "sft-facts-lora", "full-ft", "memit"] == [s.name for s in BUILTIN_STRATEGIES]
    assert SpecSettings().strategies == ["cpt-lora"]
    assert SpecSettings(strategies=["full-ft", "sft-lora"]).strategies == ["full-ft", "sft-lora"]
    assert strategy_label("sft-lora") == "supervised fine-tuning (LoRA)"
    assert strategy_label("retired-one") == "retired-one"  # a stored job of a strategy since removed still reads


def test_an_unknown_name_is_one_line_naming_it_and_the_known_ones() -> None:
    with pytest.raises(UnknownStrategyError) as ei:
        check_strategy("magic")
    assert str(ei.value) == "unknown strategy 'magic'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora"
    assert isinstance(ei.value, UserError) and isinstance(ei.value, ValueError)
    with pytest.raises(ValidationError, match=r"unknown strategy 'magic'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora"):
        SpecSettings(strategies=["cpt-lora", "magic"])


def test_a_name_registered_twice_raises_and_unregistering_takes_it_away() -> None:
    names = StrategyNames(BUILTIN_STRATEGIES)
    with pytest.raises(StrategyConflictError, match="'cpt-lora' is already registered"):
        names.register(StrategyName(name="cpt-lora", label="again", family="x"))
    names.register(StrategyName(name="alpha-edit", label="AlphaEdit", family="knowledge editing"))
    assert names.names()[-1] == "alpha-edit" and "alpha-edit" in names
    names.unregister("alpha-edit")
    assert "alpha-edit" not in names
    with pytest.raises(UnknownStrategyError):
        names.unregister("alpha-edit")


@pytest.mark.parametrize("bad", ["", "CPT", "two words", " x"])
def test_a_name_is_lower_case_words_joined_by_dashes(bad: str) -> None:
    with pytest.raises(UserError, match="lower-case"):
        StrategyName(name=bad, label="x", family="x")


def test_a_strategys_own_learning_rate_replaces_the_shared_one_and_a_bad_entry_is_named() -> None:
    from clkt.config import GpuSettings
    from clkt.inject.strategies import get_recipe

    gpu = GpuSettings(learning_rate=2e-3, full_ft_learning_rate=1e-5, learning_rates={"sft-facts-lora": 5e-4})
    rates = {name: get_recipe(name).learning_rate(gpu) for name in ("cpt-lora", "sft-lora", "sft-facts-lora", "full-ft")}
    assert rates == {"cpt-lora": 2e-3, "sft-lora": 2e-3, "sft-facts-lora": 5e-4, "full-ft": 1e-5}
    assert GpuSettings(learning_rates={"full-ft": 3e-5}).learning_rates == {"full-ft": 3e-5}
    assert "learning_rates" not in GpuSettings().model_dump()  # unset: stored settings as before
    with pytest.raises(ValidationError, match=r"unknown strategy 'sft-fact-lora'; known: "):
        GpuSettings(learning_rates={"sft-fact-lora": 5e-4})
    with pytest.raises(ValidationError, match=r"learning_rates: cpt-lora = 2\.0 is not in \(0, 1\]"):
        GpuSettings(learning_rates={"cpt-lora": 2.0})

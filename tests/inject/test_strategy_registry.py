"""The injector registry: one injector per declared name, found by its module; what each leaves behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clkt.config import EMBEDDED_TARGET, GpuSettings, RetentionSettings
from clkt.config.strategies import (
    STRATEGY_NAMES,
    StrategyConflictError,
    StrategyName,
    UnknownStrategyError,
    strategy_names,
)
from clkt.errors import UserError
from clkt.inject.bundles import artifacts_bundle, unpack
from clkt.inject.contract import JobSpec
from clkt.inject.strategies import INJECTORS, CptLora, FullFinetune, TrainedInjector, injector_for, module_for
from clkt.layout import OUTCOME_FILE, SPEC_FILE
from clkt.retention import plan_gc
from storage.engine import Store
from tests.retention._data import make_data_dir


@pytest.fixture()
def declared_only() -> Iterator[str]:
    """A name declared in the kernel whose module does not exist."""
    STRATEGY_NAMES.register(StrategyName(name="no-module", label="x", family="x"))
    try:
        yield "no-module"
    finally:
        STRATEGY_NAMES.unregister("no-module")


def test_every_declared_name_has_its_injector_from_its_module() -> None:
    for name in strategy_names():
        injector = injector_for(name)
        assert injector.name == name
        trains = isinstance(injector, TrainedInjector)  # the epochless ones (memit) are their module's own class
        assert type(injector).__module__ == ("clkt.inject.strategies._trained" if trains else module_for(name))
        assert module_for(name) == f"clkt.inject.strategies.{name.replace('-', '_')}"
    assert INJECTORS.registered() == sorted(strategy_names())


def test_unknown_undeclared_and_moduleless_names_are_refused_in_one_line(declared_only: str) -> None:
    with pytest.raises(UnknownStrategyError, match=r"^unknown strategy 'magic'; known: cpt-lora, full-ft, memit, no-module, sft-facts-lora, sft-lora$"):
        injector_for("magic")
    with pytest.raises(UserError, match=r"^strategy 'no-module' is declared but has no module clkt\.inject\.strategies\.no_module$"):
        injector_for(declared_only)
    with pytest.raises(UserError, match="has no declared strategy name"):
        INJECTORS.register(TrainedInjector(_Named("undeclared")))  # type: ignore[arg-type]


def test_an_injector_registered_twice_raises() -> None:
    with pytest.raises(StrategyConflictError, match="'cpt-lora' is already registered"):
        INJECTORS.register(TrainedInjector(CptLora()))
    assert isinstance(injector_for("cpt-lora"), TrainedInjector)


def test_the_weights_dtype_is_the_injectors() -> None:
    assert injector_for("cpt-lora").weights_dtype("cuda:0") == "bfloat16"
    assert injector_for("cpt-lora").weights_dtype("cpu") == "float32"
    assert injector_for("full-ft").weights_dtype("cuda") == "float32"  # fp32 master weights
    assert injector_for("memit").weights_dtype("cuda") == "bfloat16"  # no training: the edits are solved in fp32


class _Named(CptLora):
    def __init__(self, name: str) -> None:
        self.name = name


def _job_folder(root: Path, strategy: str, *, weights: str) -> Path:
    spec = JobSpec(job_id=1, snapshot_id="s", snapshot_dir=root, target=EMBEDDED_TARGET, strategy=strategy, train_lang="en",
                   gpu=GpuSettings(), data_dir=root, artifacts_dir=root / "artifacts")
    art = spec.artifacts_dir
    for e in (1, 2, 3):
        d = art / "checkpoints" / f"epoch-{e}"
        d.mkdir(parents=True)
        for name in ("state.json", "val.json", "optim.pt", weights, "adapter_config.json"):
            (d / name).write_text(name)
    (art / SPEC_FILE).write_text(spec.model_dump_json())
    (art / OUTCOME_FILE).write_text('{"best_epoch": 2}')
    return art


@pytest.mark.parametrize(
    ("strategy", "weights", "best_files"),
    [("cpt-lora", "adapter_model.safetensors", ["adapter_config.json", "adapter_model.safetensors", "state.json", "val.json"]),
     ("full-ft", "model.safetensors", ["adapter_config.json", "state.json", "val.json"])],
)
def test_a_cluster_run_brings_back_what_its_injector_names(tmp_path: Path, strategy: str, weights: str, best_files: list[str]) -> None:
    art = _job_folder(tmp_path, strategy, weights=weights)
    names = unpack(artifacts_bundle(art), tmp_path / "back")
    ckpts = sorted(n for n in names if n.startswith("checkpoints/"))
    assert ckpts == sorted(
        [f"checkpoints/epoch-{e}/{f}" for e in (1, 3) for f in ("state.json", "val.json")]
        + [f"checkpoints/epoch-2/{f}" for f in best_files]
    )
    assert OUTCOME_FILE in names and SPEC_FILE not in names
    assert FullFinetune.weights_travel is False


def test_an_unfinished_run_brings_back_only_the_epoch_records(tmp_path: Path) -> None:
    art = _job_folder(tmp_path, "cpt-lora", weights="adapter_model.safetensors")
    (art / OUTCOME_FILE).unlink()
    names = unpack(artifacts_bundle(art), tmp_path / "back")
    assert sorted(names) == sorted(f"checkpoints/epoch-{e}/{f}" for e in (1, 2, 3) for f in ("state.json", "val.json"))


async def test_what_a_training_leaves_spare_is_what_retention_drops(store: Store, tmp_path: Path) -> None:
    """`clkt gc` (retention.epoch_adapters = "best") drops of a committed job's checkpoints exactly what its
    injector calls spare, for the same reasons."""
    lay = await make_data_dir(store, tmp_path)
    plan = await plan_gc(store, data_dir=lay.data_dir, retention=RetentionSettings())
    ckpts = lay.done / "checkpoints"
    dropped = {(r.path, r.reason) for r in plan.removals if r.path.is_relative_to(ckpts)}
    spare = injector_for("cpt-lora").spare(ckpts, best_epoch=2)
    assert dropped == {(s.path, f"job 1: {s.reason}") for s in spare}
    assert {s.path.name for s in spare} == {"epoch-1", "epoch-3", "optim.pt"}
    assert injector_for("cpt-lora").spare(ckpts, best_epoch=None) == []

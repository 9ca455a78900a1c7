#!/usr/bin/env bash
# Issue 3 GPU benchmark: ViT-B/16 at 224 px, bfloat16, batch 512, timm random-init weights
# (the reference ceiling: 8,946 forwards/s on an H200 -> ~559 test images/s for 16 conditions).
# Prints one-pass vs naive vs pure-forward rates and the two ratios (targets: >= 10x, >= 80 %).
#   bash benchmarks/extract_gpu.sh                    # on the GPU machine
#   DEVICE=cpu N_TEST=8 N_NAIVE=2 BATCH=16 bash benchmarks/extract_gpu.sh   # dry run on a CPU
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" != "cpu" ]; then
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible')"
  "$PY" -c "import torch; print(torch.cuda.get_device_name(0))"
fi
exec "$PY" benchmarks/extract.py --device "$DEVICE" --encoder vit-b16 --random-init \
  --compute-dtype bfloat16 --batch-size "${BATCH:-512}" --n-test "${N_TEST:-2048}" \
  --n-naive "${N_NAIVE:-128}" --image-size "${IMAGE_SIZE:-256}" --chunk-rows "${CHUNK_ROWS:-256}" \
  --repeats "${REPEATS:-2}" --auroc-images 0 "$@"

#!/usr/bin/env bash
# Issue 3 GPU benchmark: ViT-B/16 at 224 px, bfloat16, batch 512, timm random-init weights
# (the reference ceiling: 8,946 forwards/s on an H200 -> ~559 test images/s for 16 conditions).
# Prints one-pass vs naive vs pure-forward rates and the two ratios (targets: >= 10x, >= 80 %),
# then the same images extracted locally and over `extract --scheduler` with one worker holding
# the GPU resource (benchmarks/extract_dist.py: both rates, their ratio, identical bytes).
#   bash benchmarks/extract_gpu.sh                    # on the GPU machine
#   DEVICE=cpu ENCODER=tiny-vit N_TEST=8 N_NAIVE=2 BATCH=16 COMPUTE_DTYPE=float32 IMAGE_SIZE=64 \
#     CHUNK_ROWS=4 bash benchmarks/extract_gpu.sh    # smoke run on a CPU with a tiny model
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" != "cpu" ]; then
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible')"
  "$PY" -c "import torch; print(torch.cuda.get_device_name(0))"
fi
ENCODER=${ENCODER:-vit-b16}
COMPUTE_DTYPE=${COMPUTE_DTYPE:-bfloat16}
RANDOM_INIT=()
[ "$ENCODER" = "vit-b16" ] && RANDOM_INIT=(--random-init)
"$PY" benchmarks/extract.py --device "$DEVICE" --encoder "$ENCODER" "${RANDOM_INIT[@]}" \
  --compute-dtype "$COMPUTE_DTYPE" --batch-size "${BATCH:-512}" --n-test "${N_TEST:-2048}" \
  --n-naive "${N_NAIVE:-128}" --image-size "${IMAGE_SIZE:-256}" --chunk-rows "${CHUNK_ROWS:-256}" \
  --repeats "${REPEATS:-2}" --auroc-images 0 "$@"
echo "-- local vs distributed (one worker, resources GPU=1 on cuda)"
"$PY" benchmarks/extract_dist.py --device "$DEVICE" --encoder "$ENCODER" "${RANDOM_INIT[@]}" \
  --compute-dtype "$COMPUTE_DTYPE" --batch-size "${BATCH:-512}" --n-test "${N_TEST:-2048}" \
  --image-size "${IMAGE_SIZE:-256}" --chunk-rows "${CHUNK_ROWS:-256}"

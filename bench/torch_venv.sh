#!/usr/bin/env bash
# Makes (once) the virtual environment of PyPI's PyTorch that the benchmarks compare
# against, outside the clone, and prints its python. PyPI's Linux wheel loads its CUDA
# libraries at import even on a machine without a GPU, so its nvidia-* dependencies
# (several GB) come along.
# Usage: bench/torch_venv.sh   (FSDP_VENV: the folder, /var/cache/fsdp.c/venv-torch by default)
set -euo pipefail
VENV="${FSDP_VENV:-/var/cache/fsdp.c/venv-torch}"
TORCH_VERSION=2.15.0
ready() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "
import sys, numpy, torch
from torch.distributed.fsdp import fully_shard
sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null
}
if ! ready; then
  echo "making $VENV: torch $TORCH_VERSION and numpy from PyPI (once; several GB)" >&2
  mkdir -p "$(dirname "$VENV")"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --progress-bar off "torch==$TORCH_VERSION" numpy >&2
  ready || { echo "$VENV: torch $TORCH_VERSION with fully_shard does not import" >&2; exit 1; }
fi
echo "$VENV/bin/python"

#!/usr/bin/env bash
# Attention, forward and backward, fsdp.c's tiled kernel (bench/attention.c) beside
# PyTorch's scaled_dot_product_attention (bench/attention_torch.py, in the venv of
# scripts/torch-venv.sh), at GPT-2's heads (12 heads of 64) and Llama 3 1B's (32 query heads
# sharing 8 kv heads of 64), T from 1024 to 8192, batch 1; on cuda where a GPU is, else on
# the CPU, both with OMP_NUM_THREADS threads (default: the cores). Prints one row per
# shape: the milliseconds of each and the ratio of fsdp.c's forward + backward to PyTorch's.
# usage: bench/attention.sh BUILD_DIR [--dtypes "bf16 fp32"] [--Ts "1024 2048 4096 8192"] [--repeats N]
#            [--python PY]   (a python with torch: a lent GPU machine's own, which cannot reach PyPI)
set -euo pipefail
build=${1:?usage: bench/attention.sh BUILD_DIR [--dtypes D] [--Ts T] [--repeats N]}
shift
dtypes="bf16 fp32" Ts="1024 2048 4096 8192" repeats=3 python=""
while [ $# -gt 0 ]; do
  case $1 in
    --dtypes) dtypes=$2; shift 2 ;;
    --Ts) Ts=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    *) echo "bench/attention.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
[ -n "$python" ] || python=$("$here/../scripts/torch-venv.sh")
device=cpu
nvidia-smi -L > /dev/null 2>&1 && device=cuda
threads=${OMP_NUM_THREADS:-$(nproc)}
export OMP_NUM_THREADS=$threads
echo "# $(date -u +%FT%TZ) on $(hostname), device $device, $threads thread(s), repeats $repeats"
printf "%-6s %-5s %5s %14s %14s %14s %14s %8s\n" model dtype T "fsdp fwd ms" "fsdp bwd ms" "torch fwd ms" \
  "torch bwd ms" "fsdp/torch"
for d in $dtypes; do
  for T in $Ts; do
    for shape in "gpt2 12 12 64" "llama 32 8 64"; do
      read -r model NH NKV hd <<< "$shape"
      read -r ff fb < <("$build/bench/attention_bench" "$device" "$d" 1 "$T" "$NH" "$NKV" "$hd" "$repeats")
      read -r tf tb < <("$python" "$here/attention_torch.py" "$device" "$d" 1 "$T" "$NH" "$NKV" "$hd" "$repeats")
      ratio=$(awk -v a="$ff" -v b="$fb" -v c="$tf" -v e="$tb" 'BEGIN { printf "%.2f", (a + b) / (c + e) }')
      printf "%-6s %-5s %5s %14s %14s %14s %14s %8s\n" "$model" "$d" "$T" "$ff" "$fb" "$tf" "$tb" "$ratio"
    done
  done
done

#!/usr/bin/env bash
# Bandwidth of all-gather, reduce-scatter (Open MPI's and the ring of src/comm/ring.c)
# and all-reduce through comm.h, at W=2 and W=4 on this machine, beside rank 0's
# memcpy bandwidth: bench/comm_bench.c, launched with mpirun. A benchmark, not a test.
#
# Usage: bench/collectives.sh [BUILD_DIR] [comm_bench flags...]
# BUILD_DIR (default build) is taken relative to the repository root unless absolute.
# Worlds other than 2 and 4: WORLDS="2 3" bench/collectives.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-build}"
shift || true
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BENCH="$BUILD/bench/comm_bench"
[ -x "$BENCH" ] || { echo "no $BENCH: build first (scripts/build.sh $(basename "$BUILD"))" >&2; exit 1; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "== collectives through comm.h: $(nproc) cores, $cpu, $(mpirun --version | head -1)"
# One thread per rank, as the tests and the W>1 training runs use; W=4 oversubscribes a
# 2-core machine. --bind-to none as in bench/train_vs_pytorch.sh.
for w in ${WORLDS:-2 4}; do
  echo
  OMP_NUM_THREADS=1 \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS \
    -np "$w" "$BENCH" "$@"
done

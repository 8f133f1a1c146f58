#!/usr/bin/env bash
# Runs cpu_layers (bench/cpu_layers.c) from one or more builds in turn, for each thread
# count and dtype, several rounds, and prints what each build's kernels ran on (the
# instructions, the products' and the attention's engines), then per kernel the median
# over the rounds of each run's median, the fastest time of all, and the median rate
# (GFLOP/s of the attentions, GB/s of the rest): the machine is shared, so a
# comparison of two builds is only fair when their runs alternate. --scalar runs each
# build a second time with FSDP_SIMD=scalar (its AVX-512 paths off: fsdp/simd.h).
#
# usage: bench/cpu_layers.sh [--rounds R] [--repeats N] [--threads "1 2"] [--dtypes "fp32 bf16"]
#                            [--filter NAME] [--scalar] BUILD_DIR...
set -euo pipefail
rounds=5 repeats=20 threads="1 2" dtypes="fp32 bf16 fp16" filter="" scalar=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --scalar) scalar=1; shift ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }
# Each run: a build directory and the FSDP_SIMD it runs with.
runs=()
for dir in "$@"; do
  runs+=("$dir|")
  [ "$scalar" = 1 ] && runs+=("$dir|scalar")
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for t in $threads; do
    for d in $dtypes; do
      for i in "${!runs[@]}"; do
        dir=${runs[$i]%|*} simd=${runs[$i]#*|}
        FSDP_SIMD=$simd OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t "$dir/bench/cpu_layers" "$d" "$repeats" "$filter" \
          2>/dev/null > "$out/one" || true
        grep -v '^#' "$out/one" | sed "s|^|$i $t |" >> "$out/runs"
        # The instructions and engines each build ran on, once a build, thread count and dtype.
        if [ "$r" = 1 ]; then grep -m1 '^# .*OpenMP threads' "$out/one" | sed "s|^# |build $i, $d: |" >> "$out/engines"; fi
      done
    done
  done
done
echo "$rounds rounds of $repeats runs; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
cat "$out/engines"
/usr/bin/python3 - "$out/runs" "${runs[@]}" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
rates, units = collections.defaultdict(list), {}
fastest = {}
order = []
for line in open(sys.argv[1]):
    # A kernel's name may hold a space ("classifier losses"): the dtype ends it.
    words = line.split()
    at = next(i for i, w in enumerate(words) if w in ("fp32", "bf16", "fp16"))
    run, threads, kernel, dtype, median, best = words[0], words[1], " ".join(words[2:at]), words[at], words[at + 1], words[at + 2]
    key = (threads, kernel, dtype, int(run))
    if key not in runs:
        order.append(key)
    runs[key].append(float(median))
    rates[key].append(float(words[at + 3]))
    units[kernel] = words[at + 4]
    fastest[key] = min(fastest.get(key, float("inf")), float(best))
names = [r.replace("|scalar", " (FSDP_SIMD=scalar)").rstrip("|") for r in sys.argv[2:]]
print("| threads | kernel | dtype | " + " | ".join("%s: median ms | fastest ms | rate" % n for n in names) + " |")
print("|---:|---|---|" + "---:|---:|---:|" * len(names))
seen = set()
for threads, kernel, dtype, _ in order:
    if (threads, kernel, dtype) in seen:
        continue
    seen.add((threads, kernel, dtype))
    cells = []
    for i in range(len(names)):
        key = (threads, kernel, dtype, i)
        cells += ["%.3f" % statistics.median(runs[key]), "%.3f" % fastest[key],
                  "%.1f %s" % (statistics.median(rates[key]), units[kernel])] if key in runs else ["-", "-", "-"]
    print("| %s | %s | %s | %s |" % (threads, kernel, dtype, " | ".join(cells)))
PY

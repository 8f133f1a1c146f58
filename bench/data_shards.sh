#!/usr/bin/env bash
# Streamed shards against one file read whole (docs/benchmarks.md, "Streamed shards"):
# `fsdp train` at W=2 on a 20 GB llm.c data set laid out as FineWeb-10B (100 shards of
# 100M tokens, sparse files with valid headers, 3 real shards and a real val shard; made
# by bench/data_shards.py in --dir, about 15 MB on disk) against the same run on a 1 MB
# llm.c file, and against a build from before streaming (--base) on that 1 MB file.
#
# Usage: bench/data_shards.sh [--base FSDP]... [--base-ref REF] [--current FSDP] [--rounds R]
#            [--steps N] [--dir DIR] [--three-gb]
#   --base      a built fsdp from before streaming ("today's" single-file run); several may be
#               given, each a configuration named by its file name; the first is the reference
#   --base-ref  or a commit to build it from (in build-bench-data/, removed after)
#   --current   the fsdp measured (default build/fsdp)
#   --three-gb  also the base build on one 3.0 GB llm.c file, once (it reads it whole)
# Each round runs every configuration once, in turn, each round starting one later (A B C D,
# B C D A, ...), R rounds (default 3);
# the table gives medians over rounds of: start-up (launch to the first step's line),
# each rank's maximum RSS (GNU time's %M), the median tokens/s of steps 11..N and their
# fastest tenth, the median step, and the fastest tenth of every round's steps 11..N
# together (what a step costs when other jobs leave the two ranks alone: on shared cores
# the steps of a run jump between ~13 and ~40 ms with the same data), and the time rank 0
# spent reading its windows (data_ms, which a build from before streaming does not log).
# The model:
# gpt2-tiny with 2 layers of 64, T = 64, B = 8 per rank, one OpenMP thread a rank: a step
# of ~20 ms, so that reading the data would show. A benchmark: it checks nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3
BASES=() BASE_REF="" CURRENT="$ROOT/build/fsdp" ROUNDS=3 STEPS=100 DIR=/tmp/fsdp-data-shards THREE_GB=0
while [ $# -gt 0 ]; do
  case "$1" in
    --base) BASES+=("$2"); shift 2 ;;
    --base-ref) BASE_REF="$2"; shift 2 ;;
    --current) CURRENT="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --dir) DIR="$2"; shift 2 ;;
    --three-gb) THREE_GB=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ -n "$BASE_REF" ]; then
  work="$ROOT/build-bench-data"
  git -C "$ROOT" worktree add --detach "$work/src" "$BASE_REF" > /dev/null
  trap 'git -C "$ROOT" worktree remove --force "$work/src"; rm -rf "$work"' EXIT
  cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DFSDP_CUDA=OFF > "$work/configure.log"
  cmake --build "$work/build" -j "$(nproc)" --target fsdp > "$work/build.log"
  cp "$work/build/fsdp" "$work/fsdp-$BASE_REF"
  BASES+=("$work/fsdp-$BASE_REF")
fi

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(uname -r)"
echo "current: $CURRENT; bases: ${BASES[*]:-none}"
if [ ! -f "$DIR/fineweb/fineweb_val_000000.bin" ] || { [ "$THREE_GB" = 1 ] && [ ! -f "$DIR/three_gb.bin" ]; }; then
  mkdir -p "$DIR"
  "$PY" "$ROOT/bench/data_shards.py" make "$DIR" "$ROOT/tests/data/shakespeare.txt" $([ "$THREE_GB" = 1 ] && echo --three-gb)
fi
echo "data: $DIR/fineweb: $(ls "$DIR"/fineweb/fineweb_train_*.bin | wc -l) train shards, $(du -sh --apparent-size "$DIR/fineweb" | cut -f1) apparent, $(du -sh "$DIR/fineweb" | cut -f1) on disk"

MODEL=(--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 64 --batch-size 8 --steps "$STEPS"
       --peak-gflops 100)
LAUNCH=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1
        /usr/bin/time -a -o "$DIR/rss.txt" -f "%M")
SHARDS="$DIR/fineweb/fineweb_train_*.bin"
VAL="$DIR/fineweb/fineweb_val_000000.bin"

run() {  # run NAME FSDP ARGS...: one job, its JSON line appended to $DIR/results.jsonl
  name=$1 fsdp=$2
  shift 2
  rm -f "$DIR/rss.txt"
  line=$("$PY" "$ROOT/bench/data_shards.py" run "$DIR/log.jsonl" "$DIR/rss.txt" 10 "${LAUNCH[@]}" "$fsdp" train "${MODEL[@]}" "$@" \
    --log "$DIR/log.jsonl")
  echo "{\"config\": \"$name\", \"result\": $line}" >> "$DIR/results.jsonl"
  echo "  $name: $line"
}

rm -f "$DIR/results.jsonl"
set -f # the shard glob is fsdp's to expand
N=$((3 + ${#BASES[@]}))
configuration() {  # configuration I: runs the I-th configuration once
  case $1 in
    0) run "1 MB file" "$CURRENT" --data "$DIR/one_mb.bin" --val-fraction 0 ;;
    1) run "20 GB shards, pread" "$CURRENT" --data "$SHARDS" --val-data "$VAL" ;;
    2) run "20 GB shards, mmap" "$CURRENT" --data "$SHARDS" --val-data "$VAL" --data-io mmap ;;
    *) base=${BASES[$(($1 - 3))]}; run "base $(basename "$base"), 1 MB file" "$base" --data "$DIR/one_mb.bin" \
         --val-fraction 0 ;;
  esac
}
# Round r starts at configuration r mod N, so that none always runs first or after the same one.
for round in $(seq "$ROUNDS"); do
  echo "round $round"
  for i in $(seq 0 $((N - 1))); do configuration $(((round + i) % N)); done
done
if [ ${#BASES[@]} -gt 0 ] && [ "$THREE_GB" = 1 ]; then
  run "base $(basename "${BASES[0]}"), 3 GB file" "${BASES[0]}" --data "$DIR/three_gb.bin" --val-fraction 0
fi
set +f

"$PY" - "$DIR/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
configs = list(dict.fromkeys(r["config"] for r in rows))
med = {}
print(f"\n| configuration | rounds | start-up s | max RSS a rank MiB | tokens/s | tokens/s, fastest tenth | "
      "step ms | step ms, fastest tenth of all rounds' | data ms a step |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for c in configs:
    rs = [r["result"] for r in rows if r["config"] == c]
    m = {"startup": statistics.median(r["startup_s"] for r in rs),
         "rss": statistics.median(max(r["rss_kb"]) for r in rs) / 1024,
         "tps": statistics.median(r["tokens_per_s"] for r in rs),
         "p90": statistics.median(r["tokens_per_s_p90"] for r in rs),
         "step": statistics.median(r["step_ms"] for r in rs)}
    pooled = sorted(x for r in rs for x in r["step_ms_all"])
    m["fast_step"] = pooled[len(pooled) // 10]
    data = [r["data_ms"] for r in rs if "data_ms" in r]
    m["data"] = statistics.median(data) if data else None
    med[c] = m
    print(f"| {c} | {len(rs)} | {m['startup']:.2f} | {m['rss']:.1f} | {m['tps']:.0f} | {m['p90']:.0f} | "
          f"{m['step']:.1f} | {m['fast_step']:.2f} | {'%.3f' % m['data'] if data else '-'} |")
one = med["1 MB file"]
for c in ("20 GB shards, pread", "20 GB shards, mmap"):
    m = med[c]
    base = next((med[c] for c in configs if c.startswith("base") and c.endswith("1 MB file")), None)
    print(f"{c}: RSS {100 * (m['rss'] / one['rss'] - 1):+.1f}% of the 1 MB file's, start-up {m['startup']:.2f} s, "
          f"tokens/s {100 * (m['tps'] / one['tps'] - 1):+.1f}% (fastest tenth {100 * (m['p90'] / one['p90'] - 1):+.1f}%) "
          f"of the 1 MB file's"
          + (f", {100 * (m['tps'] / base['tps'] - 1):+.1f}% (fastest tenth {100 * (m['p90'] / base['p90'] - 1):+.1f}%) "
             "of the base build's" if base else "")
          + f"; the fastest tenth of steps {100 * (m['fast_step'] / one['fast_step'] - 1):+.1f}% of the 1 MB file's"
          + (f", {100 * (m['fast_step'] / base['fast_step'] - 1):+.1f}% of the base build's" if base else "")
          + f"; reading {m['data']:.3f} ms of a {m['fast_step']:.1f} ms step ({100 * m['data'] / m['fast_step']:.2f}%)")
PY

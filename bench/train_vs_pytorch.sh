#!/usr/bin/env bash
# Throughput of `fsdp train` against PyTorch eager fp32 (bench/torch_train.py, the same
# GPT-2 as tools/gpt2_torch.py, PyPI's torch from scripts/torch-venv.sh) on the
# shakespeare-char shape at W=1, each program with the same number of threads in one
# pool, then tokens/s and peak tracked bytes per rank of `fsdp train --sharding full` at
# W = 1, 2, 4. (16-bit and the GEMMs alone: bench/cpu_vs_pytorch.sh.)
#
# Usage: bench/train_vs_pytorch.sh [--threads "1 2"] [--repeats R] [--steps N] [--warmup K]
#            [--batch-size B] [--seq-len T] [--worlds "1 2 4"] [--data FILE] [--fsdp PATH]
#            [--skip-torch] [--skip-scaling] [--keep-logs]
# Each run's figure is its median over the steps after the first K (default 4: PyTorch
# speeds up over its first 3-4 steps); ours and PyTorch run in turn, R rounds (default 3),
# and the table shows the median over the rounds, the fastest round and each round's
# figure (a burst of load from other jobs hits one round, not the fastest).
# A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3            # Debian's python, for the table
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODEL=shakespeare-char         # 6 layers, 6 heads, 384 embd, vocab 256, T 256
N_LAYER=6 N_HEAD=6 N_EMBD=384 VOCAB=256
STEPS=12
WARMUP=4
BATCH=8
SEQ=256
THREADS="1 $(nproc)"
REPEATS=3
WORLDS="1 2 4"
SKIP_TORCH=0 SKIP_SCALING=0 KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --batch-size) BATCH="$2"; shift 2 ;;
    --seq-len) SEQ="$2"; shift 2 ;;
    --worlds) WORLDS="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --skip-torch) SKIP_TORCH=1; shift ;;
    --skip-scaling) SKIP_SCALING=1; shift ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done

[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh build)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
[ "$STEPS" -gt "$WARMUP" ] || { echo "--steps must be > --warmup ($WARMUP)" >&2; exit 2; }
THREADS="$(tr ' ' '\n' <<<"$THREADS" | awk 'NF && !seen[$0]++' | tr '\n' ' ')"   # "1 1" when nproc is 1

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-bench.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi

# Open MPI binds ranks to cores by default when np <= 2, which would pin a
# multi-threaded W=1 rank to one core; --bind-to none leaves placement to the OS.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
[ -x /usr/bin/time ] || { echo "needs GNU time, /usr/bin/time (Debian package time)" >&2; exit 1; }

# The cores are shared: other jobs' load slows a run, and a program whose threads
# wait for each other in many short parallel regions more than another. So every
# run records how many cores other processes kept busy meanwhile: all busy CPU
# time in /proc/stat, less the run's own (GNU time), over the wall time.
HZ="$(getconf CLK_TCK)"
busy_s() { awk -v hz="$HZ" '/^cpu / {printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz}' /proc/stat; }
# measured OUT CMD...: CMD under GNU time (OUT.time: peak RSS KiB, user s, sys s), other jobs' cores to OUT.others
measured() {
  local out=$1 b0 t0 rc=0; shift
  b0=$(busy_s); t0=$(date +%s.%N)
  /usr/bin/time -f '%M %U %S' -o "$out.time" "$@" || rc=$?
  awk -v b0="$b0" -v b1="$(busy_s)" -v t0="$t0" -v t1="$(date +%s.%N)" \
    'END {printf "%.2f\n", (b1 - b0 - $2 - $3) / (t1 - t0)}' "$out.time" >"$out.others"
  return $rc
}

# The one thing that must hold for a fair comparison: each program runs ONE thread
# pool. fsdp's kernels and oneDNN's products share libgomp's; PyPI's PyTorch runs ATen,
# MKL and oneDNN on its own bundled OpenMP runtime. Both get N threads.
TORCH_PY="$("$ROOT/scripts/torch-venv.sh")"

# run_ours W THREADS_PER_RANK LOG [fsdp train flags...]
run_ours() {
  local w="$1" th="$2" log="$3"; shift 3
  local xs=(-x OMP_NUM_THREADS -x MKL_NUM_THREADS)
  [ -n "${OMP_WAIT_POLICY+x}" ] && xs+=(-x OMP_WAIT_POLICY)
  OMP_NUM_THREADS="$th" MKL_NUM_THREADS="$th" \
    measured "$log" "${MPIRUN[@]}" "${xs[@]}" -np "$w" \
    "$FSDP" train --model "$MODEL" --data "$DATA" --seq-len "$SEQ" --batch-size "$BATCH" \
    --steps "$STEPS" --log "$log" "$@" >"$log.out" 2>&1 ||
    { echo "fsdp train failed (W=$w):" >&2; tail -20 "$log.out" >&2; exit 1; }
}

# run_torch THREADS JSON: one process, THREADS intra-op threads, 1 inter-op thread
run_torch() {
  local th="$1" json="$2"
  OMP_NUM_THREADS="$th" MKL_NUM_THREADS="$th" \
    measured "$json" "$TORCH_PY" "$ROOT/bench/torch_train.py" --n-layer "$N_LAYER" --n-head "$N_HEAD" --n-embd "$N_EMBD" \
    --vocab-size "$VOCAB" --seq-len "$SEQ" --batch-size "$BATCH" --steps "$STEPS" --warmup "$WARMUP" \
    --threads "$th" --interop-threads 1 --data "$DATA" --json "$json" >"$json.out" 2>&1 ||
    { echo "torch_train.py failed:" >&2; tail -20 "$json.out" >&2; exit 1; }
}

echo "== fsdp train vs PyTorch: $MODEL (L=$N_LAYER H=$N_HEAD C=$N_EMBD V=$VOCAB), B=$BATCH T=$SEQ, $STEPS steps, W=1"
echo "   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -I)"
echo "   figures: each run's median over steps $((WARMUP + 1))..$STEPS, then the median over $REPEATS rounds (ours, PyTorch, in turn)"
echo "   ours: mpirun -np 1 --bind-to none; OMP_NUM_THREADS=MKL_NUM_THREADS=N;"
echo "         OpenMP kernels and oneDNN's products share one libgomp pool of N threads"
echo "   PyTorch $("$TORCH_PY" -c 'import torch; print(torch.__version__)') (PyPI), eager fp32: the same env,"
echo "         torch.set_num_threads(N), torch.set_num_interop_threads(1)"
echo "   inherited: OMP_WAIT_POLICY=${OMP_WAIT_POLICY-<unset>}"
echo

for th in $THREADS; do
  for r in $(seq "$REPEATS"); do
    echo "threads $th, round $r/$REPEATS ..." >&2
    run_ours 1 "$th" "$TMP/ours_t${th}_r$r.jsonl"
    [ "$SKIP_TORCH" = 1 ] || run_torch "$th" "$TMP/torch_t${th}_r$r.json"
  done
done

# The table, and the settings PyTorch reported it ran with (from its own process).
"$PY" - "$TMP" "$WARMUP" "$REPEATS" "$THREADS" "$SKIP_TORCH" "$((BATCH * SEQ))" <<'PYEOF'
import json, os, statistics as st, sys
tmp, warm, reps, skip_torch, tok = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5] == "1", int(sys.argv[6])
M = 2**20
def ours(th, r):  # (median step ms, peak RSS bytes, tracked peak bytes)
    f = f"{tmp}/ours_t{th}_r{r}.jsonl"
    rows = [json.loads(l) for l in open(f) if l.strip()]
    rss = int(open(f + ".time").read().split()[-3]) * 1024
    return st.median(x["step_ms"] for x in rows[warm:]), rss, max(x["mem_peak_bytes"] for x in rows)
def torch(th, r):  # (median step ms, peak RSS bytes, what the process reported about its threads)
    s = json.load(open(f"{tmp}/torch_t{th}_r{r}.json"))
    return s["median_step_ms"], s["rss_peak_bytes"], s["runtime"]
def row(th, name, runs, tracked):
    ms = [x[0] for x in runs]
    print(f"| {th} | {name} | {tok / st.median(ms) * 1e3:.0f} | {st.median(ms):.1f} | {min(ms):.1f} | "
          f"{' '.join(f'{m:.0f}' for m in ms)} | {max(x[1] for x in runs) / M:.1f} | {tracked} |")
    return st.median(ms), min(ms)
print("| threads | program | tokens/s | ms/step | fastest round ms/step | ms/step per round | peak RSS MiB | tracked peak MiB |")
print("|---:|---|---:|---:|---:|---|---:|---:|")
settings = []
for th in sys.argv[4].split():
    o = [ours(th, r) for r in range(1, reps + 1)]
    o_ms, o_min = row(th, "fsdp train (ours)", o, f"{o[0][2] / M:.1f}")
    if skip_torch:
        continue
    t = [torch(th, r) for r in range(1, reps + 1)]
    t_ms, t_min = row(th, "PyTorch", t, "n/a")
    per_round = " ".join(f"{b[0] / a[0]:.2f}" for a, b in zip(o, t))
    print(f"| {th} | **ratio ours/PyTorch (tokens/s)** | **{t_ms / o_ms:.2f}** | | {t_min / o_min:.2f} | {per_round} "
          f"| {max(x[1] for x in o) / max(x[1] for x in t):.2f} | |")
    rt = t[0][2]
    others = lambda who, ext: " ".join(open(f"{tmp}/{who}_t{th}_r{r}.{ext}.others").read().strip()
                                       for r in range(1, reps + 1))
    settings.append(f"   threads {th}: cores kept busy by other jobs during each round: ours {others('ours', 'jsonl')}, "
                    f"PyTorch {others('torch', 'json')}")
    settings.append(f"   threads {th}: PyTorch ran torch.get_num_threads()="
                    f"{rt['torch_num_threads']} ({rt['parallel_backend']}), get_num_interop_threads()="
                    f"{rt['torch_num_interop_threads']}")
print("(tokens/s and ms/step: median over the rounds of each run's median; ratio row: ours/PyTorch tokens/s of")
print(" those medians, of the fastest rounds, and of each round; peak RSS: whole process, GNU time for ours,")
print(" VmHWM for PyTorch, max over rounds; tracked peak: fsdp's mem_peak_bytes, its own allocations only)")
print("\n".join(settings))
PYEOF

[ "$SKIP_SCALING" = 1 ] && exit 0

echo
echo "== fsdp train --sharding full, B=$BATCH per rank, T=$SEQ, $STEPS steps: W ranks on $(nproc) cores"
echo "   1 thread per rank (OMP_NUM_THREADS=MKL_NUM_THREADS=1), one run each; W > $(nproc)"
echo "   oversubscribes the cores (--oversubscribe): expect no gain in tokens/s there. tokens/s counts all"
echo "   ranks (B*T*W per step); peak MiB/rank is mem_peak_bytes, the max over ranks of tracked bytes."
echo "   W=1 with more threads per rank: see the comparison above."
echo
printf '| %2s | %12s | %8s | %8s | %13s |\n' W threads/rank tokens/s ms/step "peak MiB/rank"
printf '|%s|%s|%s|%s|%s|\n' ---- -------------- ---------- ---------- ---------------
for w in $WORLDS; do
  run_ours "$w" 1 "$TMP/ours_full_w$w.jsonl" --sharding full
  "$PY" - "$TMP/ours_full_w$w.jsonl" "$WARMUP" "$w" <<'PYEOF'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
timed = rows[int(sys.argv[2]):]
print(f"| {sys.argv[3]:>2} | {1:>12} | {st.median(r['tokens_per_s'] for r in timed):8.0f} | "
      f"{st.median(r['step_ms'] for r in timed):8.1f} | {max(r['mem_peak_bytes'] for r in rows) / 2**20:13.1f} |")
PYEOF
done

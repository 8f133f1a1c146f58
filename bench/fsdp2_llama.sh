#!/usr/bin/env bash
# llama3-debug trained by `fsdp train --sharding full` and by PyTorch FSDP2
# (bench/fsdp2_llama.py: fully_shard on each block and on the root, gloo, CPU, fp32)
# at W = 2 and 4: step time and memory side by side, with ratios. Both start from the
# same initial weights and read the same batches (parity_dump train writes them from
# fsdp train's own flags), so their losses agree too; the table shows the first and last.
#
# Usage: bench/fsdp2_llama.sh [--worlds "2 4"] [--global-batch-size G] [--seq-len T]
#            [--steps N] [--warmup K] [--rounds R] [--torch-attention sdpa|eager]
#            [--data FILE] [--build DIR] [--keep-logs]
# Both programs are launched by the same mpirun (--bind-to none), one thread a rank
# (OMP_NUM_THREADS=MKL_NUM_THREADS=1, torch.set_num_threads(1)),
# and each rank runs under GNU time for its peak RSS. A run's step time is the median of
# rank 0's steps after the first K (default 5); ours and PyTorch run in turn, R rounds
# (default 3), and the table shows the median over the rounds. PyTorch's attention is
# F.scaled_dot_product_attention by default, llama_torch.py's explicit softmax with eager.
# PyTorch (FSDP2's fully_shard) is PyPI's, in the virtual environment scripts/torch-venv.sh
# makes once, outside the clone.
# A benchmark, not a test: it checks only what the comparison relies on.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3   # Debian's, for the table
BUILD="$ROOT/build"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
WORLDS="2 4"
G=8 SEQ=128 STEPS=10 WARMUP=4 ROUNDS=3 ATTENTION=sdpa KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --worlds) WORLDS="$2"; shift 2 ;;
    --global-batch-size) G="$2"; shift 2 ;;
    --seq-len) SEQ="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --torch-attention) ATTENTION="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done

FSDP="$BUILD/fsdp" DUMP="$BUILD/tests/parity_dump"
for exe in "$FSDP" "$DUMP"; do
  [ -x "$exe" ] || { echo "no $exe: build first (scripts/build.sh $BUILD)" >&2; exit 1; }
done
[ -r "$DATA" ] || { echo "no data file $DATA (--data FILE)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time, /usr/bin/time (Debian package time)" >&2; exit 1; }
[ "$STEPS" -gt "$WARMUP" ] || { echo "--steps must be > --warmup ($WARMUP)" >&2; exit 2; }
case "$ATTENTION" in sdpa | eager) ;; *) echo "--torch-attention: sdpa or eager, not '$ATTENTION'" >&2; exit 2 ;; esac
for w in $WORLDS; do
  [ $((G % w)) -eq 0 ] || { echo "--global-batch-size $G does not divide by W=$w" >&2; exit 2; }
done

TORCH_PY="$("$ROOT/scripts/torch-venv.sh")"
TORCH_VERSION="$("$TORCH_PY" -c 'import torch; print(torch.__version__)')"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp2-bench.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi

FLAGS=(--model llama3-debug --data "$DATA" --global-batch-size "$G" --seq-len "$SEQ" --steps "$STEPS"
       --lr 1e-3 --warmup 5 --seed 1234)
"$DUMP" "$TMP/start.bin" train "${FLAGS[@]}" >"$TMP/dump.out" 2>&1 ||
  { echo "parity_dump failed:" >&2; cat "$TMP/dump.out" >&2; exit 1; }

# Open MPI binds ranks to cores by default when np <= 2; --bind-to none leaves them to the OS.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none
        -x OMP_NUM_THREADS=1 -x MKL_NUM_THREADS=1)
# Each rank under GNU time: its peak RSS (KiB), user and system seconds to PREFIX.rankR.
per_rank_time='exec /usr/bin/time -f "%M %U %S" -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"'

# The cores are shared with other jobs, whose load slows a run: each run records how
# many cores the others kept busy meanwhile (all busy CPU time in /proc/stat, less the
# ranks' own, over the wall time) to PREFIX.others.
HZ="$(getconf CLK_TCK)"
busy_s() { awk -v hz="$HZ" '/^cpu / {printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz}' /proc/stat; }
measured() {  # measured PREFIX CMD...
  local prefix=$1 b0 t0 rc=0; shift
  b0=$(busy_s); t0=$(date +%s.%N)
  "$@" || rc=$?
  [ "$rc" -eq 0 ] || return "$rc"
  cat "$prefix".rank* | awk -v b0="$b0" -v b1="$(busy_s)" -v t0="$t0" -v t1="$(date +%s.%N)" \
    '{own += $2 + $3} END {printf "%.2f\n", (b1 - b0 - own) / (t1 - t0)}' >"$prefix.others"
}

run_ours() {  # run_ours W PREFIX
  measured "$2" "${MPIRUN[@]}" -np "$1" sh -c "$per_rank_time" "$2" "$FSDP" train "${FLAGS[@]}" \
    --log "$2.jsonl" >"$2.out" 2>&1 || { echo "fsdp train failed (W=$1):" >&2; tail -20 "$2.out" >&2; exit 1; }
}
run_torch() {  # run_torch W PREFIX
  local port
  port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  measured "$2" "${MPIRUN[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" -np "$1" sh -c "$per_rank_time" \
    "$2" "$TORCH_PY" "$ROOT/bench/fsdp2_llama.py" "$TMP/start.bin" "$2.json" "$ATTENTION" >"$2.out" 2>&1 ||
    { echo "fsdp2_llama.py failed (W=$1):" >&2; tail -20 "$2.out" >&2; exit 1; }
}

for r in $(seq "$ROUNDS"); do
  for w in $WORLDS; do
    echo "round $r/$ROUNDS, W=$w ..." >&2
    run_ours "$w" "$TMP/ours_w${w}_r$r"
    run_torch "$w" "$TMP/torch_w${w}_r$r"
  done
done

echo "== llama3-debug (6 layers, 256 wide, 16 heads, FFN 768, vocab 2048, $(
  "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from tensor_file import read_tensors
print(sum(v.size for k, v in read_tensors(sys.argv[2]).items() if k.startswith(("root.", "block "))))' \
    "$ROOT/tools" "$TMP/start.bin") parameters), fp32, global batch $G x $SEQ tokens, $STEPS steps"
echo "   fsdp train --sharding full against PyTorch $TORCH_VERSION FSDP2 (fully_shard per block and root, gloo;"
echo "   attention: $ATTENTION)"
echo "   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -I)"
echo "   mpirun --bind-to none, 1 thread a rank; ms/step: median of rank 0's steps $((WARMUP + 1))..$STEPS,"
echo "   then the median over $ROUNDS rounds (ours and PyTorch in turn)"
echo "   products: ours oneDNN (Debian), PyTorch's wheel its own MKL and oneDNN"
echo
"$PY" - "$TMP" "$WARMUP" "$ROUNDS" "$WORLDS" "$((G * SEQ))" <<'PYEOF'
import glob, json, statistics as st, sys
tmp, warm, rounds, worlds, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), int(sys.argv[5])
M = 2**20
def rank_rss(prefix):  # every rank's peak RSS over its whole life (GNU time, KiB)
    return [int(open(f).read().split()[0]) * 1024 for f in sorted(glob.glob(prefix + ".rank*"))]
def others(who, w):  # cores other jobs kept busy during each round's run
    return " ".join(open(f"{tmp}/{who}_w{w}_r{r}.others").read().strip() for r in range(1, rounds + 1))
def ours(w, r):
    p = f"{tmp}/ours_w{w}_r{r}"
    rows = [json.loads(l) for l in open(p + ".jsonl")]
    return {"ms": st.median(x["step_ms"] for x in rows[warm:]), "rss": max(rank_rss(p)),
            "tracked": max(x["mem_peak_bytes"] for x in rows), "losses": [x["loss"] for x in rows]}
def torch(w, r):
    p = f"{tmp}/torch_w{w}_r{r}"
    s = json.load(open(p + ".json"))
    return {"ms": st.median(s["ranks"][0]["step_ms"][warm:]), "rss": max(rank_rss(p)),
            "train_rss": max(x["rss_train_peak_bytes"] for x in s["ranks"]),
            "ready_rss": max(x["rss_ready_bytes"] for x in s["ranks"]), "losses": s["losses"],
            "threads": (s["torch_num_threads"], s["torch_num_interop_threads"])}
print("| W | program | ms/step | tokens/s | ms/step per round | tracked peak MiB/rank | peak RSS MiB/rank "
      "| peak RSS in the steps MiB/rank | loss at step 1 / last |")
print("|---:|---|---:|---:|---|---:|---:|---:|---|")
notes = []
for w in worlds:
    o = [ours(w, r) for r in range(1, rounds + 1)]
    t = [torch(w, r) for r in range(1, rounds + 1)]
    o_ms, t_ms = st.median(x["ms"] for x in o), st.median(x["ms"] for x in t)
    o_rss, t_rss = max(x["rss"] for x in o), max(x["rss"] for x in t)
    loss = lambda x: f"{x['losses'][0]:.4f} / {x['losses'][-1]:.4f}"
    rounds_ms = lambda runs: " ".join(f"{x['ms']:.0f}" for x in runs)
    print(f"| {w} | fsdp train (ours) | {o_ms:.1f} | {tokens / o_ms * 1e3:.0f} | {rounds_ms(o)} | "
          f"{max(x['tracked'] for x in o) / M:.1f} | {o_rss / M:.1f} | n/a | {loss(o[0])} |")
    print(f"| {w} | PyTorch FSDP2 | {t_ms:.1f} | {tokens / t_ms * 1e3:.0f} | {rounds_ms(t)} | n/a | "
          f"{t_rss / M:.1f} | {max(x['train_rss'] for x in t) / M:.1f} | {loss(t[0])} |")
    print(f"| {w} | **ratio ours/PyTorch** | **{o_ms / t_ms:.2f}** | **{t_ms / o_ms:.2f}** | | | "
          f"**{o_rss / t_rss:.2f}** | | |")
    notes.append(f"   W={w}: PyTorch's RSS once torch is imported and gloo is up, before any model: "
                 f"{max(x['ready_rss'] for x in t) / M:.1f} MiB/rank; its threads: torch.get_num_threads()="
                 f"{t[0]['threads'][0]}, get_num_interop_threads()={t[0]['threads'][1]}")
    notes.append(f"   W={w}: cores kept busy by other jobs during each round: ours {others('ours', w)}, "
                 f"PyTorch {others('torch', w)}")
    worst = max(abs(a - b) for x, y in zip(o, t) for a, b in zip(x["losses"], y["losses"]))
    notes.append(f"   W={w}: largest difference of a step's loss, ours against PyTorch's: {worst:.2e}")
print("(ms/step: lower is better, and its ratio ours/PyTorch; tokens/s: global tokens a step over the")
print(" median step time, ratio ours/PyTorch; tracked peak: fsdp's mem_peak_bytes, the largest of any")
print(" rank's peak of its own tracked allocations within a step; peak RSS: the largest of any rank's")
print(" peak resident set size over its whole run (GNU time's %M), max over the rounds, and its ratio")
print(" ours/PyTorch; peak RSS in the steps: PyTorch's VmHWM restarted once the model is sharded and the")
print(" dump's weights freed, i.e. without the setup that fsdp train does not have)")
print("\n".join(notes))
PYEOF

#!/usr/bin/env bash
# fsdp.c against PyTorch on one GPU, side by side in one run (docs/benchmarks.md, "GPU").
#
#   bench/gpu.sh [--parts gpt2,llama,scaling,offload] [--fsdp build-gpu/fsdp] [--mpirun mpirun]
#                [--gpt2-batches "8 16 32 64"] [--llama-model auto|PRESET] [--llama-batches "1 2 4 8"]
#                (batches apart by spaces or commas)
#                [--seq-len 1024] [--steps 8] [--warmup 3] [--torch-modes eager,fsdp2,compile,sdpa]
#                [--peak-tflops 989] [--budget SECONDS] [--out DIR] [--python python3] [--keep-logs]
#                [--device cuda|cpu] [--shape "FLAGS"] [--scaling-args "FLAGS"]
#
# gpt2    GPT-2 124M (fsdp.c's `gpt2`), T=1024, bf16: `fsdp train --device cuda --param-dtype bf16`
#         at each batch size (a batch that fails or runs out of memory ends the list), then
#         PyTorch on the same shapes and batches (bench/gpu_torch.py run): eager (autocast bf16),
#         FSDP2 (fully_shard, world size 1 over NCCL, MixedPrecisionPolicy bf16), sdpa (eager
#         with flash attention), and torch.compile at one batch: fsdp.c's best (else eager's).
# llama   the same for the largest Llama 3 preset whose `fsdp plan` at batch 1 fits in 90%
#         of the GPU's memory (--llama-model auto), or the one named.
# scaling `fsdp train --device cuda` at W = 1, 2, 4 ranks on the one GPU under mpirun with
#         FSDP_COMM_TRANSPORT=staged, the same global batch, fp32: each W's loss and grad-norm
#         trajectory against W = 1's.
# offload `fsdp train --device cuda --offload cpu`, bf16, B=1: Llama 3 8B's shape with the
#         fewest layers whose 16 bytes a parameter (fp32 weights, gradients, AdamW's two
#         moments) exceed the GPU's memory, if they fit in 80% of the host's available
#         memory; its tokens/s and GPU peak against `fsdp plan --offload cpu`'s. Not in the
#         default parts (initialising billions of parameters on the host takes minutes).
#
# tokens/s, step ms: medians over the steps after --warmup; MFU = (6·N + 12·L·C·T) · tokens/s
# ÷ the card's bf16 dense peak (989 TFLOP/s for an H100 SXM or H200; --peak-tflops overrides);
# peak memory: fsdp.c's mem_peak_bytes (its allocator's tracked bytes), PyTorch's
# max_memory_allocated and max_memory_reserved. The tables go to stdout and to
# DIR/bench-gpu.md, every result to DIR/bench-gpu.jsonl (DIR: --out, else $OUT, else a
# temporary folder, kept with --keep-logs), and every log to DIR/bench-gpu-logs.tgz.
# Batches are random tokens (below 50257). --device cpu --shape "--n-layer 1 --n-embd 64
# --n-head 2" --seq-len 32 ... runs the whole pipeline on a CPU, tiny, to test this script.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
fsdp=$here/build-gpu/fsdp
mpirun=mpirun
python=python3
parts=gpt2,llama,scaling
gpt2_batches="8 16 32 64"
llama_model=auto
llama_batches="1 2 4 8"
T=1024
steps=8
warmup=3
torch_modes=eager,fsdp2,compile,sdpa
peak=""
budget=540
out=${OUT:-}
keep=0
device=cuda
shape=""
scaling_args="--model gpt2 --n-layer 4 --global-batch-size 8 --seq-len 256 --steps 30 --param-dtype fp32"
while [ $# -gt 0 ]; do
  case "$1" in
    --parts) parts=$2; shift 2 ;;
    --fsdp) fsdp=$2; shift 2 ;;
    --mpirun) mpirun=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --gpt2-batches) gpt2_batches=${2//,/ }; shift 2 ;;
    --llama-model) llama_model=$2; shift 2 ;;
    --llama-batches) llama_batches=${2//,/ }; shift 2 ;;
    --seq-len) T=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --torch-modes) torch_modes=$2; shift 2 ;;
    --peak-tflops) peak=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep-logs) keep=1; shift ;;
    --device) device=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --scaling-args) scaling_args=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "bench/gpu.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
say() { printf '[gpu.sh %4ds] %s\n' "$(($(date +%s) - start))" "$*" >&2; }
gt=$here/bench/gpu_torch.py

[ -x "$fsdp" ] || { say "no fsdp binary at $fsdp (build with -DFSDP_CUDA=ON, or give --fsdp)"; exit 1; }
if [ "$device" = cuda ]; then
  command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
    { say "no NVIDIA GPU here (nvidia-smi -L failed): nothing to measure"; exit 77; }
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
  gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n1)
else
  gpu_name=cpu
  gpu_mib=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
fi
read -r -a shape_flags <<<"$shape"
read -r -a scaling_flags <<<"$scaling_args"

work=$(mktemp -d /tmp/fsdp-bench-gpu.XXXXXX)
if [ -z "$out" ]; then out=$work; keep=1; fi
mkdir -p "$out"
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
results=$out/bench-gpu.jsonl
table=$out/bench-gpu.md
: >"$results"
say "GPU: $gpu_name, $gpu_mib MiB; parts $parts; budget ${budget} s; logs in $work; results in $out"
"$python" "$gt" tokens --out "$work/tokens.bin" --count $((1 << 23)) --vocab 50257 --seed 1

# timed SECONDS_MAX LOG CMD...: CMD under timeout (at most what is left of the part's
# share), output into LOG; returns CMD's status (124: timed out; 125: no time left).
part_end=0
timed() {
  local max=$1 log=$2; shift 2
  local l=$((part_end - $(date +%s)))
  [ "$max" -gt "$l" ] && max=$l
  if [ "$max" -lt 15 ]; then echo "skipped: no time left" >"$log"; return 125; fi
  say "  (≤${max}s) $(basename "$log" .out): ${*:1:3} ..."
  local rc=0
  timeout -k 10 "$max" "$@" >"$log" 2>&1 || rc=$?
  return $rc
}

status_of() {  # status_of RC LOG
  case $1 in
    0) echo ok ;;
    124|137) echo timeout ;;
    125) echo "not run" ;;
    *) if grep -qi -E "out of memory|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED" "$2"; then echo oom
       else echo error; fi ;;
  esac
}

# fsdp_sweep MODEL "BATCHES": fsdp train at each batch; prints the best batch (or nothing).
fsdp_sweep() {
  local model=$1 B rc st best="" best_tps=0 stop=0 tps
  for B in $2; do
    local log=$work/fsdp-$model-b$B
    if [ $stop = 1 ]; then
      "$python" "$gt" fsdp-summary --model "$model" "${shape_flags[@]}" --seq-len "$T" --batch-size "$B" --status "not run" \
        --message "a smaller batch failed" --device-name "$gpu_name" --json "$results" >/dev/null
      continue
    fi
    rc=0
    timed 180 "$log.out" "$fsdp" train --device "$device" --model "$model" "${shape_flags[@]}" --data "$work/tokens.bin" --seq-len "$T" \
      --batch-size "$B" --steps $((warmup + steps)) --param-dtype bf16 --log "$log.jsonl" || rc=$?
    st=$(status_of $rc "$log.out")
    [ "$st" = ok ] || stop=1
    "$python" "$gt" fsdp-summary --model "$model" "${shape_flags[@]}" --seq-len "$T" --batch-size "$B" --warmup "$warmup" \
      --log "$log.jsonl" --status "$st" --message "$(grep -v '^step' "$log.out" | tail -n 2 | tr '\n' ' ')" \
      --device-name "$gpu_name" --json "$results" >"$log.summary" || true
    tps=$("$python" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(int(r.get("tokens_per_s", 0)) if r["status"] == "ok" else 0)' "$log.summary" 2>/dev/null || echo 0)
    say "  fsdp.c $model B=$B: $st${tps:+, $tps tokens/s}"
    if [ "$tps" -gt "$best_tps" ]; then best=$B; best_tps=$tps; fi
  done
  echo "$best"
}

torch_best() {  # torch_best MODEL MODE: the batch of the mode's best tokens/s in the results
  "$python" - "$results" "$1" "$2" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in rows if r.get("program") == "torch" and r["model"] == sys.argv[2] and r.get("mode") == sys.argv[3]
      and r["status"] == "ok"]
print(max(ok, key=lambda r: r["tokens_per_s"])["batch_size"] if ok else "")
EOF
}

torch_run() {  # torch_run MODEL MODES "BATCHES" SECONDS_MAX LOGNAME
  local rc=0 before after
  before=$(wc -l <"$results")
  timed "$4" "$work/$5.out" env PYTHONUNBUFFERED=1 "$python" "$gt" run --model "$1" "${shape_flags[@]}" --modes "$2" \
    --batch-sizes "$3" --seq-len "$T" --steps "$steps" --warmup "$warmup" --device "$device" --json "$results" || rc=$?
  after=$(wc -l <"$results")
  say "  torch $1 $2 [$3]: exit $rc, $((after - before)) results"
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then  # what did not finish, said in the results
    "$python" - "$results" "$1" "$2" "$3" "$T" "$(status_of $rc "$work/$5.out")" "exit $rc; see $5.out" <<'EOF'
import json, sys
path, model, modes, batches, T, status, why = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.strip()]
done = {(r.get("mode"), r["batch_size"]) for r in rows if r.get("program") == "torch" and r["model"] == model}
with open(path, "a") as f:
    for m in modes.split(","):
        for B in map(int, batches.split()):
            if (m, B) not in done:
                f.write(json.dumps(dict(program="torch", mode=m, model=model, seq_len=int(T), world_size=1,
                                        batch_size=B, status=status, message="the process ended before this ran: " + why)) + "\n")
EOF
  fi
}

# model_part MODEL "BATCHES"
model_part() {
  local model=$1 batches=$2 best modes_sweep="" m compile_b
  say "$model: fsdp.c, batches $batches"
  best=$(fsdp_sweep "$model" "$batches")
  for m in ${torch_modes//,/ }; do [ "$m" = compile ] || modes_sweep=${modes_sweep:+$modes_sweep,}$m; done
  [ -n "$modes_sweep" ] && torch_run "$model" "$modes_sweep" "$batches" 300 "torch-$model-sweep"
  if [[ ",$torch_modes," == *,compile,* ]]; then
    # fsdp.c's best batch, or eager PyTorch's (sdpa, else math attention) where smaller:
    # a batch past that may not fit torch.compile either (seen: B=64 on an H100).
    local fits
    fits=$(torch_best "$model" sdpa)
    fits=${fits:-$(torch_best "$model" eager)}
    compile_b=${best:-$fits}
    [ -n "$fits" ] && [ -n "$compile_b" ] && [ "$fits" -lt "$compile_b" ] && compile_b=$fits
    compile_b=${compile_b:-${batches%% *}}
    torch_run "$model" compile "$compile_b" 240 "torch-$model-compile"
  fi
}

pick_llama() {
  local m need cap=$((gpu_mib * 1024 * 1024 / 10 * 9))
  for m in llama3-8b llama3-1b llama3-debug; do
    need=$("$fsdp" plan --model "$m" "${shape_flags[@]}" --world-size 1 --batch-size 1 --seq-len "$T" --param-dtype bf16 --format json \
      2>/dev/null | "$python" -c 'import json,sys; print(int(json.load(sys.stdin)["total_peak_bytes"]))' 2>/dev/null || echo 0)
    say "  fsdp plan $m, B=1: $((need / 1048576)) MiB of $((cap / 1048576)) usable"
    if [ "$need" -gt 0 ] && [ "$need" -lt "$cap" ]; then echo "$m"; return; fi
  done
  echo llama3-1b
}

scaling_part() {
  local W rc logs=() data=$work/tokens.bin
  for W in 1 2 4; do
    rc=0
    timed 120 "$work/scaling-w$W.out" env FSDP_COMM_TRANSPORT=staged "$mpirun" --allow-run-as-root --oversubscribe \
      --bind-to none -np "$W" -x FSDP_COMM_TRANSPORT -x LD_LIBRARY_PATH -x PATH \
      "$fsdp" train --device "$device" --data "$data" "${scaling_flags[@]}" --log "$work/scaling-w$W.jsonl" || rc=$?
    say "  W=$W staged: $(status_of $rc "$work/scaling-w$W.out") (exit $rc)"
    [ $rc -eq 0 ] || tail -n 3 "$work/scaling-w$W.out" >&2
    logs+=("$W=$work/scaling-w$W.jsonl")
  done
  "$python" "$gt" scaling "${logs[@]}" --title "(fsdp train $scaling_args, FSDP_COMM_TRANSPORT=staged)" \
    --markdown "$work/scaling.md" >/dev/null
}

offload_plan() {  # offload_plan LAYERS [FLAGS...]: fsdp plan's JSON for llama3-8b cut to LAYERS
  local layers=$1; shift
  "$fsdp" plan --device "$device" --model llama3-8b --n-layer "$layers" --world-size 1 --batch-size 1 --seq-len "$T" \
    --param-dtype bf16 --format json "$@"
}

offload_part() {
  local host_mib p1 p2 l layers=0 n_params=0 log=$work/fsdp-offload rc=0 st
  host_mib=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
  p1=$(offload_plan 1 | "$python" -c 'import json,sys; print(int(json.load(sys.stdin)["parameters"]))')
  p2=$(offload_plan 2 | "$python" -c 'import json,sys; print(int(json.load(sys.stdin)["parameters"]))')
  # The parameters: the embedding's and the head's, and a block's for each layer.
  for l in $(seq 1 32); do
    n_params=$((p1 + (l - 1) * (p2 - p1)))
    if [ $((16 * n_params / 1048576)) -gt "$gpu_mib" ]; then layers=$l; break; fi
  done
  if [ "$layers" = 0 ] || [ $((16 * n_params / 1048576)) -gt $((host_mib / 10 * 8)) ]; then
    say "offload: no cut of llama3-8b has a state over the GPU's $gpu_mib MiB within 80% of the host's $host_mib MiB"
    return
  fi
  offload_plan "$layers" --offload cpu >"$log.plan.json"
  say "offload: llama3-8b with $layers layers, $n_params parameters, a state of $((16 * n_params / 1048576)) MiB"
  timed 420 "$log.out" "$fsdp" train --device "$device" --model llama3-8b --n-layer "$layers" --data "$work/tokens.bin" \
    --seq-len "$T" --batch-size 1 --steps $((warmup + 3)) --param-dtype bf16 --offload cpu --log "$log.jsonl" || rc=$?
  st=$(status_of $rc "$log.out")
  say "  fsdp.c offload: $st (exit $rc)"
  "$python" - "$log.plan.json" "$log.jsonl" "$warmup" "$layers" "$st" >"$work/offload.md" <<'EOF'
import json, os, statistics, sys
plan_path, log_path, warmup, layers, status = sys.argv[1:]
plan = json.load(open(plan_path))
rows = [json.loads(l) for l in open(log_path) if l.startswith("{")] if os.path.exists(log_path) else []
steps = [r for r in rows if "step" in r and r["step"] > int(warmup)]
print(f"### --offload cpu: llama3-8b with {layers} layers, {plan['parameters']:,} parameters, B=1\n")
print("| | GPU peak MiB | host pinned MiB | tokens/s | step ms |\n| --- | --- | --- | --- | --- |")
print(f"| fsdp plan | {plan['total_peak_bytes'] / 2**20:,.0f} | {plan['host_total_peak_bytes'] / 2**20:,.0f} | | |")
if steps:
    peak = max(r["mem_peak_bytes"] for r in steps)
    host = max(r.get("mem_host_peak_bytes_rank0", 0) for r in steps)
    print(f"| fsdp train | {peak / 2**20:,.0f} ({peak / plan['total_peak_bytes']:.4f} of the plan) | {host / 2**20:,.0f} "
          f"| {statistics.median(r['tokens_per_s'] for r in steps):,.0f} | "
          f"{statistics.median(r['step_ms'] for r in steps):,.0f} |")
else:
    print(f"| fsdp train | {status} | | | |")
EOF
}

# Each part gets a share of what is left, by weight.
weight() { case $1 in gpt2) echo 40 ;; llama) echo 50 ;; scaling) echo 15 ;; offload) echo 40 ;; *) echo 10 ;; esac; }
IFS=, read -r -a part_list <<<"$parts"
for i in "${!part_list[@]}"; do
  p=${part_list[$i]}
  wsum=0
  for q in "${part_list[@]:$i}"; do wsum=$((wsum + $(weight "$q"))); done
  l=$(left)
  part_end=$(($(date +%s) + l * $(weight "$p") / wsum))
  say "part $p: $((part_end - $(date +%s))) s of the ${l} s left"
  case $p in
    gpt2) model_part gpt2 "$gpt2_batches" ;;
    llama)
      lm=$llama_model
      [ "$lm" = auto ] && lm=$(pick_llama)
      model_part "$lm" "$llama_batches" ;;
    scaling) scaling_part ;;
    offload) offload_part ;;
    *) say "unknown part '$p' (gpt2, llama, scaling, offload)" ;;
  esac
done

{
  echo "## fsdp.c and PyTorch on $gpu_name ($(date -u +%Y-%m-%d))"
  echo
  "$python" "$gt" report --results "$results" ${peak:+--peak-tflops "$peak"}
  [ -f "$work/scaling.md" ] && cat "$work/scaling.md"
  [ -f "$work/offload.md" ] && cat "$work/offload.md"
} >"$table"
cat "$table"
[ "$out" = "$work" ] || tar -C "$work" --exclude tokens.bin -czf "$out/bench-gpu-logs.tgz" . 2>/dev/null || true
say "done in $(($(date +%s) - start)) s: $table, $results"

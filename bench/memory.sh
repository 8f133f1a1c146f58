#!/usr/bin/env bash
# Peak memory per rank of `fsdp train` on the GPT-2 124M shape against what
# `fsdp plan` predicts, at W = 1, 2, 4, 8 (8 ranks oversubscribe the cores), for
# --sharding full, grad-op and none, plain and with activation checkpointing
# (--ac full), bf16 (--param-dtype bf16, plus --reduce-dtype bf16 where the
# sharding reduce-scatters), and both; then PyTorch's peak for the same W=1 run
# (bench/torch_memory.py), and gradient accumulation at W=2 (sharded vs no-sync).
#
# Usage: bench/memory.sh [--worlds "1 2 4 8"] [--variant-worlds "1 2 4 8"]
#            [--shardings "full grad-op none"] [--batch-size 1] [--seq-len 256] [--steps 2]
#            [--limit-gib 18] [--accum 4] [--accum-steps 3] [--fsdp PATH] [--data FILE]
#            [--skip-torch] [--skip-accum] [--keep-logs]
# Measured = rank 0's tracked peak of the last step (`mem_peak_bytes_rank0`); plan =
# `fsdp plan --format json`'s total_peak_bytes for the same flags and data. A run
# whose plan x W exceeds --limit-gib (or the memory available now) is not run: its
# row shows the plan only. --variant-worlds: where the AC/bf16 variants run (the
# plain rows cover --worlds). A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3            # Debian's python, the one with torch
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
WORLDS="1 2 4 8"
VARIANT_WORLDS="1 2 4 8"
SHARDINGS="full grad-op none"
BATCH=1
SEQ=256
STEPS=2
LIMIT_GIB=18
ACCUM=4
ACCUM_STEPS=3
SKIP_TORCH=0 SKIP_ACCUM=0 KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --worlds) WORLDS="$2"; shift 2 ;;
    --variant-worlds) VARIANT_WORLDS="$2"; shift 2 ;;
    --shardings) SHARDINGS="$2"; shift 2 ;;
    --batch-size) BATCH="$2"; shift 2 ;;
    --seq-len) SEQ="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --limit-gib) LIMIT_GIB="$2"; shift 2 ;;
    --accum) ACCUM="$2"; shift 2 ;;
    --accum-steps) ACCUM_STEPS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --skip-torch) SKIP_TORCH=1; shift ;;
    --skip-accum) SKIP_ACCUM=1; shift ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
[ "$STEPS" -ge 2 ] || { echo "--steps must be at least 2 (step 1 first touches everything)" >&2; exit 2; }
[ "$ACCUM_STEPS" -ge 2 ] || { echo "--accum-steps must be at least 2" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-memory.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP" >&2; else trap 'rm -rf "$TMP"' EXIT; fi
# Unbound, so that each rank's comm threads may run on another core than its compute.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
export OMP_NUM_THREADS=1
COMMON=(--model gpt2 --data "$DATA" --batch-size "$BATCH" --seq-len "$SEQ")
START=$SECONDS

# A W=1 run is started without mpirun (an MPI singleton) under this wrapper, so that
# the fsdp process is its child: VmRSS when fsdp prints its "data:" line (data read,
# model not yet built) and the child's peak RSS (wait4's ru_maxrss) go to OUT.
cat > "$TMP/rss_run.py" <<'PY'
import json, os, subprocess, sys
out, cmd = sys.argv[1], sys.argv[2:]
child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
before = None
for line in iter(child.stdout.readline, b""):
    if before is None and line.startswith(b"data:"):
        with open(f"/proc/{child.pid}/status") as f:
            before = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
    sys.stdout.buffer.write(line)
_, status, usage = os.wait4(child.pid, 0)
json.dump({"rss_before_model_bytes": before, "rss_peak_bytes": usage.ru_maxrss * 1024}, open(out, "w"))
sys.exit(os.waitstatus_to_exitcode(status))
PY

variant_flags() {  # variant_flags SHARDING VARIANT
  local s=$1 v=$2 f=()
  case "$v" in *ac*) f+=(--ac full) ;; esac
  case "$v" in
    *bf16*) f+=(--param-dtype bf16); [ "$s" != none ] && f+=(--reduce-dtype bf16) ;;
  esac
  echo "${f[@]}"
}

# plan_field JSON EXPR: a figure of a plan (EXPR in Python, d the plan's object)
plan_field() { "$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

# run_one NAME W [fsdp train flags...]: the plan goes to NAME.plan.json; then the run
# (log NAME.jsonl, wall seconds NAME.secs) or, over the limit, NAME.skip with the reason
run_one() {
  local name=$1 w=$2; shift 2
  "$FSDP" plan --world-size "$w" --format json "${COMMON[@]}" "$@" > "$TMP/$name.plan.json"
  local need; need=$(plan_field "$TMP/$name.plan.json" "d['total_peak_bytes'] * $w")
  local verdict avail
  avail=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)   # others share the machine: read it now
  verdict=$("$PY" -c "
need, limit, avail, w = $need, $LIMIT_GIB * 2**30, $avail, $w
# beside the tracked bytes, each rank's process holds ~150 MiB of libraries and MPI buffers
if need > limit: print(f'not run (would need {need / 2**30:.1f} GiB on this machine, over the {limit / 2**30:.0f} GiB limit)')
elif need + w * 200 * 2**20 > avail: print(f'not run (would need {need / 2**30:.1f} GiB on this machine, {avail / 2**30:.1f} GiB available)')
else: print('run')")
  if [ "$verdict" != run ]; then
    echo "$verdict" > "$TMP/$name.skip"
    echo "  $name: $verdict" >&2
    return
  fi
  echo "  $name: running (plan x W = $("$PY" -c "print(f'{$need / 2**30:.1f}')") GiB) ..." >&2
  local t0=$SECONDS
  if [ "$w" = 1 ]; then
    "$PY" "$TMP/rss_run.py" "$TMP/$name.rss.json" "$FSDP" train "${COMMON[@]}" --steps "$STEPS" \
      --log "$TMP/$name.jsonl" "$@" > "$TMP/$name.out" 2>&1 ||
      { echo "fsdp train failed ($name):" >&2; tail -20 "$TMP/$name.out" >&2; exit 1; }
  else
    "${MPIRUN[@]}" -np "$w" "$FSDP" train "${COMMON[@]}" --steps "$STEPS" --log "$TMP/$name.jsonl" "$@" \
      > "$TMP/$name.out" 2>&1 ||
      { echo "fsdp train failed ($name):" >&2; tail -20 "$TMP/$name.out" >&2; exit 1; }
  fi
  echo $((SECONDS - t0)) > "$TMP/$name.secs"
}

echo "== memory: fsdp train vs fsdp plan, GPT-2 124M (--model gpt2), B=$BATCH T=$SEQ per rank, $STEPS steps" >&2
ROWS=()
for w in $WORLDS; do
  for s in $SHARDINGS; do
    variants="plain"
    case " $VARIANT_WORLDS " in *" $w "*) variants="plain ac bf16 ac+bf16" ;; esac
    for v in $variants; do
      name="$s.$v.w$w"
      # shellcheck disable=SC2046
      run_one "$name" "$w" --sharding "$s" $(variant_flags "$s" "$v")
      ROWS+=("$name")
    done
  done
done

if [ "$SKIP_TORCH" = 0 ]; then
  echo "== PyTorch, W=1, same model, B and T" >&2
  "$PY" "$ROOT/bench/torch_memory.py" --data "$DATA" --batch-size "$BATCH" --seq-len "$SEQ" --steps "$STEPS" \
    --threads 1 --json "$TMP/torch.json" > "$TMP/torch.out" 2>&1 ||
    { cat "$TMP/torch.out" >&2; exit 1; }
  "$PY" "$ROOT/bench/torch_memory.py" --data "$DATA" --batch-size "$BATCH" --seq-len "$SEQ" --steps "$STEPS" \
    --threads 1 --no-profile --json "$TMP/torch-noprof.json" > "$TMP/torch-noprof.out" 2>&1 ||
    { cat "$TMP/torch-noprof.out" >&2; exit 1; }
fi

if [ "$SKIP_ACCUM" = 0 ]; then
  # Two rounds, the modes in turn and in the other order the second time; each mode
  # keeps its faster round (the memory figures are the same in both).
  echo "== gradient accumulation at W=2, --grad-accum $ACCUM, 2 rounds" >&2
  STEPS_SAVED=$STEPS; STEPS=$ACCUM_STEPS
  for mode in sharded no-sync; do
    run_one "accum.$mode.1" 2 --sharding full --grad-accum "$ACCUM" --accum-mode "$mode"
  done
  for mode in no-sync sharded; do
    run_one "accum.$mode.2" 2 --sharding full --grad-accum "$ACCUM" --accum-mode "$mode"
  done
  run_one "accum.k1.1" 2 --sharding full
  STEPS=$STEPS_SAVED
fi
TOTAL=$((SECONDS - START))

"$PY" - "$TMP" "$STEPS" "$ACCUM" "$TOTAL" "${ROWS[@]}" <<'PY'
import json, os, sys
tmp, steps, accum, total, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
MIB = 2**20
def load(name):
    p = lambda ext: os.path.join(tmp, name + ext)
    r = {"plan": json.load(open(p(".plan.json")))}
    if os.path.exists(p(".skip")):
        r["skip"] = open(p(".skip")).read().strip()
    else:
        r["log"] = [json.loads(l) for l in open(p(".jsonl")) if l.strip()]
        r["secs"] = int(open(p(".secs")).read())
        if os.path.exists(p(".rss.json")):
            r["rss"] = json.load(open(p(".rss.json")))
    return r
MODEL_STATE = ("sharded_params", "sharded_grads", "optimizer")
VARIANT = {"plain": ("no", "fp32"), "ac": ("full", "fp32"), "bf16": ("no", "bf16"), "ac+bf16": ("full", "bf16")}

print("### Peak bytes per rank: measured (rank 0, tracked, step %d) against `fsdp plan`" % steps)
print()
print("| sharding | AC | dtype | W | measured MiB | plan MiB | measured / plan | model state MiB | model state / (16Ψ/W) | run s |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
off = []
for name in rows:
    s, v, w = name.split(".")
    w = int(w[1:])
    r = load(name)
    plan = r["plan"]
    psi = plan["parameters"]
    ideal = 16 * psi / (1 if s == "none" else w)
    ac, dt = VARIANT[v]
    dt = dt if dt == "fp32" else ("bf16 params" if s == "none" else "bf16 params+reduce")
    plan_total = plan["total_peak_bytes"]
    if "skip" in r:
        ms = sum(plan["peak_bytes"][c] for c in MODEL_STATE)
        print(f"| {s} | {ac} | {dt} | {w} | {r['skip']} | {plan_total / MIB:.1f} | – | {ms / MIB:.1f} (plan) | {ms / ideal:.3f} | – |")
        continue
    last = r["log"][-1]
    meas = last["mem_peak_bytes_rank0"]
    ms = sum(last["mem_peak_bytes_by_category"][c] for c in MODEL_STATE)
    ratio = meas / plan_total
    if abs(ratio - 1) > 0.03:
        off.append((name, ratio))
    print(f"| {s} | {ac} | {dt} | {w} | {meas / MIB:.1f} | {plan_total / MIB:.1f} | {ratio:.3f} | {ms / MIB:.1f} | {ms / ideal:.3f} | {r['secs']} |")
print()
print(f"Ψ = {psi} parameters; 16Ψ = {16 * psi / MIB:.1f} MiB (fp32 parameters, gradients, AdamW m and v); "
      f"for `none` the model state is compared with 16Ψ (replicated).")
print("Rows where measured / plan is off by more than 3%: " + (", ".join(f"{n} ({r:.3f})" for n, r in off) or "none"))
diffs = []
for name in rows:
    r = load(name)
    if "skip" not in r and r["log"][-1]["mem_peak_bytes_rank0"] != r["plan"]["total_peak_bytes"]:
        diffs.append(f"{name} ({(r['log'][-1]['mem_peak_bytes_rank0'] - r['plan']['total_peak_bytes']) / 1024:+.0f} KiB)")
print("Rows where measured differs from the plan at all: " + (", ".join(diffs) or "none"))
cats = []
for name in rows:
    r = load(name)
    if "skip" not in r and r["log"][-1]["mem_peak_bytes_by_category"] != r["plan"]["peak_bytes"]:
        cats.append(name)
print("Rows where a category's peak differs from the plan's: " + (", ".join(cats) or "none"))
# rows where the largest rank differs from rank 0
spread = []
for name in rows:
    r = load(name)
    if "skip" not in r and r["log"][-1]["mem_peak_bytes"] != r["log"][-1]["mem_peak_bytes_rank0"]:
        spread.append(f"{name} (max over ranks {r['log'][-1]['mem_peak_bytes'] / MIB:.1f} MiB)")
print("Rows where another rank peaked higher than rank 0: " + (", ".join(spread) or "none"))

if os.path.exists(os.path.join(tmp, "torch.json")):
    t = json.load(open(os.path.join(tmp, "torch.json")))
    tn = json.load(open(os.path.join(tmp, "torch-noprof.json")))
    print()
    print(f"### Ours vs PyTorch {t['torch_version']}, W=1, fp32, no AC, B={t['batch_size']} T={t['seq_len']}, 1 thread")
    print()
    print("| process | tracked peak MiB | 16Ψ MiB | tracked − 16Ψ MiB | RSS before model MiB | peak RSS MiB | RSS growth MiB | growth − tracked MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in ("full", "none"):
        name = f"{s}.plain.w1"
        if name not in rows:
            continue
        r = load(name)
        if "skip" in r or "rss" not in r or r["rss"]["rss_before_model_bytes"] is None:
            continue
        tr = r["log"][-1]["mem_peak_bytes_rank0"]
        b, pk = r["rss"]["rss_before_model_bytes"], r["rss"]["rss_peak_bytes"]
        print(f"| fsdp train --sharding {s} | {tr / MIB:.1f} | {16 * psi / MIB:.1f} | {(tr - 16 * psi) / MIB:.1f} | "
              f"{b / MIB:.1f} | {pk / MIB:.1f} | {(pk - b) / MIB:.1f} | {(pk - b - tr) / MIB:.1f} |")
    tr = t["tracked_peak_bytes"]
    for label, x in (("PyTorch (profiled run)", t), ("PyTorch (run without profiler)", tn)):
        print(f"| {label} | {tr / MIB:.1f} | {16 * psi / MIB:.1f} | {(tr - 16 * psi) / MIB:.1f} | "
              f"{x['rss_before_model_bytes'] / MIB:.1f} | {x['rss_peak_bytes'] / MIB:.1f} | {x['rss_growth_bytes'] / MIB:.1f} | "
              f"{(x['rss_growth_bytes'] - tr) / MIB:.1f} |")
    sc = t["tracked_peak_bytes_by_scope"]
    print()
    print(f"PyTorch's tracked peak: {tr / MIB:.2f} MiB in step {t['tracked_peak_step']} inside {t['tracked_peak_op']} "
          f"(running total of the CPU allocator as reported to torch.profiler; summing the {t['n_alloc_events']} "
          f"signed event sizes gives {t['tracked_peak_bytes_summed'] / MIB:.2f} MiB); step {steps}'s peak is "
          f"{sc.get(f'step {steps} forward+backward', 0) / MIB:.2f} MiB in forward+backward and "
          f"{sc.get(f'step {steps} clip+AdamW', 0) / MIB:.2f} MiB in clip+AdamW. The tracked peak is from the "
          f"profiled run; the RSS of the run without the profiler leaves out the profiler's own buffers.")

if os.path.exists(os.path.join(tmp, "accum.sharded.1.plan.json")):
    print()
    print(f"### Gradient accumulation, W=2, full sharding, --grad-accum {accum} (B=1 per micro-batch)")
    print()
    print("| mode | measured peak MiB | plan peak MiB | unsharded_grads peak MiB | comm peak MiB | plan reduce-scatter MiB/step | plan all-gather MiB/step | step ms (faster round; other round) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, label in (("k1", "no accumulation (K=1)"), ("sharded", f"K={accum}, sharded"), ("no-sync", f"K={accum}, no-sync")):
        names = [f"accum.{mode}.{k}" for k in (1, 2) if os.path.exists(os.path.join(tmp, f"accum.{mode}.{k}.plan.json"))]
        if not names:
            continue
        runs = [load(n) for n in names]
        r = runs[0]
        plan = r["plan"]
        sent = plan["sent_bytes_per_step"]
        if "skip" in r:
            print(f"| {label} | {r['skip']} | {plan['total_peak_bytes'] / MIB:.1f} | | | {sent['reduce_scatter'] / MIB:.1f} | {sent['all_gather'] / MIB:.1f} | |")
            continue
        # mean step time of steps 2..N of each round, the faster first
        times = sorted(sum(x["step_ms"] for x in q["log"][1:]) / (len(q["log"]) - 1) for q in runs if "skip" not in q)
        last = r["log"][-1]
        cat = last["mem_peak_bytes_by_category"]
        shown = f"{times[0]:.0f}" + (f" ({times[1]:.0f})" if len(times) > 1 else "")
        print(f"| {label} | {last['mem_peak_bytes_rank0'] / MIB:.1f} | {plan['total_peak_bytes'] / MIB:.1f} | "
              f"{cat['unsharded_grads'] / MIB:.1f} | {cat['comm'] / MIB:.1f} | {sent['reduce_scatter'] / MIB:.1f} | "
              f"{sent['all_gather'] / MIB:.1f} | {shown} |")
print()
print(f"Total run time of the script: {total} s ({total / 60:.1f} min)")
PY

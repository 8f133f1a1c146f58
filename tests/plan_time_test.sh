#!/bin/sh
# `fsdp plan`'s step time on this machine's CPU (the meta device's clock, fsdp/meta_clock.h):
#   path       the compute stream's work and waits add up to the step, and the
#              collectives' busy time is what the links make of the bytes sent;
#   links      slower links never expose less communication, and a link of 100 Mb/s
#              exposes most of what it sends;
#   calibrate  a log of a run (made up here: the model is checked, not this machine) is
#              met by the plan at the log's world size after --calibrate: its step
#              within 1%, its exposed communication within 5%; a second log, of a run
#              across machines, fits the latency between them; a log of another thread
#              count, device, batch or model, one faster than the machine's peak and one
#              no rate of it fits are refused;
#   figures    rates and latencies of no machine are refused, and a plan whose times are
#              not finite;
#   sweep      --sweep ranks each world size's layouts by tokens/s and draws an SVG; it
#              leaves out the world sizes --ranks-per-node does not divide, and takes
#              powers of two only as W1:W2.
# Timing this machine's real runs is bench/plan_time.sh's: a test never times.
# Usage: plan_time_test.sh path/to/fsdp
FSDP=${1:?usage: plan_time_test.sh path/to/fsdp}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
MODEL="--model gpt2-tiny --batch-size 4 --seq-len 64"
export OMP_NUM_THREADS=1
failed=0

plan() {  # plan OUT ARGS...: fsdp plan's JSON into OUT
  out=$1
  shift
  # shellcheck disable=SC2086
  if ! "$FSDP" plan $MODEL --format json "$@" > "$out" 2> "$tmp/err"; then
    echo "FAIL fsdp plan $*: $(tail -n 3 "$tmp/err")"
    failed=$((failed + 1))
    return 1
  fi
}

py() {  # py NAME SCRIPT ARGS...: a python check; its last line says ok or FAIL
  name=$1 script=$2
  shift 2
  if python3 -c "$script" "$@"; then echo "ok   $name"; else echo "FAIL $name"; failed=$((failed + 1)); fi
}

refused() {  # refused NAME MESSAGE ARGS...: fsdp plan ARGS fails, saying MESSAGE
  name=$1 message=$2
  shift 2
  # shellcheck disable=SC2086
  if "$FSDP" plan $MODEL "$@" > /dev/null 2> "$tmp/err" || ! grep -qF -- "$message" "$tmp/err"; then
    echo "FAIL $name: $(tail -n 3 "$tmp/err")"
    failed=$((failed + 1))
  else
    echo "ok   $name"
  fi
}

# made_up_log PLAN OUT STEP_MS EXPOSED_MS [KEY=JSON|KEY=]...: eight steps of the run PLAN
# (fsdp plan's JSON) is of, its setup, as `fsdp train --log` writes them: STEP_MS and EXPOSED_MS are
# Python of the plan's time t, its tokens a step and FLOPs a token the plan's. KEY=JSON
# sets a field of each line, KEY= drops it.
made_up_log() {
  python3 -c '
import json, sys
plan = json.load(open(sys.argv[1]))
t, w = plan["time"], plan["world_size"]
step_ms, exposed_ms = eval(sys.argv[3]), eval(sys.argv[4])
tokens = t["tokens_per_s"] * t["step_ms"] / 1e3
flops = t["mfu"] * t["machine"]["peak_flops"] * w * t["step_ms"] / 1e3
with open(sys.argv[2], "w") as f:
    for step in range(1, 9):
        line = {"step": step, "world_size": w, "setup": plan["setup"], "threads_per_rank": 1, "step_ms": step_ms,
                "tokens_per_s": tokens / (step_ms / 1e3), "gflops": flops / (step_ms * 1e6),
                "exposed_comm_ms": exposed_ms, "comm_ms": t["step_ms"]}
        for field in sys.argv[5:]:
            key, value = field.split("=", 1)
            if value:
                line[key] = json.loads(value)
            else:
                del line[key]
        f.write(json.dumps(line) + "\n")
' "$@"
}

plan "$tmp/w4.json" --world-size 4
py "path" '
import json, sys
t = json.load(open(sys.argv[1]))["time"]
p = t["critical_path_ms"]
parts = p["compute"] + p["all-gather"] + p["reduce-scatter"] + p["replicate all-reduce"] + p["host"]
assert abs(parts - p["total"]) <= 1e-6 * p["total"], (parts, p)
assert 0 < t["step_ms"] <= p["total"], t
assert abs(sum(t["compute_ms_by_op"].values()) - p["compute"]) <= 1e-6 * p["total"]
assert t["all_gather_ms"] > 0 and t["reduce_scatter_ms"] > 0, t
' "$tmp/w4.json"

previous=""
for link in loopback 1GB/s 100MB/s 100Mb/s; do
  plan "$tmp/link-$(echo "$link" | tr / _).json" --world-size 4 --link "intra=$link" || continue
  previous="$previous $tmp/link-$(echo "$link" | tr / _).json"
done
# shellcheck disable=SC2086
py "slower links expose more" '
import json, sys
times = [json.load(open(f))["time"] for f in sys.argv[1:]]
exposed = [t["exposed_comm_ms"] for t in times]
assert exposed == sorted(exposed), exposed
last = times[-1]
assert last["exposed_comm_ms"] > 0.5 * (last["all_gather_ms"] + last["reduce_scatter_ms"]), last
assert last["step_ms"] > times[0]["step_ms"], [t["step_ms"] for t in times]
' $previous

# A log of world size 2 whose steps are twice the plan's, a tenth of them exposed.
plan "$tmp/w2.json" --world-size 2
made_up_log "$tmp/w2.json" "$tmp/run.jsonl" '2 * t["step_ms"]' '0.2 * t["step_ms"]'
plan "$tmp/cal.json" --world-size 2 --calibrate "$tmp/run.jsonl"
py "calibrate" '
import json, sys
before, after = json.load(open(sys.argv[1]))["time"], json.load(open(sys.argv[2]))["time"]
step, exposed = 2 * before["step_ms"], 0.2 * before["step_ms"]
assert abs(after["step_ms"] / step - 1) <= 0.01, (after["step_ms"], step)
assert abs(after["exposed_comm_ms"] / exposed - 1) <= 0.05, (after["exposed_comm_ms"], exposed)
assert after["machine"]["compute_scale"] < 1, after["machine"]
' "$tmp/w2.json" "$tmp/cal.json"
# Then a log of world size 4 on two machines of two ranks, its exposed communication
# three times the plan's there: the ring step's latency between the machines is fitted,
# the links within a machine keep the first log's scale.
plan "$tmp/w4-nodes.json" --world-size 4 --ranks-per-node 2 --calibrate "$tmp/run.jsonl"
made_up_log "$tmp/w4-nodes.json" "$tmp/nodes.jsonl" 't["step_ms"] + 2 * t["exposed_comm_ms"]' \
  '3 * t["exposed_comm_ms"]'
plan "$tmp/cal-nodes.json" --world-size 4 --ranks-per-node 2 --calibrate "$tmp/run.jsonl" --calibrate "$tmp/nodes.jsonl"
py "calibrate across machines" '
import json, sys
before, after = json.load(open(sys.argv[1]))["time"], json.load(open(sys.argv[2]))["time"]
fits = [line.split("links within a machine at ")[1].split(" x")[0]
        for line in open(sys.argv[3]) if "calibrate: " in line]
exposed = 3 * before["exposed_comm_ms"]
assert abs(after["exposed_comm_ms"] / exposed - 1) <= 0.05, (after["exposed_comm_ms"], exposed)
step = before["step_ms"] + 2 * before["exposed_comm_ms"]
assert abs(after["step_ms"] / step - 1) <= 0.02, (after["step_ms"], step)
m = after["machine"]
assert m["inter_latency_s"] > before["machine"]["inter_latency_s"], (m, before["machine"])
assert len(fits) == 2 and fits[0] == fits[1], fits
' "$tmp/w4-nodes.json" "$tmp/cal-nodes.json" "$tmp/err"
made_up_log "$tmp/w2.json" "$tmp/threads.jsonl" 't["step_ms"]' 0 threads_per_rank=2
refused "calibrate refuses another thread count" \
  "its ranks ran 2 OpenMP threads each, this plan's 1: plan with OMP_NUM_THREADS=2" --world-size 2 \
  --calibrate "$tmp/threads.jsonl"
made_up_log "$tmp/w2.json" "$tmp/cuda.jsonl" 't["step_ms"]' 0 threads_per_rank= exposed_comm_ms=
refused "calibrate refuses a run on another device" \
  "a log of a run on cuda (its lines carry no threads_per_rank), this plan is for the cpu" --world-size 2 \
  --calibrate "$tmp/cuda.jsonl"
# A log carries no model, batch or sequence length: its tokens a step and FLOPs a token
# stand for them, which the plan at its world size must have.
plan "$tmp/w2-batch.json" --world-size 2 --batch-size 8
made_up_log "$tmp/w2-batch.json" "$tmp/batch.jsonl" 't["step_ms"]' 0
refused "calibrate refuses another batch" "its steps are of 1024 tokens (tokens_per_s x step_ms), this plan's at" \
  --world-size 8 --calibrate "$tmp/batch.jsonl"
plan "$tmp/w2-layers.json" --world-size 2 --n-layer 3
made_up_log "$tmp/w2-layers.json" "$tmp/layers.jsonl" 't["step_ms"]' 0
refused "calibrate refuses another model" "a log of another model" --world-size 8 --calibrate "$tmp/layers.jsonl"
# Nor its dtypes, sharding, wrap, ac or overlap: its setup names them, the first
# difference is said; a log from before setups is taken as the plan's.
plan "$tmp/w2-ac.json" --world-size 2 --ac full
made_up_log "$tmp/w2-ac.json" "$tmp/ac.jsonl" '2 * t["step_ms"]' 0
refused "calibrate refuses another setup" "its run had --ac full, this plan --ac none" --world-size 8 \
  --calibrate "$tmp/ac.jsonl"
plan "$tmp/cal-ac.json" --world-size 8 --ac full --calibrate "$tmp/ac.jsonl"
made_up_log "$tmp/w2-ac.json" "$tmp/old.jsonl" '2 * t["step_ms"]' 0 setup=
plan "$tmp/cal-old.json" --world-size 8 --calibrate "$tmp/old.jsonl"
grep -qF "names no setup (a log from before 2026-12-07)" "$tmp/err" && echo "ok   a log without a setup" ||
  { echo "FAIL a log without a setup: $(tail -n 2 "$tmp/err")"; failed=$((failed + 1)); }
made_up_log "$tmp/w2.json" "$tmp/fast.jsonl" '1e-6 * t["step_ms"]' 0
refused "calibrate refuses steps beyond the peak" "a log of a faster machine" --world-size 8 \
  --calibrate "$tmp/fast.jsonl"
made_up_log "$tmp/w2.json" "$tmp/slow.jsonl" 1e300 0
refused "calibrate refuses a fit of no machine" "x the rates of this machine's cpu" --world-size 8 \
  --calibrate "$tmp/slow.jsonl"

refused "link rate in range" "--link inter=1e-320GB/s: '1e-320GB/s' is outside the rates of a machine" \
  --world-size 4 --ranks-per-node 2 --link inter=1e-320GB/s
refused "link latency in range" "--link inter=1GB/s,1e307s: '1e307s' is outside the latencies of a link" \
  --world-size 4 --ranks-per-node 2 --link inter=1GB/s,1e307s
refused "gpu rate in range" "--gpu h100-sxm,hbm=1e-320GB/s: '1e-320GB/s' is outside the rates of a machine" \
  --device cuda --world-size 4 --gpu h100-sxm,hbm=1e-320GB/s
refused "efficiency in range" "--efficiency matmul=1e-320: matmul=1e-320 must be a fraction in [0.001, 1]" \
  --world-size 4 --efficiency matmul=1e-320

plan "$tmp/sweep.json" --sweep 1:4 --sweep-svg "$tmp/sweep.svg"
py "sweep" '
import json, sys, xml.dom.minidom
plans = json.load(open(sys.argv[1]))["plans"]
sizes = sorted({p["world_size"] for p in plans})
assert sizes == [1, 2, 4], sizes
for w in sizes:
    rows = [p for p in plans if p["world_size"] == w]
    speeds = [p["tokens_per_s"] for p in rows if p["fits"]]
    assert speeds == sorted(speeds, reverse=True), (w, speeds)
    assert {"full", "grad-op", "ddp"} <= {p["layout"] for p in rows}, rows
    assert {p["batch_per_rank"] for p in rows} == {4, 8}
svg = xml.dom.minidom.parse(sys.argv[2])
assert len(svg.getElementsByTagName("polyline")) == 10
' "$tmp/sweep.json" "$tmp/sweep.svg"
plan "$tmp/sweep-nodes.json" --sweep 1:4 --ranks-per-node 2
py "sweep leaves out what --ranks-per-node does not divide" '
import json, sys
plans = json.load(open(sys.argv[1]))["plans"]
assert sorted({p["world_size"] for p in plans}) == [2, 4], plans
assert "world size 1 left out: --ranks-per-node 2 does not divide it" in open(sys.argv[2]).read()
' "$tmp/sweep-nodes.json" "$tmp/err"
refused "sweep refuses --ranks-per-node that divides none" "--ranks-per-node 3 divides none of its world sizes" \
  --sweep 2:4 --ranks-per-node 3
refused "sweep W1:W2 is of powers of two" "--sweep 3:5: 3 is not a power of two" --sweep 3:5

[ "$failed" -eq 0 ] || exit 1

#!/bin/sh
# `fsdp plan`'s step time on this machine's CPU (the meta device's clock, fsdp/meta_clock.h):
#   path       the compute stream's work and waits add up to the step, and the
#              collectives' busy time is what the links make of the bytes sent;
#   links      slower links never expose less communication, and a link of 100 Mb/s
#              exposes most of what it sends;
#   calibrate  a log of a run (made up here: the model is checked, not this machine) is
#              met by the plan at the log's world size after --calibrate: its step
#              within 1%, its exposed communication within 5%; a second log, of a run
#              across machines, fits the latency between them;
#   sweep      --sweep ranks each world size's layouts by tokens/s and draws an SVG.
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
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["time"]
with open(sys.argv[2], "w") as f:
    for step in range(1, 9):
        f.write(json.dumps({"step": step, "world_size": 2, "threads_per_rank": 1, "step_ms": 2 * t["step_ms"],
                            "exposed_comm_ms": 0.2 * t["step_ms"], "comm_ms": t["step_ms"]}) + "\n")
' "$tmp/w2.json" "$tmp/run.jsonl"
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
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["time"]
with open(sys.argv[2], "w") as f:
    for step in range(1, 9):
        f.write(json.dumps({"step": step, "world_size": 4, "threads_per_rank": 1,
                            "step_ms": t["step_ms"] + 2 * t["exposed_comm_ms"],
                            "exposed_comm_ms": 3 * t["exposed_comm_ms"], "comm_ms": t["step_ms"]}) + "\n")
' "$tmp/w4-nodes.json" "$tmp/nodes.jsonl"
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
printf '{"step":3,"world_size":2,"threads_per_rank":2,"step_ms":5}\n' > "$tmp/threads.jsonl"
if "$FSDP" plan $MODEL --world-size 2 --calibrate "$tmp/threads.jsonl" > /dev/null 2> "$tmp/err" ||
  ! grep -q "its ranks ran 2 OpenMP threads each, this plan's 1: plan with OMP_NUM_THREADS=2" "$tmp/err"; then
  echo "FAIL calibrate refuses another thread count: $(cat "$tmp/err")"
  failed=$((failed + 1))
else
  echo "ok   calibrate refuses another thread count"
fi

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

[ "$failed" -eq 0 ] || exit 1

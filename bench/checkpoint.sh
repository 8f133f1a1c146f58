#!/usr/bin/env bash
# Checkpoints of GPT-2 124M (--model gpt2) at W = 1, 2, 4: the bytes written, how long
# training stalls for a save (the copy of the shards into host memory and a barrier),
# how long until the checkpoint is complete (every file written and fsynced, then the
# metadata), the step time while the background write runs against the steps without
# one, and the time to check (CRC-32C of every file) and load a checkpoint on resume.
#
# Usage: bench/checkpoint.sh [--worlds "1 2 4"] [--fsdp PATH] [--data FILE] [--dir DIR]
# DIR (default: a temporary directory under $TMPDIR or /tmp) holds the checkpoints: the
# disk it is on is what the write and load figures measure. Each job trains 6 steps,
# saving after step 2 and after step 6 (the last); steps 3.. run while the first write
# goes on. A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
WORLDS="1 2 4"
DIR=""

while [ $# -gt 0 ]; do
  case "$1" in
    --worlds) WORLDS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --dir) DIR="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }

TMP="$(mktemp -d "${DIR:-${TMPDIR:-/tmp}}/fsdp-checkpoint.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
export OMP_NUM_THREADS=1
ARGS=(--model gpt2 --batch-size 1 --seq-len 64 --steps 6 --warmup 1 --data "$DATA")

echo "| W | bytes per rank | total | stall (ms) | complete after (ms) | step during write (ms) | step without (ms) | check + load (ms) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for w in $WORLDS; do
  ck="$TMP/w$w"
  "${MPIRUN[@]}" -np "$w" "$FSDP" train "${ARGS[@]}" --checkpoint-dir "$ck" --checkpoint-every 2 \
    --log "$TMP/w$w.jsonl" > "$TMP/w$w.out" 2>&1
  "${MPIRUN[@]}" -np "$w" "$FSDP" train "${ARGS[@]}" --resume "$ck/step-00000002" > "$TMP/w$w.resume.out" 2>&1
  python3 - "$TMP" "$w" <<'PY'
import json, os, re, sys
tmp, w = sys.argv[1], sys.argv[2]
out = open(os.path.join(tmp, f"w{w}.out")).read()
saved = re.search(r"checkpoint step 2: ([\d.]+) MiB per rank copied out in ([\d.]+) ms; training stalled ([\d.]+) ms", out)
done = re.search(r"checkpoint step 2 complete: .*?([\d.]+) MiB in \d+ files, durable (\d+) ms after it began", out)
after = done.start()
# Steps whose lines come before the completion line (after step 2) ran during the write.
lines = [(m.start(), int(m.group(1))) for m in re.finditer(r"^step +(\d+)/", out, re.M)]
during = {s for pos, s in lines if s > 2 and pos < after}
steps = {json.loads(l)["step"]: json.loads(l)["step_ms"] for l in open(os.path.join(tmp, f"w{w}.jsonl"))}
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
with_write = mean([steps[s] for s in during])
without = mean([steps[s] for s in steps if s > 2 and s not in during and s != 6])
resumed = re.search(r"checked and read in (\d+) ms", open(os.path.join(tmp, f"w{w}.resume.out")).read())
print(f"| {w} | {float(saved.group(1)):.0f} MiB | {float(done.group(1)):.0f} MiB | {float(saved.group(3)):.0f} "
      f"(copy {float(saved.group(2)):.0f}) | {done.group(2)} | {with_write:.0f} ({len(during)} steps) | {without:.0f} | {resumed.group(1)} |")
PY
done

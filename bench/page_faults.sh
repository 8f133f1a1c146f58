#!/usr/bin/env bash
# Minor page faults per step and step time of two builds of `fsdp train`, side by
# side in one run: a baseline git ref, built in a temporary worktree, and the
# current tree (uncommitted changes included).
#
# Usage: bench/page_faults.sh [REF] [--repeats R] [--steps "S1 S2"] [--configs "char-w1 gpt2-w2"]
#            [--current PATH] [--data FILE] [--keep-logs]
#   REF        baseline commit (default HEAD~1), built under build-bench/ and removed after
#   --current  a built fsdp to use as "current" (default: build/fsdp, brought up to date first)
# Configurations: char-w1 = shakespeare-char, W=1, B=8, T=256, nproc threads;
#                 gpt2-w2 = GPT-2 124M, W=2, B=1, T=256 per rank, 1 thread per rank.
# Faults are counted per rank by GNU time (%R) around each rank; a binary need not log
# them. Each binary runs S1 and S2 steps (default 3 and 8): faults/step =
# (faults(S2) - faults(S1)) / (S2 - S1), summed over ranks and divided by W (per rank),
# which cancels start-up and the first steps' first touches. step ms = median step_ms of
# the S2 run's log over steps 2..S2. Baseline and current alternate (A B A B ...) for
# R rounds (default 3); the table shows medians over the rounds. A benchmark: it checks nothing.
# A REF from before oneDNN (2026-11-26) links OpenBLAS: its build needs Debian's
# libopenblas-openmp-dev, which scripts/install-deps.sh no longer installs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
REF=HEAD~1
REPEATS=3
STEPS="3 8"
CONFIGS="char-w1 gpt2-w2"
CURRENT=""
KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) REPEATS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --current) CURRENT="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
    *) REF="$1"; shift ;;
  esac
done
read -r S1 S2 <<<"$STEPS"
[ "${S1:-0}" -ge 1 ] && [ "${S2:-0}" -gt "$S1" ] || { echo "--steps \"S1 S2\" needs 1 <= S1 < S2" >&2; exit 2; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
for c in $CONFIGS; do
  case "$c" in char-w1|gpt2-w2) ;; *) echo "unknown config $c (char-w1, gpt2-w2)" >&2; exit 2 ;; esac
done

# Fault counter for one process: GNU time if there, else perf; both count the rank
# itself, not mpirun or the shell around it.
if [ -x /usr/bin/time ]; then COUNTER=time
elif command -v perf >/dev/null; then COUNTER=perf
else echo "neither /usr/bin/time (GNU time) nor perf: cannot count faults" >&2; exit 1
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-faults.XXXXXX")"
WT=""
cleanup() {
  [ -n "$WT" ] && git -C "$ROOT" worktree remove --force "$WT" 2>/dev/null || true
  rmdir "$ROOT/build-bench" 2>/dev/null || true   # only if no other run's worktree is there
  if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# The baseline: its own worktree and Release build, only the fsdp target.
BASE_SHA="$(git -C "$ROOT" rev-parse --verify "$REF^{commit}")"
mkdir -p "$ROOT/build-bench"
WT="$ROOT/build-bench/base-${BASE_SHA:0:12}-$$"
git -C "$ROOT" worktree add --detach --quiet "$WT" "$BASE_SHA"
echo "building baseline $REF (${BASE_SHA:0:12}) in $WT ..." >&2
{ cmake -S "$WT" -B "$WT/build" -DCMAKE_BUILD_TYPE=Release && cmake --build "$WT/build" -j "$(nproc)" --target fsdp; } \
  >"$TMP/build-base.log" 2>&1 || { tail -30 "$TMP/build-base.log" >&2; exit 1; }
BASE="$WT/build/fsdp"

# The current tree: bring build/ up to date, so that it is what the tree says.
if [ -z "$CURRENT" ]; then
  echo "building the current tree in $ROOT/build ..." >&2
  "$ROOT/scripts/build.sh" build >"$TMP/build-current.log" 2>&1 || { tail -30 "$TMP/build-current.log" >&2; exit 1; }
  CURRENT="$ROOT/build/fsdp"
fi
[ -x "$CURRENT" ] || { echo "no $CURRENT" >&2; exit 1; }

# Each rank runs under this wrapper, which writes "minor_faults elapsed_s" to PREFIX.RANK.
cat >"$TMP/count.sh" <<EOF
#!/bin/sh
prefix=\$1; shift
out="\$prefix.\${OMPI_COMM_WORLD_RANK:-0}"
if [ $COUNTER = time ]; then exec /usr/bin/time -f '%R %e' -o "\$out" "\$@"; fi
perf stat -x, -e minor-faults -o "\$out.perf" "\$@" && awk -F, '/minor-faults/ {print \$1, 0}' "\$out.perf" >"\$out"
EOF
chmod +x "$TMP/count.sh"

config() {  # config NAME -> "MODEL W THREADS_PER_RANK FLAGS..."
  case "$1" in
    char-w1) echo "shakespeare-char 1 $(nproc) --batch-size 8 --seq-len 256" ;;
    gpt2-w2) echo "gpt2 2 1 --batch-size 1 --seq-len 256" ;;
  esac
}

run() {  # run BIN CONFIG STEPS PREFIX: one training run, faults in PREFIX.<rank>, log in PREFIX.jsonl
  local bin=$1 prefix=$4 model w th flags
  read -r model w th flags <<<"$(config "$2")"
  # --bind-to none: at np <= 2 Open MPI would pin each rank to one core, threads and all.
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -np "$w" \
    "$TMP/count.sh" "$prefix" "$bin" train --model "$model" --data "$DATA" $flags --steps "$3" \
    --log "$prefix.jsonl" >"$prefix.out" 2>&1 || { echo "failed: $bin $2 $3 steps" >&2; tail -20 "$prefix.out" >&2; exit 1; }
}

for r in $(seq "$REPEATS"); do
  for c in $CONFIGS; do
    for s in "$S1" "$S2"; do
      echo "round $r/$REPEATS: $c, $s steps: baseline, current ..." >&2
      run "$BASE" "$c" "$s" "$TMP/$c.base.s$s.r$r"
      run "$CURRENT" "$c" "$s" "$TMP/$c.cur.s$s.r$r"
    done
  done
done

echo "== minor page faults and step time: baseline $REF (${BASE_SHA:0:12}) against the current tree"
echo "   $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -I); counter: $COUNTER"
echo "   faults/step: (faults($S2 steps) - faults($S1 steps)) / $((S2 - S1)), summed over ranks / W (per rank)"
echo "   step ms: median step_ms over steps 2..$S2 of the $S2-step run; each figure the median over $REPEATS rounds"
echo
"$PY" - "$TMP" "$REPEATS" "$S1" "$S2" "$CONFIGS" <<'PYEOF'
import glob, json, statistics as st, sys
tmp, reps, s1, s2, configs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split()

def faults(prefix):  # (sum of minor faults over ranks, number of ranks)
    files = [f for f in glob.glob(prefix + ".[0-9]*") if not f.endswith(".perf")]
    return sum(int(open(f).read().split()[-2]) for f in files), len(files)

def one(c, who, r):  # faults per step per rank, median step ms
    (f1, w), (f2, _) = faults(f"{tmp}/{c}.{who}.s{s1}.r{r}"), faults(f"{tmp}/{c}.{who}.s{s2}.r{r}")
    rows = [json.loads(l) for l in open(f"{tmp}/{c}.{who}.s{s2}.r{r}.jsonl") if l.strip()]
    return (f2 - f1) / (s2 - s1) / w, st.median(x["step_ms"] for x in rows[1:])

print("| config | baseline faults/step | current faults/step | faults ratio | baseline step ms | current step ms | step ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
rounds = []
for c in configs:
    b = [one(c, "base", r) for r in range(1, reps + 1)]
    k = [one(c, "cur", r) for r in range(1, reps + 1)]
    bf, kf = st.median(x[0] for x in b), st.median(x[0] for x in k)
    bm, km = st.median(x[1] for x in b), st.median(x[1] for x in k)
    print(f"| {c} | {bf:.0f} | {kf:.0f} | {kf / bf if bf else float('nan'):.2f} | {bm:.1f} | {km:.1f} | {km / bm:.2f} |")
    rounds.append(f"   {c}: faults/step {' '.join(f'{x[0]:.0f}' for x in b)} | {' '.join(f'{x[0]:.0f}' for x in k)}; "
                  f"step ms {' '.join(f'{x[1]:.0f}' for x in b)} | {' '.join(f'{x[1]:.0f}' for x in k)}")
print("(ratios: current / baseline; per round, baseline | current:)")
print("\n".join(rounds))
PYEOF

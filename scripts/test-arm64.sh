#!/usr/bin/env bash
# aarch64 (Graviton, Ampere, Grace) builds and passes, checked on an amd64 Debian machine:
# cross-compiles with Debian's gcc-aarch64-linux-gnu into DIR (cmake/aarch64-linux-gnu.cmake;
# -Werror, as every build), compiles the cuda backends' host C for aarch64 against the
# CUDA headers where they are installed, and runs part of the suite under
# qemu-aarch64-static (tests/CMakeLists.txt puts it before every program; the host's
# mpirun starts the arm64 ranks through it): the kernels and models against PyTorch, the
# runtime's and the collectives' tests at 2 ranks, the files and the tokenizer, and fsdp
# train on 2 ranks against 1 with an exact resume (train_small). Emulation runs the
# products about a hundred times slower than the machine: hence this part of the suite,
# and small models. Exits non-zero naming what failed.
# Usage: scripts/test-arm64.sh [DIR]   (default build-arm64; as root, or with sudo)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-arm64}
start=$SECONDS
scripts/install-deps.sh
scripts/install-arm64-deps.sh
export FSDP_ARM64_ROOT=${FSDP_ARM64_ROOT:-/opt/fsdp-arm64}
scripts/build.sh "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DFSDP_CUDA=OFF
built=$SECONDS
fail() { echo "test-arm64: FAIL: $*" >&2; exit 1; }

# The build is aarch64's, and the emulator runs it and passes its failures on, alone and
# under mpirun.
readelf -h "$dir/fsdp" | grep -q 'Machine:.*AArch64' || fail "$dir/fsdp is not an aarch64 program"
emulator=(qemu-aarch64-static -L "$FSDP_ARM64_ROOT")
mpirun=(mpirun --allow-run-as-root --oversubscribe)
"${emulator[@]}" "$dir/fsdp" train --help > /dev/null || fail "fsdp train --help does not run under ${emulator[*]}"
if "${emulator[@]}" "$dir/fsdp" train --model no-such-model > /dev/null 2>&1 ||
  "${mpirun[@]}" -np 2 "${emulator[@]}" "$dir/fsdp" train --model no-such-model > /dev/null 2>&1; then
  fail "a failing fsdp exits 0 under the emulator"
fi

# The cuda backends' host C (no nvcc for aarch64 here): each file compiled for aarch64
# with the flags its library has in this build.
if [ -f /usr/local/cuda/include/cuda_runtime.h ]; then
  flags() { sed -n 's/^C_\(FLAGS\|INCLUDES\) = //p' "$dir/CMakeFiles/$1.dir/flags.make" | tr '\n' ' '; }
  nccl=()
  for d in "${NCCL_ROOT:-}" "${NCCL_HOME:-}" /usr/local/cuda; do
    if [ -n "$d" ] && [ -f "$d/include/nccl.h" ]; then nccl=(-I"$d/include"); break; fi
  done
  check() {  # check LIBRARY FILES...: each file against the CUDA headers, as LIBRARY's
    local lib=$1
    shift
    for f in "$@"; do
      # shellcheck disable=SC2046 # the flags are words
      aarch64-linux-gnu-gcc -fsyntax-only $(flags "$lib") -I/usr/local/cuda/include "${nccl[@]}" "$f" ||
        fail "$f does not compile for aarch64"
    done
  }
  check fsdp_device src/device/cuda.c
  check fsdp_nn src/nn/cuda/*.c
  if [ ${#nccl[@]} -gt 0 ]; then
    check fsdp_comm src/comm/nccl.c
  else
    echo "test-arm64: no nccl.h: src/comm/nccl.c not checked"
  fi
else
  echo "test-arm64: no CUDA headers in /usr/local/cuda: the cuda backends' host C not checked"
fi

tests=(dtype nn_kernels nn_cpu16 nn_cpu_tiles nn_matmul decode gpt2_parity_fp32 gpt2_parity_bf16 gpt2_parity_fp16
       llama_parity_gqa stream allocator flat_param unit_w2 collectives_w2 fatal_exit input_file safetensors
       checkpoint_files text data cli_options peak memviz_lib train_small)
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
cd "$dir"
found=$(ctest -N -R "$regex" | sed -n 's/^Total Tests: //p')
[ "$found" = ${#tests[@]} ] || fail "ctest knows $found of the ${#tests[@]} tests: ${tests[*]}"
ctest --output-on-failure --timeout 600 -j "$(nproc)" -R "$regex" || fail "the tests named above failed under qemu"
echo "test-arm64: ${#tests[@]} tests passed under qemu; $((built - start)) s to install and build," \
  "$((SECONDS - built)) s to test"

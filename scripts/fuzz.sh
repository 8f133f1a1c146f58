#!/usr/bin/env bash
# Builds the libFuzzer harnesses of the readers of users' files (tests/fuzz) with clang
# and runs each for SECONDS (default 7: about a minute for all of them):
#   scripts/fuzz.sh [SECONDS [TARGET...]]        FUZZ_BUILD_DIR=DIR (default build-fuzz)
# Each target first runs every input of tests/fuzz/corpus/TARGET (seeds, and the inputs
# of earlier findings), then mutates them; what it learns stays in DIR/corpus/TARGET for
# the next run. A finding (a crash, a sanitizer's report, a leak, a refusal without the
# file's name, a timeout) keeps its input in DIR/findings/TARGET/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-7}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors safetensors_index hf_config checkpoint token_file tokenizer text_encode
                                     memory_snapshot documents trace train_log)
dir=${FUZZ_BUILD_DIR:-build-fuzz}
scripts/install-deps.sh
mkdir -p "$dir"
configure=(cmake -S . -B "$dir" -DFSDP_FUZZ=ON -DFSDP_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
CC=clang "${configure[@]}" > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)" --target fuzz > "$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }

failed=()
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t" "$dir/findings/$t"
  options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$dir/findings/$t/"
           -print_final_stats=1)
  [ -f "tests/fuzz/$t.dict" ] && options+=(-dict="tests/fuzz/$t.dict")
  log=$dir/findings/$t.log
  if "$dir/tests/fuzz/${t}_fuzz" "${options[@]}" "$dir/corpus/$t" "tests/fuzz/corpus/$t" > "$log" 2>&1; then
    echo "fuzz $t: $(sed -n 's/^stat::number_of_executed_units: //p' "$log") inputs in ${seconds} s, no finding"
  else
    echo "fuzz $t: FINDING (input in $dir/findings/$t/):"
    grep -v '^#\|^INFO' "$log" | tail -40
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: findings in ${failed[*]}"; exit 1; }

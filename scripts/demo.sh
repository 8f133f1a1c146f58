#!/usr/bin/env bash
# Sets up a fresh machine and runs a short FSDP training run: a small GPT-2 on
# Debian's fortune texts (bytes as tokens), fully sharded over 2 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
corpus=build/data/fortunes.txt
if [ ! -s "$corpus" ]; then
  mkdir -p build/data
  find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -print0 |
    sort -z | xargs -0 cat > "$corpus.tmp"
  mv "$corpus.tmp" "$corpus"
fi
mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 \
  build/fsdp train --model gpt2-tiny --data "$corpus" --seq-len 128 --batch-size 8 \
  --steps 200 --lr 3e-3 --warmup 10 --val-every 50 --log build/demo-log.jsonl "$@"

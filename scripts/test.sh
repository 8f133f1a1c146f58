#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite: scripts/test.sh [DIR] [CMAKE ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
scripts/install-deps.sh
# The tests' oracle, PyPI's PyTorch: made once, before the suite (several minutes the first time).
scripts/torch-venv.sh >/dev/null
scripts/build.sh "$@"
cd "$dir"
ctest --output-on-failure -j "$(nproc)"

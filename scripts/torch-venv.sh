#!/bin/sh
# Makes (once) the environment of PyPI's PyTorch that the tests judge fsdp.c against and
# the benchmarks compare it with (torch, numpy, transformers, safetensors), in a folder
# outside the clone, and prints its python. PyPI's Linux wheel loads its CUDA libraries
# at import even on a machine without a GPU, so its nvidia-* dependencies come along:
# 5.4 GB, about 3 minutes to install (scripts/test.sh makes it before the suite runs).
# On failure says why on stderr and exits 77, which the tests that may skip report as
# skipped. transformers is 4.44.2, the release the interop tests were written against
# (Llama 3.1's RoPE scaling, "rope_type" "llama3", came in 4.43).
# Usage: scripts/torch-venv.sh   (FSDP_VENV: the folder, /var/cache/fsdp.c/venv-torch by default)
set -u
venv=${FSDP_VENV:-/var/cache/fsdp.c/venv-torch}
python=$venv/bin/python
packages="torch==2.15.0 numpy transformers==4.44.2 safetensors"
# What was installed, written last: an environment cut short by a failure is not taken.
stamp=$venv/.fsdp-packages

fail() { echo "torch-venv: $*" >&2; exit 77; }
ready() { [ -x "$python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$packages" ]; }

if ready; then echo "$python"; exit 0; fi
mkdir -p "$(dirname "$venv")" 2>/dev/null || fail "cannot make $(dirname "$venv") (set FSDP_VENV to a writable folder)"
# One maker at a time: a second run waits for the first instead of racing it.
exec 9>"$venv.lock" || fail "cannot write $venv.lock (set FSDP_VENV to a writable folder)"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if ready; then echo "$python"; exit 0; fi
log=$(mktemp)
if [ ! -x "$python" ] && ! /usr/bin/python3 -m venv "$venv" >"$log" 2>&1; then
  rm -rf "$venv"
  fail "python3 -m venv failed (install python3-venv): $(tail -n 2 "$log")"
fi
echo "torch-venv: installing $packages into $venv (once; 5.4 GB)" >&2
# No copy in pip's cache: the wheels would take as much disk again.
# shellcheck disable=SC2086
if ! "$python" -m pip install --disable-pip-version-check --no-cache-dir --progress-bar off -q $packages >"$log" 2>&1; then
  fail "pip install $packages failed (no network to pypi.org?): $(tail -n 3 "$log")"
fi
rm -f "$log"
"$python" -c "import numpy, torch, transformers, safetensors; from torch.distributed.fsdp import fully_shard" ||
  fail "$venv: torch, numpy, transformers, safetensors or fully_shard does not import"
echo "$packages" >"$stamp"
echo "$python"

#!/bin/sh
# Makes (once) and checks the Python environment that judges fsdp.c's Hugging Face
# interop: Debian's python3 with its torch 1.13 (python3-torch), plus transformers and
# safetensors from PyPI, in a virtual environment outside the clone, so that it is made
# once per machine and never committed. Prints the environment's python on success; on
# failure prints why on stderr and exits 77, which the tests report as skipped.
# Usage: scripts/hf-venv.sh   (FSDP_HF_VENV: the folder, /var/cache/fsdp.c/venv-hf by default)
set -u
venv=${FSDP_HF_VENV:-/var/cache/fsdp.c/venv-hf}
# The last transformers line whose releases still run on torch 1.13 (4.44 needs torch
# >= 1.11 and has Llama 3.1's RoPE scaling, "rope_type" "llama3", from 4.43).
TRANSFORMERS="transformers==4.44.2"
python=$venv/bin/python

skip() { echo "hf-venv: $*" >&2; exit 77; }
usable() { "$python" -c 'import torch, transformers, safetensors' >/dev/null 2>&1; }

if usable; then echo "$python"; exit 0; fi
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || skip "Debian's python3 has no torch (install python3-torch python3-numpy)"
mkdir -p "$(dirname "$venv")" 2>/dev/null || skip "cannot make $(dirname "$venv") (set FSDP_HF_VENV to a writable folder)"
# One maker at a time: a second test run waits for the first instead of racing it.
exec 9>"$venv.lock" || skip "cannot write $venv.lock (set FSDP_HF_VENV to a writable folder)"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if usable; then echo "$python"; exit 0; fi
rm -rf "$venv"
log=$(mktemp)
if ! /usr/bin/python3 -m venv --system-site-packages "$venv" >"$log" 2>&1; then
  rm -rf "$venv"
  skip "python3 -m venv failed (install python3-venv): $(tail -n 2 "$log")"
fi
echo "hf-venv: installing $TRANSFORMERS and safetensors into $venv" >&2
if ! "$python" -m pip install --disable-pip-version-check -q "$TRANSFORMERS" safetensors >"$log" 2>&1; then
  rm -rf "$venv"
  skip "pip install $TRANSFORMERS safetensors failed (no network to pypi.org?): $(tail -n 3 "$log")"
fi
rm -f "$log"
usable || skip "$venv: transformers does not import: $("$python" -c 'import transformers' 2>&1 | tail -n 1)"
echo "$python"

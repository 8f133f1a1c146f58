#!/bin/sh
# Makes (once) and checks the Python environment that judges fsdp.c's tokenizer:
# Hugging Face `tokenizers` from PyPI in a virtual environment outside the clone (no
# torch needed), made once per machine and never committed. Prints the environment's
# python on success; on failure prints why on stderr and exits 77, which the tests
# report as skipped.
# Usage: scripts/tokenizers-venv.sh   (FSDP_TOKENIZERS_VENV: the folder,
# /var/cache/fsdp.c/venv-tokenizers by default)
set -u
venv=${FSDP_TOKENIZERS_VENV:-/var/cache/fsdp.c/venv-tokenizers}
# 0.20 and later write a tokenizer.json's merges as pairs ([["a", "b"]]); the tests
# rewrite them as strings ("a b") for the older form.
TOKENIZERS="tokenizers==0.21.0"
python=$venv/bin/python

skip() { echo "tokenizers-venv: $*" >&2; exit 77; }
usable() { "$python" -c 'import tokenizers' >/dev/null 2>&1; }

if usable; then echo "$python"; exit 0; fi
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
mkdir -p "$(dirname "$venv")" 2>/dev/null || skip "cannot make $(dirname "$venv") (set FSDP_TOKENIZERS_VENV to a writable folder)"
# One maker at a time: a second test run waits for the first instead of racing it.
exec 9>"$venv.lock" || skip "cannot write $venv.lock (set FSDP_TOKENIZERS_VENV to a writable folder)"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if usable; then echo "$python"; exit 0; fi
rm -rf "$venv"
log=$(mktemp)
if ! /usr/bin/python3 -m venv "$venv" >"$log" 2>&1; then
  rm -rf "$venv"
  skip "python3 -m venv failed (install python3-venv): $(tail -n 2 "$log")"
fi
echo "tokenizers-venv: installing $TOKENIZERS into $venv" >&2
if ! "$python" -m pip install --disable-pip-version-check -q "$TOKENIZERS" >"$log" 2>&1; then
  rm -rf "$venv"
  skip "pip install $TOKENIZERS failed (no network to pypi.org?): $(tail -n 3 "$log")"
fi
rm -f "$log"
usable || skip "$venv: tokenizers does not import: $("$python" -c 'import tokenizers' 2>&1 | tail -n 1)"
echo "$python"

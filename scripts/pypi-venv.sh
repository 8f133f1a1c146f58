#!/bin/sh
# Makes (once) and checks a Python environment of packages from PyPI, in a folder
# outside the clone, made once per machine and never committed; the *-venv.sh scripts
# name what goes in theirs. Prints the environment's python on success; on failure
# prints why on stderr and exits 77, which the tests report as skipped.
# Usage: pypi-venv.sh NAME FOLDER_VARIABLE FOLDER own|system BASE_IMPORTS IMPORTS PACKAGE...
#   own|system    system: on Debian's python3 and its packages (--system-site-packages)
#   BASE_IMPORTS  modules Debian's python3 must have first ('' for none)
#   IMPORTS       modules the environment must import, e.g. 'torch, transformers'
set -u
name=$1 variable=$2 venv=$3 site=$4 base=$5 imports=$6
shift 6
python=$venv/bin/python

skip() { echo "$name: $*" >&2; exit 77; }
usable() { "$python" -c "import $imports" >/dev/null 2>&1; }

if usable; then echo "$python"; exit 0; fi
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
if [ -n "$base" ]; then
  /usr/bin/python3 -c "import $base" 2>/dev/null || skip "Debian's python3 cannot import $base (install python3-numpy)"
fi
mkdir -p "$(dirname "$venv")" 2>/dev/null || skip "cannot make $(dirname "$venv") (set $variable to a writable folder)"
# One maker at a time: a second test run waits for the first instead of racing it.
exec 9>"$venv.lock" || skip "cannot write $venv.lock (set $variable to a writable folder)"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if usable; then echo "$python"; exit 0; fi
rm -rf "$venv"
log=$(mktemp)
flags=""
[ "$site" = system ] && flags=--system-site-packages
# shellcheck disable=SC2086
if ! /usr/bin/python3 -m venv $flags "$venv" >"$log" 2>&1; then
  rm -rf "$venv"
  skip "python3 -m venv failed (install python3-venv): $(tail -n 2 "$log")"
fi
echo "$name: installing $* into $venv" >&2
if ! "$python" -m pip install --disable-pip-version-check -q "$@" >"$log" 2>&1; then
  rm -rf "$venv"
  skip "pip install $* failed (no network to pypi.org?): $(tail -n 3 "$log")"
fi
rm -f "$log"
usable || skip "$venv: $imports does not import: $("$python" -c "import $imports" 2>&1 | tail -n 1)"
echo "$python"

#!/bin/sh
# Makes (once) and checks the Python environment that draws docs/pictures.md's plots:
# Debian's python3 (with its numpy) plus matplotlib from PyPI (scripts/pypi-venv.sh).
# Prints its python; exits 77 (skipped, in a test) when it cannot be made.
# Usage: scripts/pictures-venv.sh   (FSDP_PICTURES_VENV: the folder, /var/cache/fsdp.c/venv-pictures by default)
exec sh "$(dirname "$0")/pypi-venv.sh" pictures-venv FSDP_PICTURES_VENV \
  "${FSDP_PICTURES_VENV:-/var/cache/fsdp.c/venv-pictures}" system numpy 'numpy, matplotlib' "matplotlib==3.11.2"

#!/bin/sh
# Makes (once) and checks the Python environment that judges fsdp.c's tokenizer:
# Hugging Face `tokenizers` from PyPI in a virtual environment outside the clone (no
# torch needed; scripts/pypi-venv.sh). Prints its python; exits 77, which the tests
# report as skipped, when it cannot be made.
# Usage: scripts/tokenizers-venv.sh   (FSDP_TOKENIZERS_VENV: the folder,
# /var/cache/fsdp.c/venv-tokenizers by default)
# 0.20 and later write a tokenizer.json's merges as pairs ([["a", "b"]]); the tests
# rewrite them as strings ("a b") for the older form.
exec sh "$(dirname "$0")/pypi-venv.sh" tokenizers-venv FSDP_TOKENIZERS_VENV \
  "${FSDP_TOKENIZERS_VENV:-/var/cache/fsdp.c/venv-tokenizers}" own '' tokenizers "tokenizers==0.21.0"

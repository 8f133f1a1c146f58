#!/bin/sh
# Makes (once) and checks the Python environment that judges fsdp.c's Hugging Face
# interop: Debian's python3 with its torch 1.13 (python3-torch), plus transformers and
# safetensors from PyPI, in a virtual environment outside the clone (scripts/pypi-venv.sh).
# Prints its python; exits 77, which the tests report as skipped, when it cannot be made.
# Usage: scripts/hf-venv.sh   (FSDP_HF_VENV: the folder, /var/cache/fsdp.c/venv-hf by default)
# The last transformers line whose releases still run on torch 1.13 (4.44 needs torch
# >= 1.11 and has Llama 3.1's RoPE scaling, "rope_type" "llama3", from 4.43).
exec sh "$(dirname "$0")/pypi-venv.sh" hf-venv FSDP_HF_VENV "${FSDP_HF_VENV:-/var/cache/fsdp.c/venv-hf}" system \
  'torch, numpy' 'torch, transformers, safetensors' "transformers==4.44.2" safetensors

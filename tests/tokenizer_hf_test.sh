#!/bin/sh
# fsdp tokenize against Hugging Face tokenizers (tests/tokenizer_hf_check.py says what is
# compared), in the environment scripts/tokenizers-venv.sh makes once; skipped (77) where
# it cannot be made.
# Usage: tokenizer_hf_test.sh path/to/fsdp SOURCE_DIR
FSDP=${1:?usage: tokenizer_hf_test.sh path/to/fsdp SOURCE_DIR} SRC=${2:?usage: tokenizer_hf_test.sh path/to/fsdp SOURCE_DIR}
python=$(sh "$SRC/scripts/tokenizers-venv.sh") || exit 77
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$python" "$SRC/tests/tokenizer_hf_check.py" "$FSDP" "$tmp"

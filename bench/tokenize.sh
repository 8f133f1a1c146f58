#!/usr/bin/env bash
# fsdp tokenize against Hugging Face tokenizers, one-core and all-core throughput, on the
# same texts with the same tokenizer.json files (GPT-2 style and Llama 3 style byte-level
# BPEs trained on the small text with HF's trainer; bench/tokenize_bench.py says what is
# timed): tinyshakespeare, and a larger text generated from it (its lines drawn at random,
# with lines of accented, CJK and emoji words and of numbers among them); then a JSON Lines
# data set made the same way (documents of lognormal length, about 3 KB, FineWeb's
# members), tokenized as llm.c's fineweb.py does: HF's encode_batch over the documents on
# 1 and all threads against `fsdp tokenize --jsonl-key text` into shards. HF runs in the
# environment scripts/tokenizers-venv.sh makes. Generated data stays under $TMPDIR (or
# /tmp), removed at the end. A benchmark, not a test: it checks only that fsdp's ids are
# HF's (on the small text, and on the whole JSONL data set).
#
# Usage: bench/tokenize.sh [--fsdp PATH] [--small FILE] [--large-mb N] [--jsonl-mb N] [--vocab N] [--repeats N]
#   --jsonl-mb N   the JSONL data set's text, in MB (default 256; 0: none)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
SMALL="$ROOT/../shared/data/tinyshakespeare.txt"
LARGE_MB=16
JSONL_MB=256
VOCAB=32000
REPEATS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --fsdp) FSDP="$2"; shift 2 ;;
    --small) SMALL="$2"; shift 2 ;;
    --large-mb) LARGE_MB="$2"; shift 2 ;;
    --jsonl-mb) JSONL_MB="$2"; shift 2 ;;
    --vocab) VOCAB="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$SMALL" ] || { echo "no text file $SMALL" >&2; exit 1; }
PYTHON=$("$ROOT/scripts/tokenizers-venv.sh") || { echo "no Hugging Face tokenizers environment" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-tokenize.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" - "$SMALL" "$TMP/large.txt" "$LARGE_MB" <<'PY'
import random, sys
small, out, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(small, encoding="utf-8").read().splitlines(keepends=True)
extra = ["Café, naïve façade: straße — Ångström.\n", "日本語の文章と中文字符，한국어 문장.\n",
         "Emoji 😀👍🏽🇫🇷 and e\u0301 combining.\n", "3.14159 2718281828 1,000,000 $42.00 12:30\n"]
rng = random.Random(0)
with open(out, "w", encoding="utf-8") as f:
    size = 0
    while size < mb * 10**6:
        line = rng.choice(extra) if rng.random() < 0.05 else rng.choice(lines)
        f.write(line)
        size += len(line.encode())
PY
if [ "$JSONL_MB" -gt 0 ]; then
  "$PYTHON" - "$SMALL" "$TMP/large.jsonl" "$JSONL_MB" <<'PY'
import json, random, sys
small, out, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(small, encoding="utf-8").read().splitlines(keepends=True)
extra = ["Café, naïve façade: straße — Ångström.\n", "日本語の文章と中文字符，한국어 문장.\n",
         "Emoji 😀👍🏽🇫🇷 and e\u0301 combining.\n", "3.14159 2718281828 1,000,000 $42.00 12:30\n",
         "\"Quoted\", said she\\he, with a tab\there.\n"]
rng = random.Random(1)
with open(out, "w", encoding="utf-8") as f:
    size = k = 0
    while size < mb * 10**6:
        n, doc = int(rng.lognormvariate(7.5, 1.0)) + 1, []
        while sum(map(len, doc)) < n:
            doc.append(rng.choice(extra) if rng.random() < 0.05 else rng.choice(lines))
        text = "".join(doc)
        f.write(json.dumps({"text": text, "id": f"<urn:uuid:{k:08x}>", "dump": "CC-MAIN-2024-10",
                            "url": f"https://example.com/{k}", "language": "en", "language_score": 0.93,
                            "token_count": len(text) // 4}) + "\n")
        size += len(text.encode())
        k += 1
PY
fi
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$PYTHON" "$ROOT/bench/tokenize_bench.py" "$FSDP" "$SMALL" "$TMP/large.txt" "$TMP" "$VOCAB" "$REPEATS" \
  "$([ "$JSONL_MB" -gt 0 ] && echo "$TMP/large.jsonl")"

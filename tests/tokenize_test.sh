#!/bin/sh
# `fsdp tokenize` and --tokenizer from the command line, on tokenizer.json files the test
# writes (tests/tokenizer_files.py): the llm.c header (uint16 with GPT-2's magic while the
# vocabulary fits, else uint32 with Llama 3's), the ids of known texts with the document
# token before each document, --document-separator, the same file on 1 and 3 threads;
# every bad input refused by name with exit 1; then text -> tokens -> train, where
# `train --tokenizer` on the text logs the very losses of `train` on the token file and
# `eval` agrees alike; `sample --tokenizer` with a text prompt, stopping at <|endoftext|>.
# Usage: tokenize_test.sh path/to/fsdp PYTHON SOURCE_DIR
FSDP=${1:?usage: tokenize_test.sh path/to/fsdp PYTHON SOURCE_DIR} PYTHON=$2 SRC=$3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
files() { "$PYTHON" "$SRC/tests/tokenizer_files.py" "$@"; }
files write "$tmp" || exit 2
tokenize() { "$FSDP" tokenize "$@" 2>"$tmp/err"; }

# GPT-2 style ids (tokenizer_files.py): bytes are their own ids; " t" 256, "he" 257,
# " the" 258, "in" 259, " a" 260, ...; <|endoftext|> 264.
printf 'the in' >"$tmp/d1.txt"
printf 'a the' >"$tmp/d2.txt"
tokenize --tokenizer "$tmp/gpt2.json" --output "$tmp/two.bin" "$tmp/d1.txt" "$tmp/d2.txt"
[ "$(files show "$tmp/two.bin" | tr '\n' '|')" = "20240520 1 8 0|264 116 257 32 259 264 97 258|" ] &&
  ok "two documents: GPT-2's header, uint16, <|endoftext|> before each" ||
  fail "two documents: $(files show "$tmp/two.bin" | tr '\n' '|') $(cat "$tmp/err")"
grep -q "tokenize: 2 files, 11 bytes in 2 documents, 8 tokens (uint16)" "$tmp/err" && ok "the summary line" ||
  fail "summary: $(cat "$tmp/err")"

printf 'the in<|doc|>a the<|doc|>' >"$tmp/joined.txt"
tokenize --tokenizer "$tmp/gpt2.json" -o "$tmp/split.bin" --document-separator '<|doc|>' "$tmp/joined.txt"
cmp -s "$tmp/two.bin" "$tmp/split.bin" && ok "--document-separator: the same documents" ||
  fail "--document-separator: $(files show "$tmp/split.bin" | tr '\n' '|')"
printf 'the in\n\n\n\na the' >"$tmp/paragraphs.txt"
tokenize --tokenizer "$tmp/gpt2.json" -o "$tmp/split.bin" --document-separator '\n\n' --threads 2 "$tmp/paragraphs.txt"
cmp -s "$tmp/two.bin" "$tmp/split.bin" && ok "--document-separator with escapes; empty documents skipped" ||
  fail "--document-separator '\\n\\n': $(files show "$tmp/split.bin" | tr '\n' '|')"
tokenize --tokenizer "$tmp/plain.json" -o "$tmp/plain.bin" --document-token none "$tmp/d1.txt" "$tmp/d2.txt"
[ "$(files show "$tmp/plain.bin" | sed -n 2p)" = "116 257 32 259 97 258" ] && ok "--document-token none" ||
  fail "--document-token none: $(files show "$tmp/plain.bin" | tr '\n' '|')"

# A vocabulary past 65536: Llama 3's header and uint32 ids; <|begin_of_text|> is 70000.
tokenize --tokenizer "$tmp/big.json" -o "$tmp/big.bin" "$tmp/d1.txt"
[ "$(files show "$tmp/big.bin" | tr '\n' '|')" = "20240801 7 5 0|70000 116 257 32 259|" ] &&
  ok "a large vocabulary: Llama 3's header, uint32, <|begin_of_text|>" ||
  fail "large vocabulary: $(files show "$tmp/big.bin" | tr '\n' '|') $(cat "$tmp/err")"

# A corpus of the sources: the same bytes on 1 and 3 threads.
cat "$SRC"/src/*/*.c "$SRC"/docs/*.md >"$tmp/corpus.txt"
tokenize --tokenizer "$tmp/gpt2.json" -o "$tmp/t1.bin" --threads 1 "$tmp/corpus.txt" &&
  tokenize --tokenizer "$tmp/gpt2.json" -o "$tmp/t3.bin" --threads 3 "$tmp/corpus.txt" &&
  cmp -s "$tmp/t1.bin" "$tmp/t3.bin" && ok "1 and 3 threads write the same file" || fail "1 and 3 threads differ"
[ ! -e "$tmp/t1.bin.tmp" ] && ok "no temporary file left" || fail "t1.bin.tmp left behind"

# expect NAME WANT ARGS...: `fsdp ARGS` exits 1 and its error contains WANT.
expect() {
  name=$1 want=$2
  shift 2
  timeout 60 "$FSDP" "$@" >"$tmp/out" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep "fsdp: error:" "$tmp/out" | grep -qF -- "$want"; then
    ok "$name"
  else
    fail "$name: exit $rc, expected 'fsdp: error: ...$want': $(head -n 3 "$tmp/out")"
  fi
}
printf '{"model": ' >"$tmp/broken.json"
mkfifo "$tmp/fifo"
G="--tokenizer $tmp/gpt2.json"
expect "no tokenizer" "--tokenizer is required" tokenize -o "$tmp/x.bin" "$tmp/d1.txt"
expect "no output" "--output is required" tokenize $G "$tmp/d1.txt"
expect "no input" "no input files" tokenize $G -o "$tmp/x.bin"
expect "a missing tokenizer" "--tokenizer '$tmp/none.json': No such file" tokenize --tokenizer "$tmp/none.json" \
  -o "$tmp/x.bin" "$tmp/d1.txt"
expect "a tokenizer that is not JSON" "--tokenizer '$tmp/broken.json': is not JSON" tokenize \
  --tokenizer "$tmp/broken.json" -o "$tmp/x.bin" "$tmp/d1.txt"
expect "a missing input" "input '$tmp/none.txt': No such file" tokenize $G -o "$tmp/x.bin" "$tmp/d1.txt" "$tmp/none.txt"
[ ! -e "$tmp/x.bin" ] && [ ! -e "$tmp/x.bin.tmp" ] && ok "nothing written for a missing input" ||
  fail "a missing input left a file"
: >"$tmp/empty.txt"
expect "inputs without text" "the input files hold no text: nothing written to '$tmp/x.bin'" tokenize $G \
  -o "$tmp/x.bin" "$tmp/empty.txt"
[ ! -e "$tmp/x.bin" ] && [ ! -e "$tmp/x.bin.tmp" ] && ok "nothing written for inputs without text" ||
  fail "inputs without text left a file"
expect "a FIFO input" "input '$tmp/fifo': is a FIFO, not a regular file" tokenize $G -o "$tmp/x.bin" "$tmp/fifo"
expect "an output folder that is missing" "$tmp/no/x.bin.tmp: cannot open for writing" tokenize $G \
  -o "$tmp/no/x.bin" "$tmp/d1.txt"
expect "--threads 0" "--threads: must be an integer from 1 to 4096, got '0'" tokenize $G --threads 0 -o "$tmp/x.bin" \
  "$tmp/d1.txt"
expect "an unknown flag" "unknown flag '--vocab'" tokenize $G --vocab 3 -o "$tmp/x.bin" "$tmp/d1.txt"
expect "a bad escape" "--document-separator: unknown escape '\\q'" tokenize $G --document-separator 'a\q' \
  -o "$tmp/x.bin" "$tmp/d1.txt"
expect "an unknown document token" "--document-token '<|eot|>' is not an added token" tokenize $G \
  --document-token '<|eot|>' -o "$tmp/x.bin" "$tmp/d1.txt"
expect "no document token" "has neither <|begin_of_text|> nor <|endoftext|>" tokenize --tokenizer "$tmp/plain.json" \
  -o "$tmp/x.bin" "$tmp/d1.txt"
# A pattern whose only match before 'd' is empty (a lookahead, which PCRE2's minimum
# length counts): found by fuzzing, it looped forever; refused, and no .tmp left.
"$PYTHON" - "$tmp/big.json" "$tmp/lookahead.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(?=d)|\\n"
json.dump(t, open(sys.argv[2], "w"))
PY
printf 'and' >"$tmp/d3.txt"
expect "a pattern that matches the empty string" "--tokenizer '$tmp/lookahead.json': the pre-tokenizer's pattern \
matched the empty string" tokenize --tokenizer "$tmp/lookahead.json" -o "$tmp/x.bin" "$tmp/d1.txt" "$tmp/d3.txt"
[ ! -e "$tmp/x.bin" ] && [ ! -e "$tmp/x.bin.tmp" ] && ok "nothing left by an error in the middle of the text" ||
  fail "an error while encoding left a file"
# cJSON takes raw control characters in strings, and a NUL cut that pattern unseen.
printf '{"model": {"type": "BP\000E"}}' >"$tmp/nul.json"
expect "a NUL byte in a tokenizer.json" "--tokenizer '$tmp/nul.json': is not JSON (a NUL byte at byte 22)" tokenize \
  --tokenizer "$tmp/nul.json" -o "$tmp/x.bin" "$tmp/d1.txt"

# 150000 added tokens, each a prefix of ten others ("<t1" of "<t10".."<t19"): the loader
# walked the list from its start for each (150000^2 / 2 steps: minutes), and the encoder
# compared the text with every token of its first byte at each '<' (this text took 98 s);
# both well under a second now. Where several begin at one place, the longest is taken,
# as Hugging Face's: "<t12345<t7" is 12345 then 7.
"$PYTHON" - "$tmp/gpt2.json" "$tmp/added.json" "$tmp/added.txt" "$tmp/added.want" <<'PY'
import json, random, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"] += [{"id": 265 + i, "content": "<t%d" % i, "special": True} for i in range(150000)]
json.dump(t, open(sys.argv[2], "w"))
picks = random.Random(1).choices(range(150000), k=5000)
open(sys.argv[3], "w").write("".join("<" * 40 + "<t%d" % i for i in picks))
open(sys.argv[4], "w").write(" ".join(str(i) for i in [264] + [k for i in picks for k in [60] * 40 + [265 + i]]) + "\n")
PY
timeout 60 "$FSDP" tokenize --tokenizer "$tmp/added.json" -o "$tmp/added.bin" "$tmp/added.txt" 2>"$tmp/err" &&
  files show "$tmp/added.bin" | sed -n 2p | cmp -s - "$tmp/added.want" &&
  ok "150000 added tokens sharing prefixes: loaded, the longest taken" ||
  fail "150000 added tokens: exit $? $(cat "$tmp/err")"

# A pre-token of more than 1 MiB (TEXT_PIECE_MAX_BYTES) is refused where it starts, by
# file and byte, in bounded memory: merging one took 75 bytes of memory a byte, so 100 KB
# of gzip (100 MiB of one letter) asked for 7.5 GB. One of exactly 1 MiB is encoded. The
# sanitizers' shadow memory takes terabytes of address space: no limit under them.
"$PYTHON" - "$tmp" <<'PY'
import gzip, json, sys
d = sys.argv[1]
open(d + "/bomb.gz", "wb").write(gzip.compress(b"a" * (100 << 20), 9))
open(d + "/mib.txt", "wb").write(b"a" * (1 << 20))
open(d + "/spaces.txt", "wb").write(b"x<|doc|>the" + b" " * (2 << 20) + b"in")
open(d + "/long.jsonl", "w").write('{"text": "the"}\n\n{"text": "in ' + "a" * (2 << 20) + '"}\n')
PY
# refused NAME WANT ARGS...: `fsdp tokenize ARGS` in 2 GiB of address space exits 1, says WANT, and leaves no file.
refused() {
  name=$1 want=$2
  shift 2
  (if [ -z "${FSDP_SANITIZER:-}" ]; then ulimit -v 2097152; fi; timeout 60 "$FSDP" tokenize $G --threads 2 \
    -o "$tmp/x.bin" "$@") >"$tmp/out" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep "fsdp: error:" "$tmp/out" | grep -qF -- "$want" && [ ! -e "$tmp/x.bin" ] &&
     [ ! -e "$tmp/x.bin.tmp" ]; then
    ok "$name"
  else
    fail "$name: exit $rc, expected 'fsdp: error: ...$want' and no file: $(head -n 3 "$tmp/out")"
  fi
}
TOO_LONG="a pre-token of more than 1 MiB starts there"
refused "a gzip bomb" "input '$tmp/bomb.gz', byte 0 of its text: $TOO_LONG" "$tmp/d1.txt" "$tmp/bomb.gz"
refused "a run of spaces after a separator" "input '$tmp/spaces.txt', byte 11 of its text: $TOO_LONG" \
  --document-separator '<|doc|>' "$tmp/spaces.txt"
refused "a long word in JSON Lines" "input '$tmp/long.jsonl', document 2, byte 2 of its text: $TOO_LONG" \
  --jsonl-key text "$tmp/long.jsonl"
tokenize $G -o "$tmp/mib.bin" "$tmp/mib.txt" && grep -q "1048577 tokens" "$tmp/err" &&
  ok "a pre-token of exactly 1 MiB is encoded" || fail "1 MiB of one letter: $(cat "$tmp/err")"

# Text -> tokens -> train: the token file and the text through --tokenizer train alike.
MODEL="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --vocab-size 272 --block-size 32"
train() {  # train LOG ARGS...
  log=$1
  shift
  timeout 300 "$FSDP" train $MODEL --seq-len 32 --batch-size 4 --steps 4 --lr 2e-3 --warmup 1 --val-fraction 0.1 \
    --val-every 4 --log "$log" "$@" >"$tmp/train.out" 2>&1
}
if train "$tmp/bin.jsonl" --data "$tmp/t1.bin" && train "$tmp/text.jsonl" --data "$tmp/corpus.txt" $G; then
  [ "$(wc -l <"$tmp/bin.jsonl")" -eq 4 ] && ok "fsdp train on fsdp tokenize's file" || fail "train: $(cat "$tmp/bin.jsonl")"
  "$PYTHON" - "$tmp/bin.jsonl" "$tmp/text.jsonl" <<'PY' && ok "train --tokenizer logs the token file's losses" ||
import json, sys
a, b = ([(r["loss"], r.get("val_loss")) for r in map(json.loads, open(p))] for p in sys.argv[1:])
sys.exit(0 if a == b and len(a) == 4 else f"{a} != {b}")
PY
    fail "train --tokenizer: other losses"
else
  fail "train: $(tail -n 3 "$tmp/train.out")"
fi
EVAL="$MODEL --seq-len 32 --batch-size 2 --batches 3 --seed 3"
a=$("$FSDP" eval $EVAL --data "$tmp/t1.bin" 2>&1) b=$("$FSDP" eval $EVAL --data "$tmp/corpus.txt" $G 2>&1)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "eval --tokenizer: the token file's loss" || fail "eval: '$a' and '$b'"
expect "train --tokenizer with a larger vocabulary" "--tokenizer '$tmp/big.json' has 70002 tokens, more than the \
model's vocab size 272" train $MODEL --data "$tmp/corpus.txt" --tokenizer "$tmp/big.json" --steps 1
expect "train --tokenizer --data-format nanogpt" "--data-format nanogpt: with --tokenizer, --data is text" train $MODEL \
  --data "$tmp/corpus.txt" $G --data-format nanogpt --steps 1

# Sampling: a text prompt in, text out; a generation ends at <|endoftext|>.
"$FSDP" export $MODEL --seed 5 -o "$tmp/m" >/dev/null 2>&1 || fail "export"
S="sample --init-from $tmp/m --temperature 0 --max-new-tokens 8"
# 8 tokens of text, at least 8 bytes and the newline, unless <|endoftext|> came first.
"$FSDP" $S $G --prompt "the in" >"$tmp/text.out" 2>"$tmp/err" &&
  { [ "$(wc -c <"$tmp/text.out")" -ge 9 ] || grep -q "stopped at <|endoftext|>" "$tmp/err"; } &&
  ok "sample --tokenizer: a text prompt, text out" || fail "sample: $(cat "$tmp/err")"
first=$("$FSDP" $S --prompt-tokens 264,116,257 --max-new-tokens 1 2>/dev/null)
if [ -n "$first" ]; then
  files eot-at "$first" "$tmp/stop.json"
  out=$("$FSDP" $S --prompt-tokens 264,116,257 --tokenizer "$tmp/stop.json" 2>"$tmp/err")
  [ -z "$out" ] && grep -q "stopped at <|endoftext|> (token $first)" "$tmp/err" &&
    ok "sample stops at <|endoftext|>" || fail "no stop at token $first: '$out' $(cat "$tmp/err")"
else
  fail "greedy first token '$first'"
fi
expect "sample --tokenizer with a larger vocabulary" "has 70002 tokens, more than the model's vocab size 272" $S \
  --prompt "the" --tokenizer "$tmp/big.json"

echo "tokenize_test: $passed passed, $failed failed"
[ $failed -eq 0 ]

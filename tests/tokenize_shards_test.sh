#!/bin/sh
# `fsdp tokenize` at data-set scale, on tokenizer.json files the test writes
# (tests/tokenizer_files.py): JSON Lines documents (--jsonl-key; blank lines, CRLF, a byte
# order mark, other members) give the ids of the same texts as files, and gzip'd ones
# too; shards (--output PREFIX) hold the token stream of one file, cut at exactly
# --shard-tokens, the validation shard first (--val-tokens), named as llm.c's fineweb.py
# names them, with llm.c headers that `fsdp train --data` and `eval` read; a run that
# fails leaves no file; shards of an earlier run are warned of; every bad flag, line and
# file refused by name with exit 1.
# Usage: tokenize_shards_test.sh path/to/fsdp PYTHON SOURCE_DIR
FSDP=${1:?usage: tokenize_shards_test.sh path/to/fsdp PYTHON SOURCE_DIR} PYTHON=$2 SRC=$3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
files() { "$PYTHON" "$SRC/tests/tokenizer_files.py" "$@"; }
files write "$tmp" || exit 2
G="--tokenizer $tmp/gpt2.json"
tokenize() { "$FSDP" tokenize $G "$@" 2>"$tmp/err"; }
# ids FILE...: the ids of llm.c token files, one after another, on one line.
ids() { for f in "$@"; do files show "$f" | sed -n 2p; done | tr '\n' ' '; }

# JSONL documents are the same texts given as files (tokenizer_files.py's GPT-2 ids).
printf 'the in' >"$tmp/d1.txt"
printf 'a the' >"$tmp/d2.txt"
tokenize -o "$tmp/two.bin" "$tmp/d1.txt" "$tmp/d2.txt"
printf '\357\273\277{"text": "the in", "id": 1}\n\n  \n{"id": "2", "text": "a the", "url": "x"}\r\n' \
  >"$tmp/d.jsonl"
tokenize -o "$tmp/j.bin" --jsonl-key text "$tmp/d.jsonl" && cmp -s "$tmp/j.bin" "$tmp/two.bin" &&
  ok "JSONL: each line's text a document, as files are" || fail "JSONL: $(ids "$tmp/j.bin") $(cat "$tmp/err")"
grep -q "tokenize: 1 file, 11 bytes in 2 documents, 8 tokens (uint16)" "$tmp/err" && ok "the summary counts documents" ||
  fail "summary: $(cat "$tmp/err")"
"$PYTHON" - "$tmp" "$SRC" <<'PY' || exit 2
import glob, gzip, json, sys
tmp, src = sys.argv[1:3]
# Two gzip members, one after the other, as `cat a.gz b.gz` makes them.
with open(f"{tmp}/d.jsonl.gz", "wb") as f:
    f.write(gzip.compress(b'{"text": "the in"}\n'))
    f.write(gzip.compress(b'{"text": "a the"}\n'))
open(f"{tmp}/d1.txt.gz", "wb").write(gzip.compress(b"the in"))
# The docs as paragraphs: one JSONL document each, and one text file with a separator.
text = "".join(open(p, encoding="utf-8").read() for p in sorted(glob.glob(f"{src}/docs/*.md")))
with open(f"{tmp}/corpus.txt", "w", encoding="utf-8", newline="") as corpus, \
        open(f"{tmp}/corpus.jsonl", "w", encoding="utf-8") as lines:
    for paragraph in text.split("\n\n"):
        if paragraph:
            corpus.write(paragraph + "<|doc|>")
            lines.write(json.dumps({"id": len(paragraph), "text": paragraph}) + "\n")
PY
# A build without zlib (a cross build whose target has none) refuses gzip by name.
zlib=1
if ! tokenize -o "$tmp/jz.bin" --jsonl-key text "$tmp/d.jsonl.gz" && grep -q "built without zlib" "$tmp/err"; then
  zlib=0
fi
if [ $zlib -eq 0 ]; then
  echo "skip gzip: $(cat "$tmp/err")"
else
  cmp -s "$tmp/jz.bin" "$tmp/two.bin" && ok "gzip'd JSONL of two members is inflated" ||
    fail "gzip: $(ids "$tmp/jz.bin") $(cat "$tmp/err")"
  tokenize -o "$tmp/tz.bin" "$tmp/d1.txt.gz" "$tmp/d2.txt" && cmp -s "$tmp/tz.bin" "$tmp/two.bin" &&
    ok "a gzip'd text file is inflated" || fail "gzip text: $(cat "$tmp/err")"
fi

# The same documents as one file and as shards, from text and from JSONL.
tokenize -o "$tmp/one.bin" --document-separator '<|doc|>' --threads 3 "$tmp/corpus.txt" ||
  fail "one file: $(cat "$tmp/err")"
tokenize -o "$tmp/jsonl.bin" --jsonl-key text --threads 2 "$tmp/corpus.jsonl" && cmp -s "$tmp/one.bin" "$tmp/jsonl.bin" &&
  ok "JSONL of the corpus' paragraphs: the ids of the text split by a separator" || fail "corpus JSONL: $(cat "$tmp/err")"
mkdir "$tmp/s"
tokenize -o "$tmp/s/corpus" --shard-tokens 20K --val-tokens 7000 --jsonl-key text --threads 3 "$tmp/corpus.jsonl" ||
  fail "shards: $(cat "$tmp/err")"
shards=$(cd "$tmp/s" && ls)
[ "$(echo "$shards" | head -n 1)" = corpus_train_000001.bin ] && [ "$(echo "$shards" | tail -n 1)" = corpus_val_000000.bin ] &&
  [ ! -e "$tmp/s/corpus_train_000000.bin" ] && ! echo "$shards" | grep -q tmp &&
  ok "shards named as llm.c's: corpus_val_000000.bin, then corpus_train_000001.bin, ..." || fail "names: $shards"
set -- "$tmp"/s/corpus_val_000000.bin "$tmp"/s/corpus_train_*.bin
[ "$(ids "$@")" = "$(ids "$tmp/one.bin")" ] && ok "the shards' ids, validation first, are the one file's ($# shards)" ||
  fail "the shards' ids differ from the one file's"
"$PYTHON" - "$@" <<'PY' && ok "shards of exactly --shard-tokens, the first --val-tokens, llm.c's GPT-2 headers" ||
import os, struct, sys
counts = []
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    magic, version, count = struct.unpack_from("<3i", data)
    assert (magic, version) == (20240520, 1) and len(data) == 1024 + 2 * count, (path, magic, version, count)
    assert not any(struct.unpack_from("<253i", data, 12)), path  # the rest of the header is zero
    counts.append(count)
assert counts[0] == 7000 and all(c == 20000 for c in counts[1:-1]) and 0 < counts[-1] <= 20000, counts
assert len(counts) >= 3, counts
PY
  fail "shard sizes or headers"
last=$(ls "$tmp"/s/corpus_train_*.bin | tail -n 1)
grep -q "$# shards, $tmp/s/corpus_val_000000.bin to $last" "$tmp/err" && ok "the summary names the shards" ||
  fail "summary: $(cat "$tmp/err")"
mkdir "$tmp/n"
tokenize -o "$tmp/n/corpus" --shard-tokens 20000 --val-tokens 0 "$tmp/corpus.jsonl" --jsonl-key text &&
  [ -e "$tmp/n/corpus_train_000000.bin" ] && [ ! -e "$tmp/n/corpus_val_000000.bin" ] &&
  [ "$(ids "$tmp"/n/corpus_train_*.bin)" = "$(ids "$tmp/one.bin")" ] &&
  ok "--val-tokens 0: no validation shard, corpus_train_000000.bin first, the same ids" || fail "--val-tokens 0"
mkdir "$tmp/d"
tokenize -o "$tmp/d/corpus" "$tmp/corpus.jsonl" --jsonl-key text && [ "$(ls "$tmp/d")" = corpus_val_000000.bin ] &&
  grep -q "every token went to the validation shard" "$tmp/err" &&
  ok "--shard-tokens 100M by default: one validation shard, and a warning that no training shard was written" ||
  fail "default shard size: $(ls "$tmp/d") $(cat "$tmp/err")"

# Chunks of JSONL parsed on several threads (one for every 8 encoding threads): the ids
# of one; and of two bad lines in different chunks, the first is named.
for k in $(seq 40); do cat "$tmp/corpus.jsonl"; done >"$tmp/many.jsonl"
tokenize -o "$tmp/many1.bin" --jsonl-key text --threads 1 "$tmp/many.jsonl" &&
  tokenize -o "$tmp/many24.bin" --jsonl-key text --threads 24 "$tmp/many.jsonl" &&
  cmp -s "$tmp/many1.bin" "$tmp/many24.bin" && ok "JSONL parsed on 4 threads: the ids of one" ||
  fail "JSONL on 1 and 24 threads differ: $(cat "$tmp/err")"
n=$(wc -l <"$tmp/corpus.jsonl")
"$PYTHON" - "$tmp/many.jsonl" "$tmp/twobad.jsonl" "$n" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").readlines()
lines[int(sys.argv[3]) + 2] = '{"text": false}\n'
lines[-5] = "{}\n"
open(sys.argv[2], "w", encoding="utf-8").writelines(lines)
PY
tokenize -o "$tmp/x.bin" --jsonl-key text --threads 24 "$tmp/twobad.jsonl"
grep -q "fsdp: error: input '$tmp/twobad.jsonl': line $((n + 3)): \"text\" is a boolean, not a string" "$tmp/err" &&
  ok "of two bad lines chunks apart, the first is named" || fail "two bad lines: $(cat "$tmp/err")"

# The shards are token files for fsdp train and eval.
MODEL="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --vocab-size 272 --block-size 32"
timeout 300 "$FSDP" train $MODEL --data "$tmp/s/corpus_train_000001.bin" --seq-len 32 --batch-size 4 --steps 2 \
  --lr 1e-3 --warmup 1 --log "$tmp/train.jsonl" >"$tmp/train.out" 2>&1 && [ "$(wc -l <"$tmp/train.jsonl")" -eq 2 ] &&
  ok "fsdp train --data reads a training shard" || fail "train: $(tail -n 3 "$tmp/train.out")"
timeout 300 "$FSDP" eval $MODEL --data "$tmp/s/corpus_val_000000.bin" --seq-len 32 --batch-size 2 --batches 2 \
  >"$tmp/eval.out" 2>&1 && ok "fsdp eval --data reads the validation shard" || fail "eval: $(tail -n 3 "$tmp/eval.out")"

# A run that fails after some shards are complete leaves none of them, nor a .tmp.
mkdir "$tmp/f"
cp "$tmp/corpus.jsonl" "$tmp/late.jsonl"
printf '{"text": "x"}\n{"text": null}\n' >>"$tmp/late.jsonl"
tokenize -o "$tmp/f/corpus" --shard-tokens 5000 --jsonl-key text "$tmp/late.jsonl"
rc=$?
[ $rc -eq 1 ] && [ -z "$(ls -A "$tmp/f")" ] && ok "a line refused after complete shards: no shard left, no .tmp" ||
  fail "a late failure: exit $rc, left $(ls "$tmp/f")"
# Shards of an earlier, longer run are named in a warning, and left alone.
tokenize -o "$tmp/s/corpus" --shard-tokens 40K --val-tokens 7000 --jsonl-key text "$tmp/corpus.jsonl" &&
  grep -q "warning: .* shards under '$tmp/s/corpus' not written by this run" "$tmp/err" &&
  ok "an earlier run's shards are warned of" || fail "stale shards: $(cat "$tmp/err")"

# expect NAME WANT ARGS...: `fsdp tokenize ARGS` exits 1 and its error contains WANT.
expect() {
  name=$1 want=$2
  shift 2
  timeout 60 "$FSDP" tokenize "$@" >"$tmp/out" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep "fsdp: error:" "$tmp/out" | grep -qF -- "$want"; then
    ok "$name"
  else
    fail "$name: exit $rc, expected 'fsdp: error: ...$want': $(head -n 3 "$tmp/out")"
  fi
}
line() { printf '{"text": "a"}\n%s\n' "$1" >"$tmp/bad.jsonl"; }
J="$G -o $tmp/x.bin --jsonl-key text $tmp/bad.jsonl"
line '{"text": "b"'; expect "a line that is not JSON" "input '$tmp/bad.jsonl': line 2: not JSON" $J
line '["text"]'; expect "a line that is not an object" "line 2: an array, not a JSON object" $J
line '{"txt": "b"}'; expect "a line without the key" "line 2: no member \"text\" (--jsonl-key)" $J
line '{"text": 3}'; expect "a key that is not a string" "line 2: \"text\" is a number, not a string" $J
line '{"text": "b"} {"text": "c"}'; expect "two values on a line" "line 2: more after the JSON value" $J
line '{"text": "b\u0000c"}'; expect "a \\u0000 escape" "line 2: a \\u0000 escape" $J
line '{"text": "\ud800x"}'; expect "a lone surrogate escape" "line 2: a lone UTF-16 surrogate escape, \\ud800 (at byte 11 of the line)" $J
line '{"text": "\ud83d\ude00 \\ud800"}'; [ "$("$FSDP" tokenize $J 2>&1 >/dev/null | grep -c error)" = 0 ] &&
  ok "a surrogate pair and an escaped backslash before ud800 are text" || fail "a surrogate pair was refused"
printf '{"text": "a"}\n{"text": "b\000"}\n' >"$tmp/bad.jsonl"
expect "a NUL byte in a line" "line 2: a NUL byte" $J
head -c 30 "$tmp/d.jsonl.gz" >"$tmp/cut.gz"
{ cat "$tmp/d.jsonl.gz"; printf 'trailing bytes'; } >"$tmp/trail.gz"
if [ $zlib -eq 1 ]; then
  expect "gzip data cut short" "input '$tmp/cut.gz': its gzip data is cut short" $G -o "$tmp/x.bin" --jsonl-key text \
    "$tmp/cut.gz"
  expect "bytes after gzip data" "input '$tmp/trail.gz': not valid gzip data" $G -o "$tmp/x.bin" "$tmp/trail.gz"
else
  expect "gzip without zlib" "input '$tmp/cut.gz': is gzip, and this fsdp was built without zlib" $G -o "$tmp/x.bin" \
    "$tmp/cut.gz"
fi
expect "--jsonl-key on a text file" "input '$tmp/d1.txt': line 1: not JSON" $G -o "$tmp/x.bin" --jsonl-key text \
  "$tmp/d1.txt"
expect "--jsonl-key without a key" "--jsonl-key: missing value" $G -o "$tmp/x.bin" "$tmp/d.jsonl" --jsonl-key
expect "--jsonl-key and --document-separator" "--document-separator and --jsonl-key" $G -o "$tmp/x.bin" \
  --jsonl-key text --document-separator '\n' "$tmp/d.jsonl"
expect "--shard-tokens with one file" "--shard-tokens: --output '$tmp/x.bin' is one file" $G -o "$tmp/x.bin" \
  --shard-tokens 100 "$tmp/d1.txt"
expect "--val-tokens with one file" "--val-tokens: --output '$tmp/x.bin' is one file" $G -o "$tmp/x.bin" \
  --val-tokens 100 "$tmp/d1.txt"
expect "--shard-tokens 0" "--shard-tokens: must be a count of tokens from 1 to 2147483647" $G -o "$tmp/x" \
  --shard-tokens 0 "$tmp/d1.txt"
expect "--shard-tokens 1T" "got '1T'" $G -o "$tmp/x" --shard-tokens 1T "$tmp/d1.txt"
expect "--shard-tokens past llm.c's int32" "got '3G'" $G -o "$tmp/x" --shard-tokens 3G "$tmp/d1.txt"
expect "--val-tokens -1" "--val-tokens: must be a count of tokens from 0" $G -o "$tmp/x" --val-tokens -1 "$tmp/d1.txt"
expect "--output a folder" "--output '$tmp/s' is a folder: give the shards' prefix in it, e.g. '$tmp/s/fineweb'" $G \
  -o "$tmp/s" "$tmp/d1.txt"
expect "--output ending in /" "--output 'nowhere/' is a folder" $G -o nowhere/ "$tmp/d1.txt"
# An input the output would replace (main overwrote it with no word): the file itself, a
# hard link to it, or one of the shards a prefix names; the input is left as it was.
cp "$tmp/d1.txt" "$tmp/in.bin"
ln "$tmp/in.bin" "$tmp/in_link.bin"
expect "--output the input" "--output '$tmp/in.bin': the input '$tmp/in.bin' is the file it writes" $G \
  -o "$tmp/in.bin" "$tmp/in.bin"
expect "--output a hard link of the input" "the input '$tmp/in.bin' is the file it writes" $G -o "$tmp/in_link.bin" \
  "$tmp/d1.txt" "$tmp/in.bin"
cp "$tmp/d1.txt" "$tmp/c_train_000001.bin"
expect "--output's shards among the inputs" "the input '$tmp/c_train_000001.bin' is one of the shards it writes" $G \
  -o "$tmp/c" "$tmp/c_train_000001.bin"
cmp -s "$tmp/d1.txt" "$tmp/in.bin" && cmp -s "$tmp/d1.txt" "$tmp/c_train_000001.bin" &&
  ok "the inputs are as they were" || fail "an input was replaced"
expect "shards in a missing folder" "$tmp/no/x_val_000000.bin.tmp: cannot open for writing" $G -o "$tmp/no/x" \
  "$tmp/d1.txt"
: >"$tmp/empty.jsonl"
mkdir "$tmp/e"
expect "JSONL without documents" "the input files hold no text: nothing written to '$tmp/e/x_*.bin'" $G \
  -o "$tmp/e/x" --jsonl-key text "$tmp/empty.jsonl"
[ -z "$(ls -A "$tmp/e")" ] && ok "nothing left by inputs without text" || fail "left: $(ls "$tmp/e")"

echo "tokenize_shards_test: $passed passed, $failed failed"
[ $failed -eq 0 ]

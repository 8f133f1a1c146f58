#!/bin/sh
# A damaged or mismatched checkpoint is refused with a message naming the file (or the
# flag) and a non-zero exit, never loaded: a truncated shard file, a flipped byte, a
# missing file, no metadata (an interrupted write), bad metadata, another model, a flag
# that shapes training changed, another data set (unless --data-changed accept), a
# checkpoint from before data positions (the same), a data position past the data order's
# epochs. --resume auto skips and removes incomplete checkpoints,
# starts fresh (saying so) where there is none, appending to --log (a torn last line cut
# off), and --keep-last
# keeps the newest, removing a linked step folder as a link. A checkpoint directory
# holding later steps than the run starts from is refused, and so are --log and --trace
# naming the run's data.
# Usage: checkpoint_errors_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"
set +e
failed=0

run() {  # run ARGS...: fsdp train on 2 ranks; output in $tmp/out.txt, status in $rc
  timeout 120 $MPIRUN -np 2 "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 \
    --global-batch-size 4 --steps 6 --lr 2e-3 --warmup 1 --data "${DATA:-$tmp/corpus.txt}" "$@" > "$tmp/out.txt" 2>&1
  rc=$?
}

fail() {
  echo "FAIL $*"
  sed -n 1,15p "$tmp/out.txt"
  failed=$((failed + 1))
}

# expect_error NAME TEXT ARGS...: the run fails and says "fsdp: error: ...TEXT".
expect_error() {
  name=$1 want=$2
  shift 2
  run "$@"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep "fsdp: error:" "$tmp/out.txt" | grep -qF -- "$want"; then
    echo "ok   $name"
  else
    fail "$name: exit $rc, expected 'fsdp: error: ...$want'"
  fi
}

# fresh NAME: a copy of the good checkpoint at step 4, to damage.
fresh() {
  rm -rf "$tmp/$1"
  cp -r "$tmp/good" "$tmp/$1"
  echo "$tmp/$1/step-00000004"
}

run --checkpoint-dir "$tmp/good" --checkpoint-every 2
[ "$rc" -eq 0 ] || fail "the run writing the checkpoints: exit $rc"
ls "$tmp/good"

c=$(fresh truncated)
truncate -s 1000 "$c/rank-00001.bin"
expect_error truncated "checkpoint file '$c/rank-00001.bin' is truncated: 1000 bytes" --resume "$c"

c=$(fresh flipped)
printf '\125' | dd of="$c/rank-00000.bin" bs=1 seek=3000 conv=notrunc 2>/dev/null
expect_error flipped-byte "checkpoint file '$c/rank-00000.bin' is corrupt: its CRC-32C is" --resume "$c"

c=$(fresh missing)
rm "$c/rank-00001.bin"
expect_error missing-file "cannot open '$c/rank-00001.bin': No such file" --resume "$c"

c=$(fresh incomplete)
rm "$c/metadata.json"
expect_error no-metadata "checkpoint '$c' is incomplete: it has no metadata.json" --resume "$c"

c=$(fresh bad-json)
printf '{"format": ' > "$c/metadata.json"
expect_error bad-metadata "checkpoint metadata '$c/metadata.json' is not a JSON object" --resume "$c"

c=$(fresh escape)
sed -i 's/"rank-00000.bin"/"..\/..\/good\/step-00000002\/rank-00000.bin"/' "$c/metadata.json"
expect_error file-outside "checkpoint metadata '$c/metadata.json': '../../good/step-00000002/rank-00000.bin' is not a file name" --resume "$c"

expect_error no-such-dir "checkpoint '$tmp/good/step-00000003': no such directory" --resume "$tmp/good/step-00000003"
expect_error other-model "checkpoint '$tmp/good/step-00000004/metadata.json' is of another model: --n-embd 64 there, 32 here" \
  --resume "$tmp/good/step-00000004" --n-embd 32
expect_error other-preset "is of another model: --model gpt2-tiny there, llama3-debug here" \
  --resume "$tmp/good/step-00000004" --model llama3-debug --n-layer 2 --n-embd 64 --n-head 2 --n-kv-head 2 \
  --ffn-hidden 64 --vocab-size 256
expect_error changed-lr "--lr: 0.001 here, but the checkpoint '$tmp/good/step-00000004/metadata.json' was trained with 0.002" \
  --resume "$tmp/good/step-00000004" --lr 1e-3
# --val-data added on resume would give the tail --val-fraction held out to training: said so.
expect_error val-data-added "--val-fraction: 0 here (--val-data's: validation from files of its own, where the checkpoint's run held the tail of --data out of training; resume without --val-data), but the checkpoint '$tmp/good/step-00000004/metadata.json' was trained with 0.1" \
  --resume "$tmp/good/step-00000004" --val-data "$tmp/corpus.txt"
# Another data set: its shards' names or token counts differ.
head -c 200000 "$tmp/corpus.txt" > "$tmp/shorter.txt"
DATA=$tmp/shorter.txt
expect_error other-data "--data: checkpoint '$tmp/good/step-00000004/metadata.json' was trained on another data set: its shard 1 is 'corpus.txt' of 262144 tokens, this run's 'shorter.txt' of 200000 (--data-changed accept" \
  --resume "$tmp/good/step-00000004"
run --resume "$tmp/good/step-00000004" --data-changed accept
if [ "$rc" -eq 0 ] && grep -q "resume: another data set than the checkpoint's (its shard 1 is 'corpus.txt'" "$tmp/out.txt" &&
  grep -q "resume: data from epoch 0, window 16 of its 5624" "$tmp/out.txt" && grep -q '^step     5/6' "$tmp/out.txt"; then
  echo "ok   other-data accepted"
else
  fail "other-data accepted: exit $rc"
fi
unset DATA
# Shards of one name and size in other folders, given in the other order: the names and
# token counts agree, the first tokens do not (before, the resume went on silently over
# other data).
mkdir "$tmp/en" "$tmp/de"
head -c 200000 "$tmp/corpus.txt" > "$tmp/en/part0.txt"
tail -c 200000 "$tmp/corpus.txt" > "$tmp/de/part0.txt"
DATA="$tmp/en/part0.txt,$tmp/de/part0.txt"
run --checkpoint-dir "$tmp/ordered" --checkpoint-every 3
[ "$rc" -eq 0 ] || fail "the run over en, de: exit $rc"
DATA="$tmp/de/part0.txt,$tmp/en/part0.txt"
expect_error swapped-data "its shard 1, 'part0.txt' of 200000 tokens, begins with other tokens than this run's '$tmp/de/part0.txt'" \
  --resume "$tmp/ordered/step-00000003"
unset DATA
# A checkpoint from before data positions were kept (its batches were drawn at random).
c=$(fresh old-format)
"$PYTHON" - "$c/metadata.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
del meta["data"], meta["state"]["data_position"]
json.dump(meta, open(sys.argv[1], "w"))
PY
expect_error old-format "--data: checkpoint '$c/metadata.json' was written before checkpoints kept their data set" \
  --resume "$c"
run --resume "$c" --data-changed accept
if [ "$rc" -eq 0 ] && grep -q "resume: data from epoch 0, window 16 of its 7372" "$tmp/out.txt"; then
  echo "ok   old-format accepted"
else
  fail "old-format accepted: exit $rc"
fi
# A data position past the epochs a data order places (the checkpoint fuzzer's finding of
# 2026-12-06): refused naming the metadata, not an internal check.
c=$(fresh far-epoch)
"$PYTHON" - "$c/metadata.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
meta["state"]["data_position"]["epoch"] = 2147483648
json.dump(meta, open(sys.argv[1], "w"))
PY
expect_error far-epoch "checkpoint metadata '$c/metadata.json': its data position's epoch 2147483648 (window" \
  --resume "$c"
# Metadata edited by hand (the hostile-user pass of 2026-12-07): a step past the
# schedule's end reached an internal check; pieces moved off their places and a loss scale
# beyond fp32 were taken, and trained on garbage.
edit() {  # edit NAME PYTHON: a copy of the good step-4 checkpoint, its metadata as "meta" edited by the code
  c=$(fresh "$1")
  "$PYTHON" -c "import json, sys
meta = json.load(open(sys.argv[1]))
$2
json.dump(meta, open(sys.argv[1], 'w'))" "$c/metadata.json"
}
edit past-schedule 'meta["state"]["lr_schedule"]["steps"] = 2'
expect_error past-schedule "checkpoint metadata '$c/metadata.json': its step 4 is past its lr_schedule's 2 steps" \
  --resume "$c"
edit moved-piece 'meta["files"][0]["pieces"][0]["offset"] = 1'
expect_error moved-piece "checkpoint file '$c/rank-00000.bin': the piece of" --resume "$c"
edit shared-bytes 'meta["files"][0]["pieces"][1]["offset"] = 0'
expect_error shared-bytes "(a file's pieces lie end to end)" --resume "$c"
edit huge-scale 'meta["state"]["loss_scale"] = 1e300'
expect_error huge-scale "checkpoint metadata '$c/metadata.json': 'loss_scale' is not a non-negative fp32 number" \
  --resume "$c"
# --min-lr's default is --lr / 10 in fp32, an ulp from the fp32 of "2e-4": said so.
expect_error min-lr-ulp "--min-lr: 0.0002 here, but the checkpoint '$tmp/good/step-00000004/metadata.json' was trained with 0.00020000001 (the flags that shape training must stay the same on resume): an fp32 ulp apart" \
  --resume "$tmp/good/step-00000004" --min-lr 2e-4
mkdir "$tmp/renamed"
cp -r "$tmp/good/step-00000002" "$tmp/renamed/step-00000005"
expect_error renamed "checkpoint '$tmp/renamed/step-00000005' holds step 2, not the step 5 its name says" \
  --resume auto --checkpoint-dir "$tmp/renamed"
expect_error steps-at-checkpoint "--steps 4: the checkpoint '$tmp/good/step-00000004' is at step 4" \
  --resume "$tmp/good/step-00000004" --steps 4
expect_error auto-without-dir "--resume auto: needs --checkpoint-dir" --resume auto
expect_error every-without-dir "--checkpoint-every: needs --checkpoint-dir" --checkpoint-every 2
# A folder another run holds (its .lock, held here by flock(1)): a second run's start-up
# removed the first's checkpoint being written as incomplete, and the first then completed
# it without its file.
c=$(fresh locked)
exec 9>>"$tmp/locked/.lock"
flock -n 9
expect_error locked "--checkpoint-dir: '$tmp/locked' is another run's (it holds '$tmp/locked/.lock')" \
  --resume auto --checkpoint-dir "$tmp/locked"
exec 9>&-

# What a job killed while writing leaves: a step directory with no metadata (here a
# half-written rank file too). auto resumes from the newest complete one and removes it.
c=$(fresh auto)
rm -r "$tmp/auto/step-00000006"
mkdir "$tmp/auto/step-00000005"
head -c 100 "$c/rank-00000.bin" > "$tmp/auto/step-00000005/rank-00000.bin.tmp"
# Its log's last line cut short too (a full disk): the resumed lines were glued to it.
printf '{"step": 4}\n{"step": 5, "lo' > "$tmp/auto.jsonl"
run --checkpoint-dir "$tmp/auto" --resume auto --keep-last 2 --log "$tmp/auto.jsonl"
if [ "$rc" -ne 0 ] || ! grep -q "resume: from '$tmp/auto/step-00000004' at step 4" "$tmp/out.txt"; then
  fail "auto: exit $rc, expected a resume from step 4"
elif [ -e "$tmp/auto/step-00000005" ]; then
  fail "auto: the incomplete step-00000005 was not removed"
elif [ "$(ls "$tmp/auto" | tr '\n' ' ')" != "step-00000004 step-00000006 " ]; then
  fail "auto --keep-last 2: left $(ls "$tmp/auto" | tr '\n' ' ')"
elif [ "$(wc -l < "$tmp/auto.jsonl")" -ne 3 ] || ! grep -q "log: the last line of '$tmp/auto.jsonl' had no end" "$tmp/out.txt" ||
  ! "$PYTHON" -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/auto.jsonl"; then
  fail "auto: expected the torn line cut off, steps 5 and 6 logged after step 4's: $(cat "$tmp/auto.jsonl")"
else
  echo "ok   auto-skips-incomplete, keep-last"
fi

mkdir "$tmp/empty"
echo '{"step": 9}' > "$tmp/kept.jsonl"
run --checkpoint-dir "$tmp/empty" --resume auto --log "$tmp/kept.jsonl"
if [ "$rc" -eq 0 ] && grep -q "resume: no complete checkpoint in '$tmp/empty': starting fresh" "$tmp/out.txt" &&
  grep -q '^step     1/6' "$tmp/out.txt" && [ "$(head -n 1 "$tmp/kept.jsonl")" = '{"step": 9}' ]; then
  echo "ok   auto-starts-fresh, appending to the log"
else
  fail "auto-starts-fresh: exit $rc, log starts $(head -c 40 "$tmp/kept.jsonl")"
fi

# Checkpoints of later steps than the run starts from are another run's: --keep-last
# would keep them over the run's own (it deleted step 5 as it was announced), and
# --resume auto would later take them.
c=$(fresh later)
expect_error resume-before-later "--checkpoint-dir: '$tmp/later' holds 2 checkpoint(s) of steps after step 2" \
  --resume "$tmp/later/step-00000002" --checkpoint-dir "$tmp/later" --keep-last 1
expect_error fresh-over-earlier "--checkpoint-dir: '$tmp/later' holds 3 checkpoint(s) of an earlier run" \
  --checkpoint-dir "$tmp/later"
[ "$(ls "$tmp/later" | tr '\n' ' ')" = "step-00000002 step-00000004 step-00000006 " ] ||
  fail "later: left $(ls "$tmp/later" | tr '\n' ' ')"

# --keep-last removes a step folder that is a link as a link, not what it points to.
c=$(fresh linked)
mkdir "$tmp/linking"
ln -s "$tmp/linked/step-00000002" "$tmp/linking/step-00000002"
run --resume "$tmp/linking/step-00000002" --checkpoint-dir "$tmp/linking" --checkpoint-every 2 --keep-last 1
if [ "$rc" -ne 0 ]; then
  fail "linked: exit $rc"
elif [ -e "$tmp/linking/step-00000002" ] || [ -L "$tmp/linking/step-00000002" ]; then
  fail "linked: the link step-00000002 was not removed"
elif [ ! -f "$tmp/linked/step-00000002/metadata.json" ] || [ ! -f "$tmp/linked/step-00000002/rank-00000.bin" ]; then
  fail "linked: the checkpoint the link pointed to lost its files"
else
  echo "ok   keep-last-removes-a-link"
fi

# What a run writes must not be the data it reads.
cp "$tmp/corpus.txt" "$tmp/data.txt"
DATA=$tmp/data.txt
expect_error log-over-data "--log: '$tmp/data.txt' is the token file '$tmp/data.txt' that the run reads" \
  --log "$tmp/data.txt"
expect_error trace-over-data "--trace: '$tmp/./data.txt' is the token file '$tmp/data.txt' that the run reads" \
  --trace "$tmp/./data.txt"
unset DATA
cmp -s "$tmp/corpus.txt" "$tmp/data.txt" || fail "log-over-data: the data file was changed"
c=$(fresh outputs)
expect_error log-in-checkpoint "--log: '$c/rank-00000.bin' is in the checkpoint folder '$c'" --resume "$c" \
  --log "$c/rank-00000.bin"
expect_error trace-is-log "--trace: '$tmp/same.json' is --log's file too" --log "$tmp/same.json" --trace "$tmp/same.json"

echo "checkpoint_errors: $failed failed"
[ "$failed" -eq 0 ]

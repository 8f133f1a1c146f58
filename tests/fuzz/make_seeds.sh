#!/usr/bin/env bash
# Writes the fuzz targets' seeds into corpus/ (tests/fuzz/make_seeds.sh FSDP): files that
# fsdp itself writes (a checkpoint, safetensors and config.json exports, a token file,
# a memory snapshot) of a tiny model, and small hand-made ones (tokenizers of both
# styles, llm.c headers of both kinds). The regression inputs beside them in corpus/
# are the fuzzers' findings, kept as they were found.
set -euo pipefail
fsdp=$(realpath "${1:?usage: make_seeds.sh FSDP}")
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p "$corpus"/{safetensors,safetensors_index,hf_config,checkpoint,token_file,tokenizer,text_encode,memory_snapshot,documents,trace,train_log}

# Tokenizers of both styles, and llm.c's tokenizer.bin and token files, by hand.
python3 - "$here/../tokenizer_files.py" "$corpus" <<'PY'
import importlib.util, json, struct, sys
spec = importlib.util.spec_from_file_location("tf", sys.argv[1])
tf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tf)
corpus = sys.argv[2]
ids = tf.with_merges(tf.byte_ids(range(256)))
gpt2 = tf.tokenizer(ids, {"<|endoftext|>": len(ids)}, tf.GPT2_PRE, tf.MERGES)
llama3 = tf.tokenizer(ids, {"<|begin_of_text|>": len(ids), "<|end_of_text|>": len(ids) + 1}, tf.LLAMA3_PRE, tf.MERGES)
llama3["model"]["merges"] = [[tf.level(a), tf.level(b)] for a, b in tf.MERGES]  # tokenizers 0.20's pairs
for name, tok in (("gpt2-style.json", gpt2), ("llama3-style.json", llama3)):
    with open(f"{corpus}/tokenizer/{name}", "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
tokens = [b"a", b"b", b"ab", b" the", b"\n", b"<|endoftext|>"]
header = struct.pack("<256I", *([20240328, 2, len(tokens), len(tokens) - 1] + [0] * 252))
open(f"{corpus}/tokenizer/llmc-tokenizer.bin", "wb").write(header + b"".join(bytes([len(t)]) + t for t in tokens))
def llmc(magic, version, ids, fmt):
    return struct.pack("<256i", *([magic, version, len(ids)] + [0] * 253)) + struct.pack(f"<{len(ids)}{fmt}", *ids)
open(f"{corpus}/token_file/llmc-gpt2.bin", "wb").write(llmc(20240520, 1, [50256, 15496, 995, 0, 1], "H"))
open(f"{corpus}/token_file/llmc-llama3.bin", "wb").write(llmc(20240801, 7, [128000, 9906, 1917, 70000, 0], "I"))
open(f"{corpus}/token_file/nanogpt.bin", "wb").write(struct.pack("<6H", 1, 2, 65535, 3, 0, 50256))
texts = [b"Hello world! It's 2024.\r\n\tand   spaces  \n", "caf\u00e9 \u4e2d\u6587 \U0001F600 e\u0301".encode(),
         b"<|endoftext|>the<|begin_of_text|> in\n\n\n", b"\xff\xfe\xc0\x80 \xed\xa0\x80 \x00 12345678 ''s 'LL"]
for i, t in enumerate(texts):
    open(f"{corpus}/text_encode/text-{i}", "wb").write(bytes([i % 2]) + t)
# fsdp tokenize's inputs: JSON Lines as FineWeb's (other members, escapes, a blank line,
# CRLF, no last newline), the same gzip'd in two members, paragraphs of text.
import gzip
jsonl = ('{"text": "Posted by matt\\nStraight from...", "id": "<urn:uuid:d853>", "language_score": 0.9}\n'
         '\n{"id": 2, "text": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\u0000 tab\\t"}\r\n{"text": ""}\n'
         '{"text": "last, no newline"}').encode()
open(f"{corpus}/documents/fineweb.jsonl", "wb").write(jsonl)
open(f"{corpus}/documents/two-members.jsonl.gz", "wb").write(gzip.compress(jsonl[:90], mtime=0) +
                                                              gzip.compress(jsonl[90:], mtime=0))
open(f"{corpus}/documents/paragraphs.txt", "wb").write(b"First one.\n\nSecond\r\n\n\n\nthird\n\n")
def safetensors(tensors, metadata):
    header, data = {"__metadata__": metadata}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data
open(f"{corpus}/safetensors/f16-and-others.safetensors", "wb").write(safetensors([
    ("h", "F16", [2, 2], struct.pack("<4e", 1.0, -2.5, 65504.0, 6e-8)),
    ("ids", "I64", [3], struct.pack("<3q", 1, 2, 3)),
    ("mask", "BOOL", [2], b"\x01\x00"),
    ("empty", "F32", [0, 4], b""),
    ("scalar", "F32", [], struct.pack("<f", 3.5))], {"format": "pt"}))
# The files the safetensors_index target writes beside its input: "a" in the first, "b" and "c" in the second.
index = {"metadata": {"total_size": 34}, "weight_map": {"a": "model-00001-of-00002.safetensors",
         "b": "model-00002-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}}
open(f"{corpus}/safetensors_index/two-files.json", "w").write(json.dumps(index, indent=2))
PY

# A tiny GPT-2 and a tiny Llama 3 trained a step by fsdp: a checkpoint (the checkpoint
# target's model), its memory snapshot, its export, and a token file fsdp tokenize wrote;
# and the GPT-2's traces and logs on one rank and on two.
printf 'the cat sat on the mat; in the hat there is a cat.\n%.0s' 1 2 3 4 > text.txt
"$fsdp" tokenize --tokenizer "$corpus/tokenizer/gpt2-style.json" --output tokens.bin text.txt > /dev/null 2>&1
cp tokens.bin "$corpus/token_file/fsdp-tokenize.bin"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(i // 2 % 8 * (1 - i % 2) for i in range(256)))' > ids.bin
gpt2=(--model gpt2-tiny --n-layer 1 --n-head 1 --n-embd 4 --vocab-size 8 --block-size 4)
# The checkpoint target's flags (its struct train_config must agree): these, --warmup 0 and
# the defaults.
"$fsdp" train "${gpt2[@]}" --data ids.bin --data-format nanogpt --seq-len 4 --batch-size 1 --warmup 0 --steps 1 \
  --checkpoint-dir ckpt \
  --memory-snapshot snapshot.json > /dev/null
step=ckpt/step-00000001
{ cat $step/metadata.json; printf '\0'; cat $step/rank-00000.bin; } > "$corpus/checkpoint/gpt2-tiny"
# A finished run given more steps: its schedule re-anchored (decay_from 1, decay_progress 0.5).
for steps in 2 5; do
  "$fsdp" train "${gpt2[@]}" --data ids.bin --data-format nanogpt --seq-len 4 --batch-size 1 --warmup 0 \
    --steps $steps --checkpoint-dir extended --resume auto > /dev/null
done
step=extended/step-00000005
{ cat $step/metadata.json; printf '\0'; cat $step/rank-00000.bin; } > "$corpus/checkpoint/gpt2-tiny-extended"
cp snapshot.json "$corpus/memory_snapshot/gpt2-tiny.json"
"$fsdp" export --checkpoint $step --output gpt2 > /dev/null
"$fsdp" export --checkpoint $step --dtype bf16 --output gpt2-bf16 > /dev/null
llama=(--model llama3-debug --n-layer 1 --n-head 2 --n-kv-head 1 --n-embd 8 --ffn-hidden 8 --vocab-size 16
       --block-size 4)
"$fsdp" export "${llama[@]}" --dtype bf16 --max-shard-size 200 --output llama > /dev/null
cp gpt2/model.safetensors "$corpus/safetensors/gpt2-f32.safetensors"
cp gpt2-bf16/model.safetensors "$corpus/safetensors/gpt2-bf16.safetensors"
cp llama/model-00001-of-*.safetensors "$corpus/safetensors/llama-bf16.safetensors"
cp gpt2/config.json "$corpus/hf_config/gpt2.json"
cp llama/config.json "$corpus/hf_config/llama.json"
cp llama/model.safetensors.index.json "$corpus/safetensors_index/llama-export.json"

# The GPT-2's traces (fsdp traceviz's input) and logs (fsdp plan --calibrate's, which fits
# the median of the steps past the first two: enough of them that a step slowed by a busy
# machine does not move it): on one rank, two steps traced and seven logged; on two ranks,
# one step traced and five logged. Two threads a rank, as the train_log target's machine.
OMP_NUM_THREADS=2 "$fsdp" train "${gpt2[@]}" --data ids.bin --data-format nanogpt --seq-len 4 --batch-size 1 \
  --steps 7 --trace-steps 2:3 --trace trace-1.json --log "$corpus/train_log/gpt2-tiny.jsonl" > /dev/null
mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=2 "$fsdp" train "${gpt2[@]}" --data ids.bin \
  --data-format nanogpt --seq-len 4 --batch-size 1 --steps 5 --trace-steps 2:2 --trace trace-2.json \
  --log "$corpus/train_log/gpt2-tiny-2-ranks.jsonl" > /dev/null
# A trace holds an event a line, kept as written but for its bulk, so that a seed is a few
# KB: the counters, which traceviz passes over (the first of each name stays), and the
# kernels but a rank's first 6.
python3 - trace-1.json trace-2.json "$corpus/trace" <<'PY'
import json, sys
for src, name in zip(sys.argv[1:3], ("gpt2-tiny.json", "gpt2-tiny-2-ranks.json")):
    lines = open(src).read().rstrip("\n").split("\n")
    events = [line.rstrip(",") for line in lines[1:-1]]
    kernels = {(e["pid"], e["tid"]) for e in map(json.loads, events)
               if e["name"] == "thread_name" and e["args"]["name"].endswith(" kernels")}
    kept, counters, spans = [], set(), {}
    for line in events:
        e = json.loads(line)
        if e["ph"] == "C":
            if e["name"] in counters: continue
            counters.add(e["name"])
        if e["ph"] == "X" and (e["pid"], e["tid"]) in kernels:
            spans[e["pid"]] = spans.get(e["pid"], 0) + 1
            if spans[e["pid"]] > 6: continue
        kept.append(line)
    open(f"{sys.argv[3]}/{name}", "w").write(lines[0] + "\n" + ",\n".join(kept) + "\n" + lines[-1] + "\n")
PY

"""fsdp tokenize against Hugging Face tokenizers on the same text and tokenizer.json, in one
run (bench/tokenize.sh sets it up). Trains a GPT-2 style and a Llama 3 style byte-level
BPE on the small text with HF's trainer, checks that fsdp's ids are HF's on it, then times
on each text: HF on one core (RAYON_NUM_THREADS=1; encode_batch over the lines, its
fastest way here, and encode of the whole text), HF on every core (encode_batch), and
`fsdp tokenize` on 1 thread and on every core (the whole command: reading the
tokenizer.json and the text, writing the token file). Prints a Markdown table of MB/s
(10^6 bytes of text a second), the best of --repeats runs.

With a JSON Lines data set (JSONL), a second table: what llm.c's fineweb.py does with it.
HF, on 1 thread and on every core (RAYON_NUM_THREADS), reads the lines, takes each
json.loads(line)["text"], and encodes the documents with encode_batch, 1024 at a time;
its figure is encode_batch's time alone (parsing and collecting the ids not counted:
HF's best case), beside its whole script's. fsdp's is the whole command, `fsdp tokenize
--jsonl-key text` into shards of 10M tokens on as many threads. MB/s of the documents'
text and tokens a second, one run each, and MB per CPU second (user and system time of
all threads: what a machine busy with other work still shows); the ids of both are
checked equal (the document token before each document).

Usage: tokenize_bench.py FSDP SMALL_TEXT LARGE_TEXT WORKDIR VOCAB REPEATS [JSONL]
"""
import array
import hashlib
import json
import os
import resource
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from hf_bpe import train_bpe  # noqa: E402

FSDP, SMALL, LARGE, WORK, VOCAB, REPEATS = sys.argv[1:7]
JSONL = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] else None
VOCAB, REPEATS = int(VOCAB), int(REPEATS)
STYLES = (("GPT-2", "gpt2", ["<|endoftext|>"]), ("Llama 3", "llama3", ["<|begin_of_text|>", "<|end_of_text|>"]))
CORES = len(os.sched_getaffinity(0))


def fsdp_run(tokenizer, path, threads):
    out = os.path.join(WORK, "out.bin")
    subprocess.run([FSDP, "tokenize", "--tokenizer", tokenizer, "-o", out, "--threads", str(threads), path],
                   check=True, stderr=subprocess.DEVNULL)
    return out


def fsdp_ids(tokenizer, path, threads):
    data = open(fsdp_run(tokenizer, path, threads), "rb").read()
    magic, _, count = struct.unpack_from("<3i", data)
    return list(struct.unpack_from(f"<{count}{'H' if magic == 20240520 else 'I'}", data, 1024))


def best(fn):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def hf_in_child(tokenizer, path, how, threads):
    """HF timed in a process of its own: RAYON_NUM_THREADS is read once per process."""
    code = f"""
import time, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file({tokenizer!r})
text = open({path!r}, encoding="utf-8", newline="").read()
lines = text.splitlines(keepends=True)
run = (lambda: tok.encode_batch(lines, add_special_tokens=False)) if {how!r} == "batch" else \\
      (lambda: tok.encode(text, add_special_tokens=False))
times = []
for _ in range({REPEATS}):
    start = time.perf_counter(); run(); times.append(time.perf_counter() - start)
print(min(times))
"""
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true")
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                text=True).stdout)


def hf_jsonl(tokenizer, document_token, threads):
    """HF's encode_batch over the JSONL's documents in a process of its own: its times, the
    text's bytes, its token count (document tokens included) and the ids' SHA-256 (uint32)."""
    code = f"""
import array, hashlib, json, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file({tokenizer!r})
doc = tok.token_to_id({document_token!r})
start = time.perf_counter()
texts = [json.loads(line)["text"] for line in open({JSONL!r}, encoding="utf-8") if line.strip()]
ids, encoding, cpu = array.array("I"), 0.0, 0.0
for i in range(0, len(texts), 1024):
    t, c = time.perf_counter(), time.process_time()
    batch = tok.encode_batch(texts[i:i + 1024], add_special_tokens=False)
    encoding += time.perf_counter() - t
    cpu += time.process_time() - c
    for e in batch:
        ids.append(doc)
        ids.extend(e.ids)
whole = time.perf_counter() - start
print(json.dumps({{"encode": encoding, "cpu": cpu, "whole": whole, "bytes": sum(len(t.encode()) for t in texts),
                  "tokens": len(ids), "sha": hashlib.sha256(ids.tobytes()).hexdigest()}}))
"""
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true")
    return json.loads(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                     text=True).stdout)


def fsdp_jsonl(tokenizer, threads):
    """fsdp tokenize of the JSONL into shards: its time, token count and ids' SHA-256 (uint32)."""
    folder = os.path.join(WORK, f"shards{threads}")
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([FSDP, "tokenize", "--tokenizer", tokenizer, "-o", os.path.join(folder, "fw"), "--jsonl-key",
                    "text", "--shard-tokens", "10M", "--threads", str(threads), JSONL], check=True,
                   stderr=subprocess.DEVNULL)
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    ids = array.array("I")
    for name in sorted(os.listdir(folder), key=lambda n: int(n[-10:-4])):
        data = open(os.path.join(folder, name), "rb").read()
        magic, _, count = struct.unpack_from("<3i", data)
        shard = array.array("H" if magic == 20240520 else "I")
        shard.frombytes(data[1024:])
        ids.extend(shard if shard.typecode == "I" else array.array("I", shard))
        os.remove(os.path.join(folder, name))
    return {"whole": seconds, "cpu": cpu, "tokens": len(ids), "sha": hashlib.sha256(ids.tobytes()).hexdigest()}


def jsonl_table(tokenizers):
    print(f"\nJSONL data set: {os.path.getsize(JSONL) / 1e6:.0f} MB of JSON Lines\n")
    print("| tokenizer (vocab) | threads | MB of text | tokens | HF encode_batch: MB/s | M tokens/s "
          "| MB per CPU s | HF whole script: MB/s | fsdp tokenize: MB/s | M tokens/s | MB per CPU s "
          "| fsdp / HF encode_batch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, path, document_token in tokenizers:
        for threads in sorted({1, CORES}):
            hf = hf_jsonl(path, document_token, threads)
            ours = fsdp_jsonl(path, threads)
            if (ours["tokens"], ours["sha"]) != (hf["tokens"], hf["sha"]):
                sys.exit(f"{name}: fsdp's ids of the JSONL are not Hugging Face's ({ours['tokens']} and "
                         f"{hf['tokens']} tokens)")
            mb, tokens = hf["bytes"] / 1e6, hf["tokens"]
            print(f"| {name} | {threads} | {mb:.0f} | {tokens / 1e6:.1f}M | {mb / hf['encode']:.2f} "
                  f"| {tokens / 1e6 / hf['encode']:.2f} | {mb / hf['cpu']:.2f} | {mb / hf['whole']:.2f} "
                  f"| {mb / ours['whole']:.2f} | {tokens / 1e6 / ours['whole']:.2f} | {mb / ours['cpu']:.2f} "
                  f"| {hf['encode'] / ours['whole']:.1f}x |", flush=True)


def main():
    small_text = open(SMALL, encoding="utf-8", newline="").read()
    rows, tokenizers = [], []
    for style, kind, specials in STYLES:
        tok = train_bpe(kind, [small_text], VOCAB, specials)
        path = os.path.join(WORK, f"{style.replace(' ', '')}.json")
        tok.save(path)
        doc = tok.token_to_id(specials[0])
        want = [doc] + tok.encode(small_text, add_special_tokens=False).ids
        if fsdp_ids(path, SMALL, CORES) != want:
            sys.exit(f"{style}: fsdp's ids are not Hugging Face's on {SMALL}")
        tokenizers.append((f"{style} ({tok.get_vocab_size()})", path, specials[0]))
        for text_path in (SMALL, LARGE):
            mb = os.path.getsize(text_path) / 1e6
            hf_batch = hf_in_child(path, text_path, "batch", 1)
            hf_whole = hf_in_child(path, text_path, "whole", 1)
            hf_all = hf_in_child(path, text_path, "batch", CORES)
            ours_1 = best(lambda: fsdp_run(path, text_path, 1))
            ours_all = best(lambda: fsdp_run(path, text_path, CORES))
            rows.append((f"{style} ({tok.get_vocab_size()})", os.path.basename(text_path), mb, mb / hf_batch, mb / hf_whole, mb / hf_all, mb / ours_1,
                         mb / ours_all, hf_batch / ours_1))
    print(f"| tokenizer (vocab) | text | MB | HF 1 core, encode_batch (lines) | HF 1 core, encode (whole) "
          f"| HF {CORES} cores, encode_batch | fsdp 1 thread | fsdp {CORES} threads | fsdp 1 thread / HF 1 core |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f} "
              f"| {r[8]:.1f}x |")
    if JSONL:
        jsonl_table(tokenizers)


main()

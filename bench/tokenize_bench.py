"""fsdp tokenize against Hugging Face tokenizers on the same text and tokenizer.json, in one
run (bench/tokenize.sh sets it up). Trains a GPT-2 style and a Llama 3 style byte-level
BPE on the small text with HF's trainer, checks that fsdp's ids are HF's on it, then times
on each text: HF on one core (RAYON_NUM_THREADS=1; encode_batch over the lines, its
fastest way here, and encode of the whole text), HF on every core (encode_batch), and
`fsdp tokenize` on 1 thread and on every core (the whole command: reading the
tokenizer.json and the text, writing the token file). Prints a Markdown table of MB/s
(10^6 bytes of text a second), the best of --repeats runs.

Usage: tokenize_bench.py FSDP SMALL_TEXT LARGE_TEXT WORKDIR VOCAB REPEATS
"""
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from hf_bpe import train_bpe  # noqa: E402

FSDP, SMALL, LARGE, WORK, VOCAB, REPEATS = sys.argv[1:7]
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


def main():
    small_text = open(SMALL, encoding="utf-8", newline="").read()
    rows = []
    for style, kind, specials in STYLES:
        tok = train_bpe(kind, [small_text], VOCAB, specials)
        path = os.path.join(WORK, f"{style.replace(' ', '')}.json")
        tok.save(path)
        doc = tok.token_to_id(specials[0])
        want = [doc] + tok.encode(small_text, add_special_tokens=False).ids
        if fsdp_ids(path, SMALL, CORES) != want:
            sys.exit(f"{style}: fsdp's ids are not Hugging Face's on {SMALL}")
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


main()

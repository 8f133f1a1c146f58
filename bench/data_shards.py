#!/usr/bin/env python3
"""Streaming llm.c shards against one file read whole (bench/data_shards.sh runs it).

make DIR: writes, in DIR,
  one_mb.bin           a 1 MB llm.c GPT-2 file (header + 523776 uint16 ids: tests/data/shakespeare.txt's
                       bytes, repeated), the "small file" every figure is compared with;
  fineweb/             fineweb_train_000001.bin .. 000100.bin: 100M tokens each (200 MB + the 1 KiB header,
                       20 GB in all), sparse files whose ids are all 0 (no disk blocks but the header's),
                       then fineweb_train_000101.bin .. 000103.bin, real 2M-token shards of shakespeare bytes,
                       and fineweb_val_000000.bin (1M real tokens): the layout of llm.c's FineWeb-10B;
  three_gb.bin         (with --three-gb) one sparse 3.0 GB llm.c file: what `--data` read whole before.
run LOG RSS_FILE SKIP COMMAND...: runs one `fsdp train` job, prints one JSON line: the wall time from launch to the first step
line (start-up), each rank's maximum RSS (GNU time's %M around each rank), the median tokens/s of
the steps after the first --skip and their 90th percentile (the fastest tenth: what the step costs when
other jobs leave the cores alone), the median step_ms and data_ms (rank 0's time reading its windows),
and the job's own "data:" line.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

MAGIC, VERSION = 20240520, 1
HEADER_BYTES = 1024


def header(n_tokens):
    ints = [MAGIC, VERSION, n_tokens] + [0] * 253
    return b"".join(i.to_bytes(4, "little") for i in ints)


def real_tokens(text, n):
    reps = n // len(text) + 1
    body = (text * reps)[:n]
    return b"".join(bytes((c, 0)) for c in body)  # uint16 little-endian, ids < 256


def write_real(path, text, n):
    with open(path, "wb") as f:
        f.write(header(n))
        f.write(real_tokens(text, n))


def write_sparse(path, n):
    with open(path, "wb") as f:
        f.write(header(n))
        f.truncate(HEADER_BYTES + 2 * n)


def make(directory, source, three_gb):
    text = open(source, "rb").read()
    os.makedirs(os.path.join(directory, "fineweb"), exist_ok=True)
    write_real(os.path.join(directory, "one_mb.bin"), text, (1 << 20) // 2 - HEADER_BYTES // 2)
    for i in range(1, 101):
        write_sparse(os.path.join(directory, "fineweb", f"fineweb_train_{i:06d}.bin"), 100_000_000)
    for i in range(101, 104):
        write_real(os.path.join(directory, "fineweb", f"fineweb_train_{i:06d}.bin"), text, 2_000_000)
    write_real(os.path.join(directory, "fineweb", "fineweb_val_000000.bin"), text, 1_000_000)
    if three_gb:
        write_sparse(os.path.join(directory, "three_gb.bin"), 1_500_000_000)


def run(log, rss_file, skip, command):
    began = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first_step, data_line, lines = None, None, []
    for line in proc.stdout:
        lines.append(line)
        if first_step is None and re.match(r"(\[\d+\] )?step +1/", line):
            first_step = time.monotonic() - began
        if data_line is None and line.startswith("data:"):
            data_line = line.strip()
    if proc.wait() != 0:
        sys.stdout.write("".join(lines[-30:]))
        sys.exit(f"FAIL: {' '.join(command)} exited {proc.returncode}")
    rss = [int(l) for l in open(rss_file)]  # GNU time's %M of each rank, appended as it ends
    steps = [json.loads(l) for l in open(log)][skip:]
    rates = sorted(s["tokens_per_s"] for s in steps)
    result = {"startup_s": first_step, "rss_kb": sorted(rss), "tokens_per_s": statistics.median(rates),
              "tokens_per_s_p90": rates[int(0.9 * (len(rates) - 1))],
              "step_ms": statistics.median(s["step_ms"] for s in steps), "steps": len(steps) + skip,
              "step_ms_all": [round(s["step_ms"], 3) for s in steps], "data": data_line}
    if "data_ms" in steps[0]:  # builds from before streaming do not log it
        result["data_ms"] = statistics.median(s["data_ms"] for s in steps)
    print(json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], "--three-gb" in sys.argv)
    elif sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])
    else:
        sys.exit(__doc__)

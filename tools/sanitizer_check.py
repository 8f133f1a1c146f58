"""Reads what compute-sanitizer printed (memcheck, racecheck, synccheck or initcheck; one
process's output or several, as under mpirun) and says what it found, in one line:
  clean                          every process's summary says 0 (known reports left out)
  N errors                       the summary's errors less the known reports
  N hazards (E errors, W warnings)   racecheck's summary
  no summary from P of N processes   a process ended, or was killed, before its summary
Exits 0 only when clean.

One report is known and left out: NCCL's ncclInitKernelsForDevice asks
cudaFuncGetAttributes (then cudaGetLastError) about each of its kernels, and for the
kernels built for other GPUs the answer is error 209, "no kernel image is available";
NCCL expects it and goes on. compute-sanitizer can only silence API errors as a whole
(--report-api-errors no), which would hide ours too, so this leaves out that report alone:
error 209 whose first host frame is ncclInitKernelsForDevice. Reports not printed (past
--print-limit) cannot be told apart and count as errors.

racecheck's hazards are left out only when every race it printed lies inside cuBLASLt's
own Hopper kernels (named nvjet_...), whose asynchronous copies (TMA, mbarriers) racecheck
does not follow: on an H100 it reported 17 in a GPT-2 bf16 step, all in those kernels. A
race that names any other kernel, or hazards with none printed, count as they are.

Usage: sanitizer_check.py LOG [--processes N]"""
import argparse
import re
import sys

ERRORS = re.compile(r"^=+ ERROR SUMMARY: (\d+) errors?")
HAZARDS = re.compile(r"^=+ RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
KNOWN = "(error 209)"
KNOWN_FRAME = "ncclInitKernelsForDevice"
# "Error: Race reported between Read access at KERNEL+0xb00" / "    and Write access at KERNEL+0x2df0 [...]"
RACE_ACCESS = re.compile(r"(?:Race reported between|^=+\s+and) \w+ access at (.+)\+0x[0-9a-fA-F]+")
CUBLASLT_KERNEL = "nvjet_"


def races_in_cublaslt_only(lines):
    """True when racecheck printed races and every one of their accesses is in cuBLASLt's kernels."""
    kernels = [m.group(1) for m in map(RACE_ACCESS.search, lines) if m]
    return bool(kernels) and all(k.startswith(CUBLASLT_KERNEL) for k in kernels)


def known_reports(lines):
    """Reports of error 209 whose first host frame is NCCL's kernel probe."""
    count = 0
    for i, line in enumerate(lines):
        if "Program hit" not in line or KNOWN not in line:
            continue
        frame = next((l for l in lines[i + 1:i + 4] if "Host Frame:" in l), "")
        count += KNOWN_FRAME in frame
    return count


def verdict(lines, processes):
    errors = hazards = race_errors = warnings = summaries = 0
    for line in lines:
        m = ERRORS.match(line)
        if m:
            errors += int(m.group(1))
            summaries += 1
        m = HAZARDS.match(line)
        if m:
            hazards += int(m.group(1))
            race_errors += int(m.group(2))
            warnings += int(m.group(3))
            summaries += 1
    known = known_reports(lines)
    if summaries < processes:
        return False, f"no summary from {processes - summaries} of {processes} processes"
    if hazards and races_in_cublaslt_only(lines):
        return True, f"clean ({hazards} hazards inside cuBLASLt's kernels left out)"
    if hazards:
        return False, f"{hazards} hazards ({race_errors} errors, {warnings} warnings)"
    errors -= known
    left_out = f" ({known} known NCCL reports left out)" if known else ""
    if errors > 0:
        return False, f"{errors} errors{left_out}"
    return True, "clean" + left_out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    with open(args.log, errors="replace") as f:
        lines = f.read().splitlines()
    ok, text = verdict(lines, args.processes)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/bin/sh
# expect_gpu_job_failure.sh STATUS PATTERN COMMAND...: expect_job_failure.sh for a
# program that needs a GPU: passes when COMMAND exits with exactly STATUS within 60 s
# and its output contains PATTERN; exits 77 (ctest: skipped) when COMMAND does, which is
# how the GPU tests say that there is no GPU to run on.
expected=$1
pattern=$2
shift 2
output=$(timeout -k 10 60 "$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -eq 77 ]; then exit 77; fi
if [ $status -eq 124 ] || [ $status -eq 137 ]; then echo "FAIL: the job was still running after 60 s"; exit 1; fi
if [ $status -ne "$expected" ]; then echo "FAIL: the job exited with status $status, not $expected"; exit 1; fi
if ! printf '%s\n' "$output" | grep -qF -- "$pattern"; then
  echo "FAIL: the output lacks: $pattern"; exit 1
fi
echo "PASS: the job exited with status $status and said: $pattern"

#!/bin/sh
# expect_job_failure.sh PATTERN COMMAND...: passes when COMMAND exits non-zero within
# 60 s and its output contains PATTERN. A job left hanging, or one that succeeds, fails
# the test (plain WILL_FAIL would count a crash of any kind as a pass).
pattern=$1
shift
output=$(timeout -k 10 60 "$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -eq 0 ]; then echo "FAIL: the job exited 0; a failure was expected"; exit 1; fi
if [ $status -eq 124 ] || [ $status -eq 137 ]; then
  echo "FAIL: the job was still running after 60 s: a rank was left waiting"; exit 1
fi
if ! printf '%s\n' "$output" | grep -qF -- "$pattern"; then
  echo "FAIL: the output lacks: $pattern"; exit 1
fi
echo "PASS: the job exited with status $status and said: $pattern"

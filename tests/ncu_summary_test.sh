#!/bin/sh
# tools/ncu_summary.py, which reduces a GPU session's `ncu --print-summary per-kernel` output,
# on output written here in the format of the 2026-11-26 H100 session's (Nsight Compute with
# CUDA 13.0): each kernel's time a step (invocations x average, over --steps), its share of
# the kept total, the initialisation's kernels left out, units us and ms, one kernel's
# blocks of two grid shapes summed; an output without a summary is an error.
# Usage: ncu_summary_test.sh PYTHON SOURCE_DIR
PYTHON=${1:?usage: ncu_summary_test.sh PYTHON SOURCE_DIR}
SRC=${2:?usage: ncu_summary_test.sh PYTHON SOURCE_DIR}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failed=0

# block NAME GRID INVOCATIONS UNIT AVERAGE: one kernel's summary block.
block() {
  cat <<EOF
  $1 $2x(128, 1, 1), Device 0, CC 9.0, Invocations $3
    Section: Command line profiler metrics
    ---------------------- ----------- ------- ------- -------
    Metric Name            Metric Unit Minimum Maximum Average
    ---------------------- ----------- ------- ------- -------
    gpu__time_duration.sum          $4  1.00  900.00  $5
    ---------------------- ----------- ------- ------- -------

EOF
}
{
  echo "==PROF== Disconnected from process 2570"
  echo "[2570] fsdp@127.0.0.1"
  block "init_normal_kernel(float *, unsigned long, float)" "(4224, 1, 1)" 37 us 37.80
  block "init_trunc_normal_kernel(float *, unsigned long)" "(12, 1, 1)" 5 ms 1.00
  block "void flash_forward_tc_kernel<__nv_bfloat16, 64>(gpu_buf, float *)" "(16, 12, 8)" 24 us 171.07
  block "adamw_kernel(float *, const float *)" "(3, 1, 1)" 148 us 10.00
  block "adamw_kernel(float *, const float *)" "(9, 1, 1)" 24 us 1,000.00
  block "nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN" "(8, 15, 1)" 28 ms 0.16
} >"$tmp/ncu.txt"

"$PYTHON" "$SRC/tools/ncu_summary.py" "$tmp/ncu.txt" --steps 2 >"$tmp/out" 2>&1 || { cat "$tmp/out"; echo "FAIL: exit $?"; failed=1; }
cat "$tmp/out"
# kept: flash 24 x 171.07 = 4105.68 us, adamw 148 x 10 + 24 x 1000 = 25480 us, nvjet 28 x 160 = 4480 us;
# 34065.68 us in all, 17.03 ms a step; left out: 37 x 37.8 + 5 x 1000 = 6398.6 us.
expect() {
  grep -qF -- "$1" "$tmp/out" || { echo "FAIL: no line with: $1"; failed=1; }
}
expect "17.0 ms of kernels a step (2 steps; 112 launches a step; 6.4 ms left out by --exclude)"
expect "| 12.74 | 74.8% | 86 | 148.1 | \`adamw_kernel(float *, const float *)\` |"
expect "| 2.24 | 13.2% | 14 | 160.0 | \`nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN\` |"
expect "| 2.05 | 12.1% | 12 | 171.1 | \`void flash_forward_tc_kernel<__nv_bfloat16, 64>(gpu_buf, float *)\` |"
first=$(grep -m1 '^| [0-9]' "$tmp/out")
case $first in *adamw*) ;; *) echo "FAIL: the largest kernel is not first: $first"; failed=1 ;; esac

echo "no summary here" >"$tmp/empty.txt"
if "$PYTHON" "$SRC/tools/ncu_summary.py" "$tmp/empty.txt" >"$tmp/err" 2>&1; then
  echo "FAIL: an output without a summary was accepted"; failed=1
fi
grep -q "no per-kernel summary found in $tmp/empty.txt" "$tmp/err" || { echo "FAIL: the error does not name the file:"; cat "$tmp/err"; failed=1; }
[ $failed = 0 ] && echo "ncu_summary: ok"
exit $failed

#!/bin/sh
# tools/sanitizer_check.py, which reads the GPU sessions' compute-sanitizer logs, on logs
# written here in the format of the first session's (CUDA 13.0): NCCL's error 209 in
# ncclInitKernelsForDevice alone is left out; the same error from elsewhere, any other
# report, reports past the print limit, racecheck hazards and a process that never printed
# its summary are findings.
# Usage: sanitizer_check_test.sh PYTHON SOURCE_DIR
PYTHON=${1:?usage: sanitizer_check_test.sh PYTHON SOURCE_DIR}
SRC=${2:?usage: sanitizer_check_test.sh PYTHON SOURCE_DIR}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failed=0

S="========="
# report API FRAME: one report of error 209, as memcheck prints it.
report() {
  cat <<EOF
$S Program hit cudaErrorNoKernelImageForDevice (error 209) due to "no kernel image is available for execution on the device" on CUDA API call to $1.
$S     Saved host backtrace up to driver entry point at error
$S         Host Frame: $2
$S         Host Frame: ncclCommInitRankFunc(ncclAsyncJob*) in init.cc:1534 [0x85765] in libnccl.so.2
$S         Host Frame: _start [0x11584] in fsdp
$S 
EOF
}
NCCL="ncclInitKernelsForDevice(int, int, unsigned long*) in enqueue.cc:52 [0x6d9d3] in libnccl.so.2"
OURS="gpu_launch [0x5fe8f] in fsdp"
INVALID="$S Invalid __global__ read of size 4 bytes
$S     at add_kernel(float *, const float *, long)+0x70 in add.cu:12
$S     by thread (31,0,0) in block (3,0,0)
$S     Address 0x7f0000000400 is out of bounds
$S "

{ echo "$S COMPUTE-SANITIZER"; report cudaFuncGetAttributes "$NCCL"; report cudaGetLastError "$NCCL"
  echo "step     1/2 | loss 5.5470"; echo "$S ERROR SUMMARY: 2 errors"; } > "$tmp/nccl.log"
{ report cudaFuncGetAttributes "$NCCL"; echo "$INVALID"; echo "$S ERROR SUMMARY: 2 errors"; } > "$tmp/invalid.log"
{ report cudaFuncGetAttributes "$OURS"; echo "$S ERROR SUMMARY: 1 error"; } > "$tmp/ours.log"
{ report cudaFuncGetAttributes "$NCCL"; echo "$S ERROR SUMMARY: 5 errors"; } > "$tmp/limit.log"
echo "$S RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)" > "$tmp/hazards.log"
echo "$S RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" > "$tmp/race.log"
# race KERNEL KERNEL: one racecheck report, as CUDA 13.0's prints it on an H100.
race() {
  echo "$S Error: Race reported between Read access at $1+0xb00"
  echo "$S     and Write access at $2+0x2df0 [384 hazards]"
  echo "$S "
}
{ race nvjet_sm90_tst_64x32_64x16_2x4_h_bz_bias_TNT nvjet_sm90_tst_64x32_64x16_2x4_h_bz_bias_TNT
  race nvjet_sm90_tst_192x192_64x3_2x1_v_badd_coopB_NTN nvjet_sm90_tst_192x192_64x3_2x1_v_badd_coopB_NTN
  echo "$S RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"; } > "$tmp/cublaslt.log"
{ race nvjet_sm90_tst_64x32_64x16_2x4_h_bz_bias_TNT nvjet_sm90_tst_64x32_64x16_2x4_h_bz_bias_TNT
  race "void flash_forward_tc_kernel<__nv_bfloat16, 64>(gpu_buf)" nvjet_sm90_tst_64x32_64x16_2x4_h_bz_bias_TNT
  echo "$S RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"; } > "$tmp/ours_race.log"
{ echo "$S COMPUTE-SANITIZER"; echo "step     1/2 | loss 5.5470"; } > "$tmp/cut.log"
{ echo "$S ERROR SUMMARY: 0 errors"; echo "$S ERROR SUMMARY: 0 errors"; } > "$tmp/two.log"

# expect LOG STATUS TEXT [ARGS...]: the checker exits STATUS and says TEXT.
expect() {
  log=$1 want=$2 text=$3
  shift 3
  got=$("$PYTHON" "$SRC/tools/sanitizer_check.py" "$tmp/$log.log" "$@")
  status=$?
  if [ "$status" -ne "$want" ] || [ "$got" != "$text" ]; then
    echo "FAIL $log $*: exit $status, '$got'; expected exit $want, '$text'"
    failed=1
  else
    echo "ok $log $*: $got"
  fi
}
expect nccl 0 "clean (2 known NCCL reports left out)"
expect invalid 1 "1 errors (1 known NCCL reports left out)"
expect ours 1 "1 errors"
expect limit 1 "4 errors (1 known NCCL reports left out)"
expect hazards 1 "3 hazards (1 errors, 2 warnings)"
expect race 0 "clean"
expect cublaslt 0 "clean (2 hazards inside cuBLASLt's kernels left out)"
expect ours_race 1 "2 hazards (2 errors, 0 warnings)"
expect cut 1 "no summary from 1 of 1 processes"
expect two 0 "clean" --processes 2
expect two 1 "no summary from 1 of 3 processes" --processes 3
exit $failed

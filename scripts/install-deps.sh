#!/usr/bin/env bash
# Installs what fsdp.c needs to build, run and test, from Debian's packages.
set -euo pipefail
packages=(build-essential cmake openmpi-bin libopenmpi-dev libdnnl-dev libcjson-dev
          libpcre2-dev # the tokenizer's pre-tokenizer patterns (Unicode classes, JIT)
          zlib1g-dev # fsdp tokenize's gzip inputs (.jsonl.gz)
          clang libclang-rt-14-dev libomp-dev # scripts/fuzz.sh: clang, libFuzzer and clang's OpenMP
          python3 python3-numpy python3-venv fortunes chromium # PyTorch: PyPI's (scripts/torch-venv.sh)
          iproute2 # ip and tc: the multi-node testbed (tests/testbed)
          slurmctld slurmd slurm-client munge # a Slurm that tests/slurm_test.sh starts on the machine
          qemu-user-static) # other CPUs emulated: tests/portable_binary_test.sh
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

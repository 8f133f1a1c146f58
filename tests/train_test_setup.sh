# Sourced by the tests that run `fsdp train`, called as SCRIPT path/to/fsdp PYTHON
# SOURCE_DIR MPIRUN...: sets FSDP, PYTHON and SRC, leaves the mpirun command in "$@",
# and makes a temporary directory $tmp, removed on exit, with a text corpus in
# $tmp/corpus.txt: 256 KiB of Shakespeare (tests/data/shakespeare.txt), the same bytes
# whatever else changes in the repository, so that the trajectories the tests compare
# are the same run after run.
set -eu
FSDP=$1 PYTHON=$2 SRC=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$SRC/tests/data/shakespeare.txt" "$tmp/corpus.txt"

# Sourced by the tests that run `fsdp train`, called as SCRIPT path/to/fsdp PYTHON
# SOURCE_DIR MPIRUN...: sets FSDP, PYTHON and SRC, leaves the mpirun command in "$@",
# and makes a temporary directory $tmp, removed on exit, with a text corpus of the
# sources in $tmp/corpus.txt.
set -eu
FSDP=$1 PYTHON=$2 SRC=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat "$SRC"/src/*/*.c "$SRC"/src/nn/cpu/*.c > "$tmp/corpus.txt"

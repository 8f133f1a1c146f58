#!/bin/sh
# `fsdp memviz` on snapshots written by memviz_snapshot.py: the SVG parses and names
# every category, and headless Chromium renders the HTML page offline, with a painted
# area for every category that holds bytes and the peak total that the Python replay
# computes. The same for a snapshot that `fsdp train` wrote on 2 ranks with bf16
# parameters, where every category holds bytes.
# Usage: memviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
# Exits 77 (ctest: skipped) when Chromium is not installed; scripts/install-deps.sh installs it.
FSDP=${1:?usage: memviz_test.sh path/to/fsdp PYTHON}
PYTHON=${2:?usage: memviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
SRC=${3:?usage: memviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
shift 3
HELPER=$(dirname "$0")/memviz_snapshot.py
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failed=0

cat "$SRC"/src/*/*.c > "$tmp/corpus.txt"
timeout 300 "$@" -np 2 "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 \
  --batch-size 4 --steps 3 --data "$tmp/corpus.txt" --param-dtype bf16 --reduce-dtype bf16 --grad-accum 2 \
  --memory-snapshot "$tmp/trained.json" >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; exit 1; }
"$PYTHON" - "$tmp/trained.json" <<'PY' || exit 1
import json, sys
snapshot = json.load(open(sys.argv[1]))
for r in snapshot["ranks"]:
    held = {c for c, b in r["start"].items() if b} | {e["category"] for e in r["events"]}
    missing = set(snapshot["categories"]) - held
    assert not missing, f"rank {r['rank']}: no bytes ever in {missing}"
PY

fail() {
  failed=$((failed + 1))
  echo "FAIL $*"
}

limit=""
if command -v timeout >/dev/null 2>&1; then limit="timeout 120"; fi

# all: every category holds bytes at some time; no-comm: comm never does, so it has no
# area; large: 100k events on one rank, which must still give a page of modest size.
variants="all no-comm large"
for v in $variants; do
  [ "$v" = trained ] || "$PYTHON" "$HELPER" write "$tmp/$v.json" "$v" || exit 2
  for kind in html svg; do
    if ! "$FSDP" memviz "$tmp/$v.json" -o "$tmp/$v.$kind" >"$tmp/memviz.log" 2>&1; then
      fail "$v.$kind: fsdp memviz failed: $(head -n 3 "$tmp/memviz.log")"
    elif [ -e "$tmp/$v.$kind.tmp" ]; then
      fail "$v.$kind: the temporary file was left behind"
    fi
  done
  "$PYTHON" "$HELPER" check-svg "$tmp/$v.svg" "$tmp/$v.json" || fail "$v.svg: see above"
done
size=$(wc -c <"$tmp/large.html")
[ "$size" -lt 1000000 ] || fail "large.html: $size bytes for one rank"

browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
  echo "chromium is not installed: the pages were not rendered (scripts/install-deps.sh installs it)"
  [ "$failed" -eq 0 ] && exit 77
  exit 1
fi

# Every host name fails to resolve: a page that needed the network would show it.
for v in $variants; do
  if ! $limit "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
    --host-resolver-rules="MAP * ~NOTFOUND" --window-size=1200,900 --dump-dom "file://$tmp/$v.html" \
    >"$tmp/$v.dom" 2>"$tmp/chromium.log"; then
    fail "$v.html: chromium failed: $(tail -n 3 "$tmp/chromium.log")"
    continue
  fi
  # The large snapshot's thinnest bands are below a pixel: only those that can be hit are.
  visible=--every-band-visible
  [ "$v" = large ] || [ "$v" = trained ] && visible=""
  "$PYTHON" "$HELPER" check-html "$tmp/$v.dom" "$tmp/$v.json" $visible || fail "$v.html: see above"
done

if [ "$failed" -eq 0 ]; then echo "memviz: all checks passed"; fi
[ "$failed" -eq 0 ]

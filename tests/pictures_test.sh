#!/bin/sh
# scripts/pictures.sh --short: every picture is made from real runs of this build, every
# picture docs/pictures.md shows is committed in docs/pictures and every committed one is
# shown, and headless Chromium renders both the short run's SVGs and the committed ones.
# Usage: pictures_test.sh BUILD_DIR SOURCE_DIR PYTHON
# Exits 77 (skipped) where matplotlib's environment cannot be made or Chromium is absent.
BUILD=${1:?usage: pictures_test.sh BUILD_DIR SOURCE_DIR PYTHON}
SRC=${2:?usage: pictures_test.sh BUILD_DIR SOURCE_DIR PYTHON}
PYTHON=${3:?usage: pictures_test.sh BUILD_DIR SOURCE_DIR PYTHON}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
  failed=$((failed + 1))
  echo "FAIL $*"
}

"$SRC/scripts/pictures-venv.sh" >/dev/null || exit $?
bash "$SRC/scripts/pictures.sh" --short --build "$BUILD" --out "$tmp/out" --data "$SRC/tests/data/shakespeare.txt" >"$tmp/pictures.log" 2>&1
status=$?
cat "$tmp/pictures.log"
[ "$status" -eq 0 ] || { echo "FAIL scripts/pictures.sh --short: exit $status"; exit 1; }
# Always made: the others need PyTorch FSDP2's environment (1) or the testbed (5).
for name in memory-step plan-scaling step-time timeline-full timeline-full-no-prefetch timeline-grad-op lr-extend; do
  [ -s "$tmp/out/$name.svg" ] || fail "the short run made no $name.svg"
done

shown=$(grep -o '](pictures/[a-z0-9-]*\.svg)' "$SRC/docs/pictures.md" | sed 's/^](pictures\///; s/)$//' | sort -u)
committed=$(cd "$SRC/docs/pictures" && ls ./*.svg | sed 's/^\.\///' | sort)
[ -n "$shown" ] || fail "docs/pictures.md shows no picture"
[ "$shown" = "$committed" ] || fail "docs/pictures.md shows: $(echo $shown); docs/pictures holds: $(echo $committed)"
grep -q '(docs/pictures.md)' "$SRC/README.md" || fail "README.md does not link docs/pictures.md"

browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
  echo "chromium is not installed: the pictures were not rendered (scripts/install-deps.sh installs it)"
  [ "$failed" -eq 0 ] && exit 77
  exit 1
fi
"$PYTHON" "$SRC/tests/render_images.py" "$browser" "$tmp" "$tmp"/out/*.svg "$SRC"/docs/pictures/*.svg ||
  fail "Chromium: see above"
if [ "$failed" -eq 0 ]; then echo "pictures: all checks passed"; fi
[ "$failed" -eq 0 ]

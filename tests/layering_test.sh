#!/bin/sh
# Each layer includes only the layers below it (docs/architecture.md), only src/comm
# sees MPI and NCCL, a private header is only ever included from beside it, data and
# train are each entered through one face, and no folder's headers include each other in
# a circle.
# Usage: layering_test.sh SOURCE_DIR [--draw]
# --draw prints, bottom to top, each folder and the layers its files include (the picture
# of docs/architecture.md), and checks nothing.
cd "${1:?usage: layering_test.sh SOURCE_DIR [--draw]}" || exit 2

# The layer a public header belongs to.
header_layer() {
  case $1 in
    background_write.h | cores.h | crc32c.h | dtype.h | durable_file.h | error.h | file_commit.h | input_file.h | json_text.h | log.h \
      | output_file.h | rng.h | safetensors.h | simd.h | tensor.h | timer.h | trace.h | flags.h) echo core ;;
    device.h | memory.h | meta_clock.h | stream.h) echo device ;;
    comm.h) echo comm ;;
    checkpoint.h | flat_param.h | unit.h | runtime.h) echo fsdp ;;
    nn.h | cuda_arch.h) echo nn ;;
    decoder.h | gpt2.h | hf.h | llama.h | model.h | sampler.h) echo models ;;
    memviz.h) echo memviz ;;
    text.h) echo text ;;
    data.h) echo data ;;
    train.h) echo train ;;
    cli.h) echo cli ;;
    *) echo unknown ;;
  esac
}

allowed() {  # allowed LAYER: the layers it may include
  case $1 in
    core) echo "core" ;;
    device) echo "core device" ;;
    comm) echo "core device comm" ;;
    fsdp) echo "core device comm nn fsdp" ;;
    nn) echo "core device nn" ;;
    models) echo "core device fsdp nn models" ;;
    memviz) echo "core memviz" ;;
    text) echo "core text" ;;
    data) echo "core text data" ;;
    train) echo "core device comm fsdp nn models text data train" ;;
    cli) echo "core device comm fsdp nn models memviz text data train cli" ;;
  esac
}

LAYERS="core device comm nn fsdp models text memviz data train cli"

# The public headers FILES include, directly or through other public headers.
public_includes() {
  seen=$(sed -n 's/^#include "fsdp\/\([a-z0-9_]*\.h\)".*/\1/p' "$@" | sort -u)
  while :; do
    more=$({ echo "$seen"; for h in $seen; do sed -n 's/^#include "fsdp\/\([a-z0-9_]*\.h\)".*/\1/p' "include/fsdp/$h"; done; } |
      sort -u)
    [ "$more" = "$seen" ] && break
    seen=$more
  done
  echo "$seen"
}

if [ "${2:-}" = --draw ]; then
  for layer in $LAYERS; do
    used=$(public_includes $(find "src/$layer" -name '*.[ch]') | while read -r header; do header_layer "$header"; done |
      sort -u)
    line=""
    for below in $LAYERS; do
      [ "$below" = "$layer" ] && continue
      case " $(echo $used) " in *" $below "*) line="$line $below" ;; esac
    done
    printf '%-7s <-%s\n' "$layer" "${line:- (nothing)}"
  done
  exit 0
fi

failed=0
checked=0
check() {  # check FILE LAYER
  for header in $(sed -n 's/^#include "fsdp\/\([a-z0-9_]*\.h\)".*/\1/p' "$1"); do
    checked=$((checked + 1))
    included=$(header_layer "$header")
    case " $(allowed "$2") " in
      *" $included "*) ;;
      *) echo "FAIL $1 ($2) includes fsdp/$header ($included)"; failed=$((failed + 1)) ;;
    esac
  done
  for lib in mpi.h nccl.h; do
    if [ "$2" != comm ] && grep -q "#include <$lib>" "$1"; then
      echo "FAIL $1 ($2) includes $lib"; failed=$((failed + 1))
    fi
  done
  # A quoted include outside fsdp/ is a private header: it must sit beside the file,
  # or a layer could reach into another's internals (say memviz into src/cli).
  for header in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1" | grep -v '^fsdp/'); do
    checked=$((checked + 1))
    case $header in
      */*) echo "FAIL $1 ($2) includes $header from another folder"; failed=$((failed + 1)) ;;
      *) [ -f "$(dirname "$1")/$header" ] || { echo "FAIL $1 ($2) includes $header, not beside it"; failed=$((failed + 1)); } ;;
    esac
  done
}

for layer in $LAYERS; do
  [ "$layer" = nn ] && continue
  for f in src/$layer/*.c src/$layer/*.h; do [ -f "$f" ] && check "$f" "$layer"; done
done
for f in src/nn/*/*.c; do check "$f" nn; done
for f in include/fsdp/*.h; do
  layer=$(header_layer "$(basename "$f")")
  [ "$layer" = unknown ] && { echo "FAIL $f belongs to no layer"; failed=$((failed + 1)); continue; }
  check "$f" "$layer"
done
# One face each: the header in include/fsdp/ that the rest of the project enters it by.
for layer in data train; do
  faces=0
  for f in include/fsdp/*.h; do [ "$(header_layer "$(basename "$f")")" = "$layer" ] && faces=$((faces + 1)); done
  [ "$faces" -eq 1 ] || { echo "FAIL src/$layer has $faces face headers in include/fsdp, not 1"; failed=$((failed + 1)); }
done

# Within a folder, the private headers' includes of each other form no circle (tsort
# finds one).
for dir in src/*/ src/nn/*/; do
  pairs=$(for h in "$dir"*.h; do
    [ -f "$h" ] || continue
    for included in $(sed -n 's/^#include "\([a-z0-9_]*\.h\)".*/\1/p' "$h"); do
      echo "$(basename "$h") $included"
    done
  done)
  [ -n "$pairs" ] || continue
  if ! echo "$pairs" | tsort >/dev/null 2>&1; then
    echo "FAIL ${dir}: its headers include each other in a circle"; failed=$((failed + 1))
  fi
done

echo "layering: $checked includes checked, $failed violations"
[ "$failed" -eq 0 ]

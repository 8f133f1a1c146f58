#!/bin/sh
# Each layer includes only the layers below it (docs/architecture.md), only src/comm
# sees MPI and NCCL, and a private header is only ever included from beside it.
# Usage: layering_test.sh SOURCE_DIR
cd "${1:?usage: layering_test.sh SOURCE_DIR}" || exit 2

# The layer a public header belongs to.
header_layer() {
  case $1 in
    background_write.h | crc32c.h | dtype.h | durable_file.h | error.h | file_commit.h | input_file.h | json_text.h | log.h \
      | output_file.h | rng.h | safetensors.h | simd.h | tensor.h | timer.h | trace.h) echo core ;;
    device.h | memory.h | stream.h) echo device ;;
    comm.h) echo comm ;;
    checkpoint.h | flat_param.h | unit.h | runtime.h) echo fsdp ;;
    nn.h | cuda_arch.h) echo nn ;;
    decoder.h | gpt2.h | hf.h | llama.h | model.h) echo models ;;
    memviz.h) echo memviz ;;
    text.h) echo text ;;
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
    cli) echo "core device comm fsdp nn models memviz text cli" ;;
  esac
}

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

for layer in core device comm fsdp models memviz text cli; do
  for f in src/$layer/*.c; do check "$f" "$layer"; done
done
for f in src/nn/*/*.c; do check "$f" nn; done
for f in include/fsdp/*.h; do
  layer=$(header_layer "$(basename "$f")")
  [ "$layer" = unknown ] && { echo "FAIL $f belongs to no layer"; failed=$((failed + 1)); continue; }
  check "$f" "$layer"
done
echo "layering: $checked includes checked, $failed violations"
[ "$failed" -eq 0 ]

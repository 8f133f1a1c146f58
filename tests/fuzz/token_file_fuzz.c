/* A token file as `fsdp train --data` reads it: under --data-format auto (an llm.c
 * header of GPT-2's or Llama 3's kind, else nanoGPT's headerless uint16 for a .bin), and
 * under llmc with GPT-2's vocabulary. What loads must be the file's own ids: its bytes
 * after the header, little-endian, at the width the format says. */
#include <stdint.h>
#include <stdlib.h>

#include "fsdp/cli.h"
#include "fuzz.h"

enum { LLMC_HEADER_BYTES = 1024 };

struct load {
  const char *format;
  int vocab_size;
};

static char *path;
static const uint8_t *input;
static size_t input_size;

static void check_ids(const struct token_data *d) {
  size_t header = d->format == TOKENS_LLMC ? LLMC_HEADER_BYTES : 0, width = (size_t)d->width;
  if (header + d->n_tokens * width != input_size)
    fuzz_finding("%zu tokens of %zu bytes after a header of %zu, in a file of %zu bytes", d->n_tokens, width, header,
                 input_size);
  for (size_t i = 0; i < d->n_tokens; i++) {
    uint32_t id = 0;
    for (size_t b = 0; b < width; b++) id |= (uint32_t)input[header + i * width + b] << (8 * b);
    uint32_t loaded = token_at(d->tokens, d->width, i);
    if (loaded != id) fuzz_finding("token %zu is %u, the file says %u", i, loaded, id);
  }
}

static void load(void *context) {
  const struct load *l = context;
  struct token_data d;
  token_data_load(&d, path, l->format, l->vocab_size);
  check_ids(&d);
  token_data_free(&d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("tokens.bin");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  input = data;
  input_size = size;
  struct load loads[] = {{"auto", 128256}, {"llmc", 50257}};
  for (int i = 0; i < 2; i++) fuzz_read(load, &loads[i]);
  return 0;
}

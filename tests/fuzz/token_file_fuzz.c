/* A token file as `fsdp train --data` reads it: under --data-format auto (an llm.c
 * header of GPT-2's or Llama 3's kind, else nanoGPT's headerless uint16 for a .bin), and
 * under llmc with GPT-2's vocabulary. What loads must be the file's own ids: its bytes
 * after the header, little-endian, at the width the format says. Then the file is opened
 * as a shard, as training streams it (its header probed, every window read by pread and
 * by mmap): a file that loads must open, and every window must hold the loaded ids. */
#include <stdint.h>
#include <stdlib.h>

#include "fsdp/data.h"
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

static struct token_data loaded;

static void load(void *context) {
  const struct load *l = context;
  token_data_load(&loaded, path, l->format, l->vocab_size);
  check_ids(&loaded);
}

enum { MAX_T = 64 };

/* Windows of T + 1 tokens stepping by T, T the whole file's length up to MAX_T. */
static void stream(void *context) {
  const struct load *l = context;
  struct data_set set;
  data_set_open(&set, "--data", path, l->format, NULL, l->vocab_size);
  const struct token_file_layout *layout = &set.shards[0].layout;
  if (layout->n_tokens != loaded.n_tokens || layout->width != loaded.width || layout->format != loaded.format)
    fuzz_finding("opened as a shard: %zu tokens of %d bytes, loaded: %zu of %d", layout->n_tokens, layout->width,
                 loaded.n_tokens, loaded.width);
  size_t n = layout->n_tokens;
  int T = n - 1 < MAX_T ? (int)(n - 1) : MAX_T;
  for (enum data_io io = DATA_IO_PREAD; T > 0 && io <= DATA_IO_MMAP; io++) {
    struct data_reader r;
    data_reader_init(&r, &set, io, l->vocab_size);
    int in[MAX_T], tg[MAX_T];
    for (size_t first = 0; first + (size_t)T < n; first += (size_t)T) {
      data_reader_window(&r, 0, first, T, in, tg);
      for (int t = 0; t < T; t++)
        if ((uint32_t)in[t] != token_at(loaded.tokens, loaded.width, first + (size_t)t) ||
            (uint32_t)tg[t] != token_at(loaded.tokens, loaded.width, first + (size_t)t + 1))
          fuzz_finding("window at %zu, position %d: %d -> %d streamed, not the loaded ids", first, t, in[t], tg[t]);
    }
    data_reader_free(&r);
  }
  data_set_free(&set);
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
  for (int i = 0; i < 2; i++) {
    if (fuzz_read(load, &loads[i]) != 0) continue;
    if (fuzz_read(stream, &loads[i]) != 0) fuzz_finding("the file loads whole, but does not stream");
    token_data_free(&loaded);
  }
  return 0;
}

/* Token files: plain text (every byte a token), nanoGPT .bin (headerless
 * little-endian uint16) and llm.c .bin (a header of 256 little-endian int32,
 * then uint16 tokens). Every problem ends the job with a message naming the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/rng.h"

enum { LLMC_HEADER_INTS = 256, LLMC_HEADER_BYTES = LLMC_HEADER_INTS * 4 };
static const uint32_t LLMC_MAGIC = 20240520;
enum { LLMC_HEADER_MAGIC, LLMC_HEADER_VERSION, LLMC_HEADER_COUNT };

enum { READ_CHUNK_BYTES = 1 << 16 };

/* Batch starts are drawn from the Philox counter (index = sequence, stream = tag | batch).
 * The tag in the top 16 bits keeps these draws apart from other users of the same seed
 * (the weight init); the batch index fills the low 48 bits. */
static const uint64_t BATCH_STREAM_TAG = 0xda7aull << 48;
static const uint64_t BATCH_INDEX_LIMIT = 1ull << 48;

struct token_file {
  FILE *f;
  const char *path;
  size_t size;
};

static uint32_t read_le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void open_token_file(struct token_file *tf, const char *path) {
  struct input_file f;
  input_file_open(&f, "token file", path);
  if (f.size == 0) fsdp_fatal("token file '%s' is empty", path);
  tf->path = path;
  tf->size = f.size;
  tf->f = input_file_stream(&f, "token file");
}

static void read_exact(struct token_file *tf, void *buf, size_t bytes) {
  if (fread(buf, 1, bytes, tf->f) == bytes) return;
  if (ferror(tf->f)) fsdp_fatal("cannot read token file '%s': %s", tf->path, strerror(errno));
  fsdp_fatal("token file '%s' shrank while it was read (%zu bytes at its open)", tf->path, tf->size);
}

/* The first int32 of the file, or 0 when it is shorter than that; the position is left at the start. */
static uint32_t peek_magic(struct token_file *tf) {
  unsigned char head[4];
  if (tf->size < sizeof head) return 0;
  read_exact(tf, head, sizeof head);
  rewind(tf->f);
  return read_le32(head);
}

static int has_bin_suffix(const char *path) {
  size_t n = strlen(path);
  return n >= 4 && strcmp(path + n - 4, ".bin") == 0;
}

/* The llm.c magic alone decides, so that a truncated llm.c file is reported as one
 * instead of being read as uint16 tokens. */
static enum token_format detect_format(struct token_file *tf) {
  if (peek_magic(tf) == LLMC_MAGIC) return TOKENS_LLMC;
  return has_bin_suffix(tf->path) ? TOKENS_NANOGPT : TOKENS_TEXT;
}

static enum token_format resolve_format(struct token_file *tf, const char *format) {
  if (strcmp(format, "auto") == 0) return detect_format(tf);
  if (strcmp(format, "text") == 0) return TOKENS_TEXT;
  if (strcmp(format, "nanogpt") == 0) return TOKENS_NANOGPT;
  if (strcmp(format, "llmc") == 0) return TOKENS_LLMC;
  fsdp_fatal("unknown data format '%s' for '%s' (known: auto, text, nanogpt, llmc)", format, tf->path);
}

/* Reads n tokens of `width` bytes (1, or 2 little-endian) through a fixed buffer,
 * so that only the token array itself is as big as the file. */
static void read_tokens(struct token_file *tf, size_t n, int width, uint16_t *tokens) {
  unsigned char chunk[READ_CHUNK_BYTES];
  size_t per_chunk = sizeof chunk / (size_t)width;
  for (size_t done = 0; done < n;) {
    size_t count = n - done < per_chunk ? n - done : per_chunk;
    read_exact(tf, chunk, count * (size_t)width);
    for (size_t i = 0; i < count; i++)
      tokens[done + i] = width == 1 ? chunk[i] : (uint16_t)(chunk[2 * i] | chunk[2 * i + 1] << 8);
    done += count;
  }
}

static void load_body(struct token_data *d, struct token_file *tf, size_t n, int width) {
  d->tokens = fsdp_xcalloc(n ? n : 1, sizeof *d->tokens);
  d->n_tokens = n;
  read_tokens(tf, n, width, d->tokens);
}

static void load_nanogpt(struct token_data *d, struct token_file *tf) {
  if (tf->size % 2 != 0)
    fsdp_fatal("token file '%s' has an odd size (%zu bytes), but a nanoGPT .bin holds uint16 tokens", tf->path,
               tf->size);
  load_body(d, tf, tf->size / 2, 2);
}

static void load_llmc(struct token_data *d, struct token_file *tf) {
  if (tf->size < LLMC_HEADER_BYTES)
    fsdp_fatal("token file '%s' is too short for an llm.c file: %zu bytes, less than its %d-byte header", tf->path,
               tf->size, LLMC_HEADER_BYTES);
  unsigned char header[LLMC_HEADER_BYTES];
  read_exact(tf, header, sizeof header);
  uint32_t magic = read_le32(header + 4 * LLMC_HEADER_MAGIC);
  uint32_t version = read_le32(header + 4 * LLMC_HEADER_VERSION);
  int32_t count = (int32_t)read_le32(header + 4 * LLMC_HEADER_COUNT);
  if (magic != LLMC_MAGIC)
    fsdp_fatal("token file '%s' is not an llm.c file: magic %u, expected %u", tf->path, magic, LLMC_MAGIC);
  if (version != 1 && version != 2)
    fsdp_fatal("token file '%s': unsupported llm.c version %u (expected 1 or 2)", tf->path, version);
  size_t body = tf->size - LLMC_HEADER_BYTES;
  if (count < 0 || body != 2 * (size_t)count)
    fsdp_fatal("token file '%s': the llm.c header says %d tokens (%lld bytes), but %zu bytes follow the header",
               tf->path, (int)count, 2LL * count, body);
  if (count == 0) fsdp_fatal("token file '%s' holds no tokens", tf->path);
  load_body(d, tf, (size_t)count, 2);
}

static void check_vocab(const struct token_data *d, const char *path, int vocab_size) {
  for (size_t i = 0; i < d->n_tokens; i++)
    if (d->tokens[i] >= vocab_size)
      fsdp_fatal("token file '%s': token id %u at position %zu is outside the vocabulary (vocab size %d)", path,
                 (unsigned)d->tokens[i], i, vocab_size);
}

void token_data_load(struct token_data *d, const char *path, const char *format, int vocab_size) {
  FSDP_CHECK(vocab_size > 0);
  struct token_file tf;
  open_token_file(&tf, path);
  d->format = resolve_format(&tf, format);
  switch (d->format) {
    case TOKENS_TEXT: load_body(d, &tf, tf.size, 1); break;
    case TOKENS_NANOGPT: load_nanogpt(d, &tf); break;
    case TOKENS_LLMC: load_llmc(d, &tf); break;
  }
  fclose(tf.f);
  check_vocab(d, path, vocab_size);
}

void token_data_free(struct token_data *d) {
  free(d->tokens);
  d->tokens = NULL;
  d->n_tokens = 0;
}

/* One sequence needs seq_len + 1 tokens: the targets are the inputs shifted by one. */
static void check_split_size(const char *name, size_t n, int seq_len, const char *remedy) {
  if (n < (size_t)seq_len + 1)
    fsdp_fatal("too little data: the %s split holds %zu tokens, but one sequence of --seq-len %d needs %d; %s", name,
               n, seq_len, seq_len + 1, remedy);
}

void token_data_split(const struct token_data *d, float val_fraction, int seq_len, struct token_split *train,
                      struct token_split *val) {
  FSDP_CHECK(val_fraction >= 0.0f && val_fraction < 1.0f && seq_len > 0);
  /* Rounded to nearest, so that 0.7 of 1000 tokens is 700 although 0.7f is a little below 0.7. */
  size_t n_val = (size_t)((double)val_fraction * (double)d->n_tokens + 0.5);
  size_t n_train = d->n_tokens - n_val;
  check_split_size("training", n_train, seq_len, "lower --seq-len or --val-fraction, or use more data");
  if (val_fraction > 0.0f)
    check_split_size("validation", n_val, seq_len,
                     "lower --seq-len, raise --val-fraction (0 turns validation off), or use more data");
  *train = (struct token_split){d->tokens, n_train};
  *val = (struct token_split){d->tokens + n_train, n_val};
}

void token_split_batch(const struct token_split *s, uint64_t seed, uint64_t batch_index, int first, int count,
                       int T, int *inputs, int *targets) {
  FSDP_CHECK(T > 0 && first >= 0 && count >= 0);
  FSDP_CHECK(s->n_tokens >= (size_t)T + 1);
  FSDP_CHECK(batch_index < BATCH_INDEX_LIMIT);
  uint64_t stream = BATCH_STREAM_TAG | batch_index;
  uint64_t n_starts = s->n_tokens - (size_t)T; /* the last start leaves one token for the last target */
  for (int j = 0; j < count; j++) {
    const uint16_t *seq = s->tokens + rng_below(seed, stream, (uint64_t)first + (uint64_t)j, n_starts);
    int *in = inputs + (size_t)j * (size_t)T;
    int *tg = targets + (size_t)j * (size_t)T;
    for (int t = 0; t < T; t++) {
      in[t] = seq[t];
      tg[t] = seq[t + 1];
    }
  }
}

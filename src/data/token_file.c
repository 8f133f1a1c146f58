/* Token files: plain text (every byte a token), nanoGPT .bin (headerless little-endian
 * uint16) and llm.c .bin (a header of 256 little-endian int32: magic, version, token
 * count; then the tokens, uint16 for GPT-2, uint32 for Llama 3). token_file_probe reads
 * a file's header and checks it against its size, for the shards a run streams
 * (data_reader.c); token_data_load reads a whole file into memory at its own width. Every
 * problem ends the job with a message naming the file. */
#include <stdlib.h>
#include <string.h>

#include "fsdp/data.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"

enum { LLMC_HEADER_INTS = 256, LLMC_HEADER_BYTES = LLMC_HEADER_INTS * 4 };
enum { LLMC_HEADER_MAGIC, LLMC_HEADER_VERSION, LLMC_HEADER_COUNT };

/* The token files llm.c's data scripts write (dev/data/data_common.py); GPT-2's version 2
 * is an earlier llm.c's, laid out alike. */
static const struct llmc_kind {
  uint32_t magic, version;
  int width;
  const char *name;
} LLMC_KINDS[] = {
    {20240520, 1, 2, "GPT-2's uint16"}, {20240520, 2, 2, "GPT-2's uint16"}, {20240801, 7, 4, "Llama 3's uint32"}};
enum { N_LLMC_KINDS = sizeof LLMC_KINDS / sizeof LLMC_KINDS[0] };
static const char LLMC_KNOWN[] =
    "llm.c's token files have magic 20240520 and version 1 (GPT-2, uint16 tokens) or magic 20240801 and version 7 "
    "(Llama 3, uint32 tokens)";

enum { READ_CHUNK_BYTES = 1 << 16 };

struct token_file {
  struct input_file in;
  const char *path;
  size_t size;
  uint32_t head[3]; /* the first three int32 (magic, version and count, in an llm.c file), 0 past the end */
};

static uint32_t read_le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void read_exact(struct token_file *tf, void *buf, size_t bytes, size_t offset) {
  input_file_read_at(&tf->in, "token file", buf, bytes, offset);
}

static void open_token_file(struct token_file *tf, const char *path) {
  input_file_open(&tf->in, "token file", path);
  if (tf->in.size == 0) fsdp_fatal("token file '%s' is empty", path);
  tf->path = path;
  tf->size = tf->in.size;
  unsigned char head[sizeof tf->head] = {0};
  size_t n = tf->size < sizeof head ? tf->size / 4 * 4 : sizeof head;
  read_exact(tf, head, n, 0);
  for (int i = 0; i < 3; i++) tf->head[i] = read_le32(head + 4 * i);
}

static const struct llmc_kind *llmc_kind(uint32_t magic, uint32_t version) {
  for (int i = 0; i < N_LLMC_KINDS; i++)
    if (LLMC_KINDS[i].magic == magic && LLMC_KINDS[i].version == version) return &LLMC_KINDS[i];
  return NULL;
}

static int is_llmc_magic(uint32_t magic) { return magic == LLMC_KINDS[0].magic || magic == LLMC_KINDS[2].magic; }

/* llm.c's magics are dates (20240520) and its versions small: a header of that shape
 * that is no token file llm.c writes (its model or tokenizer files, an evaluation set, a
 * version it never wrote) is refused rather than read as tokens. */
static int looks_like_llmc(uint32_t magic, uint32_t version) {
  uint32_t year = magic / 10000, month = magic / 100 % 100, day = magic % 100;
  return year >= 2024 && year <= 2029 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && version >= 1 &&
         version <= 255;
}

/* A header whose count is the tokens after it, at either width: an llm.c file, whatever
 * its magic says (uint16 tokens that happen to spell that are one chance in billions). */
static int counts_its_tokens(const struct token_file *tf) {
  size_t count = tf->head[LLMC_HEADER_COUNT], body = tf->size - LLMC_HEADER_BYTES;
  return count > 0 && (count * 2 == body || count * 4 == body);
}

static int has_bin_suffix(const char *path) {
  size_t n = strlen(path);
  return n >= 4 && strcmp(path + n - 4, ".bin") == 0;
}

/* What auto proves from the content: an llm.c magic decides, so that a truncated llm.c
 * file is reported as one instead of being read as uint16 tokens. */
static enum token_format detect_format(struct token_file *tf) {
  if (is_llmc_magic(tf->head[0])) return TOKENS_LLMC;
  if (tf->size >= LLMC_HEADER_BYTES && (looks_like_llmc(tf->head[0], tf->head[1]) || counts_its_tokens(tf)))
    fsdp_fatal("token file '%s': its header looks like llm.c's (magic %u, version %u), but %s; give --data-format "
               "nanogpt or text to read it as such",
               tf->path, tf->head[0], tf->head[1], LLMC_KNOWN);
  return has_bin_suffix(tf->path) ? TOKENS_NANOGPT : TOKENS_TEXT;
}

static enum token_format resolve_format(struct token_file *tf, const char *format) {
  if (strcmp(format, "auto") == 0) return detect_format(tf);
  if (strcmp(format, "text") == 0) return TOKENS_TEXT;
  if (strcmp(format, "nanogpt") == 0) return TOKENS_NANOGPT;
  if (strcmp(format, "llmc") == 0) return TOKENS_LLMC;
  fsdp_fatal("unknown data format '%s' for '%s' (known: auto, text, nanogpt, llmc)", format, tf->path);
}

/* Reads n little-endian tokens of d->width bytes from byte offset on through a fixed
 * buffer, so that only the token array itself is as big as the file. */
static void load_body(struct token_data *d, struct token_file *tf, size_t offset, size_t n, int width) {
  d->width = width;
  d->n_tokens = n;
  d->tokens = fsdp_xcalloc(n ? n : 1, (size_t)width);
  unsigned char chunk[READ_CHUNK_BYTES], *out = d->tokens;
  size_t per_chunk = sizeof chunk / (size_t)width;
  for (size_t done = 0; done < n;) {
    size_t count = n - done < per_chunk ? n - done : per_chunk;
    read_exact(tf, chunk, count * (size_t)width, offset + done * (size_t)width);
    for (size_t i = 0; i < count; i++) {
      const unsigned char *b = chunk + i * (size_t)width;
      if (width == 1)
        out[done + i] = b[0];
      else if (width == 2)
        ((uint16_t *)d->tokens)[done + i] = (uint16_t)(b[0] | b[1] << 8);
      else
        ((uint32_t *)d->tokens)[done + i] = read_le32(b);
    }
    done += count;
  }
}

static void probe_nanogpt(struct token_file *tf, struct token_file_layout *out) {
  if (tf->size % 2 != 0)
    fsdp_fatal("token file '%s' has an odd size (%zu bytes), but a nanoGPT .bin holds uint16 tokens", tf->path,
               tf->size);
  *out = (struct token_file_layout){TOKENS_NANOGPT, 2, 0, tf->size / 2};
}

static void probe_llmc(struct token_file *tf, struct token_file_layout *out) {
  if (tf->size < LLMC_HEADER_BYTES)
    fsdp_fatal("token file '%s' is too short for an llm.c file: %zu bytes, less than its %d-byte header", tf->path,
               tf->size, LLMC_HEADER_BYTES);
  unsigned char header[LLMC_HEADER_BYTES];
  read_exact(tf, header, sizeof header, 0);
  uint32_t magic = read_le32(header + 4 * LLMC_HEADER_MAGIC);
  uint32_t version = read_le32(header + 4 * LLMC_HEADER_VERSION);
  int32_t count = (int32_t)read_le32(header + 4 * LLMC_HEADER_COUNT);
  if (!is_llmc_magic(magic))
    fsdp_fatal("token file '%s' is not an llm.c token file: magic %u (%s)", tf->path, magic, LLMC_KNOWN);
  const struct llmc_kind *kind = llmc_kind(magic, version);
  if (!kind)
    fsdp_fatal("token file '%s': llm.c magic %u with version %u, but %s", tf->path, magic, version, LLMC_KNOWN);
  size_t body = tf->size - LLMC_HEADER_BYTES;
  if (count < 0 || body != (size_t)kind->width * (size_t)count)
    fsdp_fatal("token file '%s': the llm.c header says %d tokens (%lld bytes of %s ids), but %zu bytes follow the "
               "header",
               tf->path, (int)count, (long long)kind->width * count, kind->name, body);
  if (count == 0) fsdp_fatal("token file '%s' holds no tokens", tf->path);
  *out = (struct token_file_layout){TOKENS_LLMC, kind->width, LLMC_HEADER_BYTES, (size_t)count};
}

static void probe(struct token_file *tf, const char *format, struct token_file_layout *out) {
  switch (resolve_format(tf, format)) {
    case TOKENS_TEXT: *out = (struct token_file_layout){TOKENS_TEXT, 1, 0, tf->size}; break;
    case TOKENS_NANOGPT: probe_nanogpt(tf, out); break;
    case TOKENS_LLMC: probe_llmc(tf, out); break;
    case TOKENS_TOKENIZED: FSDP_CHECK(0);
  }
}

void token_file_probe(const char *path, const char *format, struct token_file_layout *out) {
  struct token_file tf;
  open_token_file(&tf, path);
  probe(&tf, format, out);
  input_file_close(&tf.in);
}

void token_data_check_vocab(const struct token_data *d, const char *path, int vocab_size) {
  for (size_t i = 0; i < d->n_tokens; i++) {
    uint32_t id = token_at(d->tokens, d->width, i);
    if (id >= (uint32_t)vocab_size)
      fsdp_fatal("token file '%s': token id %u at position %zu is outside the vocabulary (vocab size %d)", path, id,
                 i, vocab_size);
  }
}

void token_data_load(struct token_data *d, const char *path, const char *format, int vocab_size) {
  FSDP_CHECK(vocab_size > 0);
  struct token_file tf;
  open_token_file(&tf, path);
  struct token_file_layout layout;
  probe(&tf, format, &layout);
  d->format = layout.format;
  load_body(d, &tf, layout.offset, layout.n_tokens, layout.width);
  input_file_close(&tf.in);
  token_data_check_vocab(d, path, vocab_size);
}

void token_data_free(struct token_data *d) {
  free(d->tokens);
  d->tokens = NULL;
  d->n_tokens = 0;
}

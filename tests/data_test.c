/* Token data: loading each format (llm.c's GPT-2 uint16 and Llama 3 uint32 headers among
 * them) at its own width, auto detection, the train/validation split,
 * batches that do not depend on how their sequences are divided among ranks,
 * and the messages of bad files (each in a child process, since they end it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/cli.h"
#include "temp_files.h"

static void put_le16(unsigned char *b, uint16_t v) {
  b[0] = (unsigned char)v;
  b[1] = (unsigned char)(v >> 8);
}

static void put_le32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static const char *write_nanogpt(const char *name, const uint16_t *tokens, size_t n) {
  unsigned char *bytes = calloc(2 * n + 1, 1);
  for (size_t i = 0; i < n; i++) put_le16(bytes + 2 * i, tokens[i]);
  const char *path = temp_file_write(name, bytes, 2 * n);
  free(bytes);
  return path;
}

/* An llm.c file whose header claims header_count tokens and which holds n of them, each
 * of width bytes. */
static const char *write_llmc_wide(const char *name, uint32_t magic, uint32_t version, uint32_t header_count,
                                   const uint32_t *tokens, size_t n, int width) {
  size_t size = 1024 + (size_t)width * n;
  unsigned char *bytes = calloc(size, 1);
  put_le32(bytes, magic);
  put_le32(bytes + 4, version);
  put_le32(bytes + 8, header_count);
  for (size_t i = 0; i < n; i++) {
    if (width == 2)
      put_le16(bytes + 1024 + 2 * i, (uint16_t)tokens[i]);
    else
      put_le32(bytes + 1024 + 4 * i, tokens[i]);
  }
  const char *path = temp_file_write(name, bytes, size);
  free(bytes);
  return path;
}

static const char *write_llmc(const char *name, uint32_t magic, uint32_t version, uint32_t header_count,
                              const uint16_t *tokens, size_t n) {
  uint32_t *wide = calloc(n + 1, sizeof *wide);
  for (size_t i = 0; i < n; i++) wide[i] = tokens[i];
  const char *path = write_llmc_wide(name, magic, version, header_count, wide, n, 2);
  free(wide);
  return path;
}

static void expect_tokens32(const struct token_data *d, enum token_format format, int width, const uint32_t *want,
                            size_t n, const char *what) {
  EXPECT(d->format == format, "%s: format %d, want %d", what, (int)d->format, (int)format);
  EXPECT(d->width == width, "%s: %d bytes a token, want %d", what, d->width, width);
  EXPECT(d->n_tokens == n, "%s: %zu tokens, want %zu", what, d->n_tokens, n);
  if (d->n_tokens != n) return;
  for (size_t i = 0; i < n; i++)
    EXPECT(token_at(d->tokens, d->width, i) == want[i], "%s: token %zu is %u, want %u", what, i,
           token_at(d->tokens, d->width, i), want[i]);
}

static void expect_tokens(const struct token_data *d, enum token_format format, int width, const uint16_t *want,
                          size_t n, const char *what) {
  uint32_t wide[64];
  for (size_t i = 0; i < n; i++) wide[i] = want[i];
  expect_tokens32(d, format, width, wide, n, what);
}

static void test_text(void) {
  const char text[] = "Hi\n\xff";
  const uint16_t want[] = {'H', 'i', '\n', 0xff};
  struct token_data d;
  token_data_load(&d, temp_file_write("input.txt", text, 4), "auto", 256);
  expect_tokens(&d, TOKENS_TEXT, 1, want, 4, "text, auto");
  token_data_free(&d);
  /* An explicit format wins over the .bin suffix. */
  token_data_load(&d, temp_file_write("text.bin", text, 4), "text", 256);
  expect_tokens(&d, TOKENS_TEXT, 1, want, 4, "text, explicit");
  token_data_free(&d);
}

static void test_nanogpt(void) {
  const uint16_t tokens[] = {0, 1, 255, 256, 50256, 65535};
  struct token_data d;
  token_data_load(&d, write_nanogpt("train.bin", tokens, 6), "auto", 65536);
  expect_tokens(&d, TOKENS_NANOGPT, 2, tokens, 6, "nanogpt, auto");
  token_data_free(&d);
  token_data_load(&d, write_nanogpt("train.u16", tokens, 6), "nanogpt", 65536);
  expect_tokens(&d, TOKENS_NANOGPT, 2, tokens, 6, "nanogpt, explicit");
  token_data_free(&d);
}

static void test_llmc(void) {
  const uint16_t tokens[] = {50256, 7, 0, 300, 12};
  struct token_data d;
  token_data_load(&d, write_llmc("v1.bin", 20240520, 1, 5, tokens, 5), "auto", 50257);
  expect_tokens(&d, TOKENS_LLMC, 2, tokens, 5, "llmc v1, auto");
  token_data_free(&d);
  token_data_load(&d, write_llmc("v2.bin", 20240520, 2, 5, tokens, 5), "llmc", 50257);
  expect_tokens(&d, TOKENS_LLMC, 2, tokens, 5, "llmc v2, explicit");
  token_data_free(&d);
  /* The magic decides, whatever the name. */
  token_data_load(&d, write_llmc("tokens.dat", 20240520, 1, 5, tokens, 5), "auto", 50257);
  expect_tokens(&d, TOKENS_LLMC, 2, tokens, 5, "llmc, auto without .bin");
  token_data_free(&d);
}

/* llm.c's Llama 3 files: magic 20240801, version 7, uint32 tokens, ids past 65535 kept. */
static void test_llmc_llama3(void) {
  const uint32_t tokens[] = {128000, 9906, 0, 65535, 65536, 128255, 70000};
  struct token_data d;
  token_data_load(&d, write_llmc_wide("llama3.bin", 20240801, 7, 7, tokens, 7, 4), "auto", 128256);
  expect_tokens32(&d, TOKENS_LLMC, 4, tokens, 7, "llama 3, auto");
  struct token_split train, val;
  token_data_split(&d, 0.0f, 4, &train, &val);
  int in[4], tg[4];
  token_split_batch(&train, 1, 0, 0, 1, 4, in, tg);
  int start = -1;
  for (int i = 0; i < 3; i++)
    if ((uint32_t)in[0] == tokens[i]) start = i;
  EXPECT(start >= 0, "llama 3: a batch starts at %d, no token of the file", in[0]);
  for (int t = 0; start >= 0 && t < 4; t++)
    EXPECT((uint32_t)in[t] == tokens[start + t] && (uint32_t)tg[t] == tokens[start + t + 1],
           "llama 3: batch position %d is %d -> %d", t, in[t], tg[t]);
  token_data_free(&d);
  token_data_load(&d, write_llmc_wide("llama3.dat", 20240801, 7, 7, tokens, 7, 4), "llmc", 128256);
  expect_tokens32(&d, TOKENS_LLMC, 4, tokens, 7, "llama 3, explicit");
  token_data_free(&d);
}

/* A nanoGPT file whose token i is i, so that a token's value is its position. */
static void load_counting(struct token_data *d, size_t n) {
  uint16_t *tokens = malloc(n * sizeof *tokens);
  for (size_t i = 0; i < n; i++) tokens[i] = (uint16_t)i;
  char name[64];
  snprintf(name, sizeof name, "count%zu.bin", n);
  token_data_load(d, write_nanogpt(name, tokens, n), "auto", 65536);
  free(tokens);
}

static void test_split(void) {
  struct token_data d;
  load_counting(&d, 1000);
  struct token_split train, val;
  token_data_split(&d, 0.25f, 16, &train, &val);
  EXPECT(train.n_tokens == 750 && val.n_tokens == 250, "split 0.25: %zu + %zu", train.n_tokens, val.n_tokens);
  EXPECT(train.tokens == d.tokens && val.tokens == (const uint16_t *)d.tokens + 750,
         "split 0.25: the validation split is the tail");
  token_data_split(&d, 0.7f, 16, &train, &val);
  EXPECT(train.n_tokens == 300 && val.n_tokens == 700, "split 0.7: %zu + %zu", train.n_tokens, val.n_tokens);
  token_data_split(&d, 0.0f, 16, &train, &val);
  EXPECT(train.n_tokens == 1000 && val.n_tokens == 0, "split 0: %zu + %zu", train.n_tokens, val.n_tokens);
  token_data_free(&d);
}

enum { T = 16, B = 6 };

/* Reads batch_index as the consecutive ranges [bounds[i], bounds[i + 1]). */
static void read_in_parts(const struct token_split *s, uint64_t batch_index, const int *bounds, int n_parts,
                          int *inputs, int *targets) {
  for (int p = 0; p < n_parts; p++)
    token_split_batch(s, 1234, batch_index, bounds[p], bounds[p + 1] - bounds[p], T, inputs + bounds[p] * T,
                      targets + bounds[p] * T);
}

/* With token i == i, a sequence is a window of the split when it counts up from its start. */
static void expect_windows(const struct token_split *s, const int *inputs, const int *targets, const char *what) {
  int base = (int)token_at(s->tokens, s->width, 0);
  for (int j = 0; j < B; j++) {
    const int *in = inputs + j * T, *tg = targets + j * T;
    EXPECT(in[0] >= base && (size_t)(in[0] - base) + T < s->n_tokens, "%s: sequence %d starts at %d, outside", what,
           j, in[0]);
    for (int t = 0; t < T; t++) {
      EXPECT(in[t] == in[0] + t, "%s: sequence %d is not contiguous at %d", what, j, t);
      EXPECT(tg[t] == in[t] + 1, "%s: sequence %d: target %d is not the next token", what, j, t);
    }
  }
}

static void test_batches(void) {
  struct token_data d;
  load_counting(&d, 1000);
  struct token_split train, val;
  token_data_split(&d, 0.25f, T, &train, &val);

  int whole_in[B * T], whole_tg[B * T], in[B * T], tg[B * T];
  const int one[] = {0, 6}, halves[] = {0, 3, 6}, thirds[] = {0, 2, 4, 6};
  read_in_parts(&train, 5, one, 1, whole_in, whole_tg);
  expect_windows(&train, whole_in, whole_tg, "train [0,6)");
  read_in_parts(&train, 5, halves, 2, in, tg);
  EXPECT(memcmp(in, whole_in, sizeof in) == 0 && memcmp(tg, whole_tg, sizeof tg) == 0, "[0,3)+[3,6) != [0,6)");
  read_in_parts(&train, 5, thirds, 3, in, tg);
  EXPECT(memcmp(in, whole_in, sizeof in) == 0 && memcmp(tg, whole_tg, sizeof tg) == 0,
         "[0,2)+[2,4)+[4,6) != [0,6)");

  read_in_parts(&train, 6, one, 1, in, tg);
  EXPECT(memcmp(in, whole_in, sizeof in) != 0, "batches 5 and 6 are the same");
  int starts_distinct = 0;
  for (int j = 1; j < B; j++) starts_distinct += whole_in[j * T] != whole_in[0];
  EXPECT(starts_distinct > 0, "every sequence of a batch starts at the same token");

  read_in_parts(&val, 5, one, 1, in, tg);
  expect_windows(&val, in, tg, "val [0,6)");
  token_data_free(&d);
}

/* A split of T + 2 tokens has exactly two starts, 0 and 1; both must be drawn, and nothing beyond. */
static void test_batch_start_range(void) {
  struct token_data d;
  load_counting(&d, T + 2);
  struct token_split train, val;
  token_data_split(&d, 0.0f, T, &train, &val);
  int seen[2] = {0, 0};
  for (uint64_t b = 0; b < 64; b++) {
    int in[T], tg[T];
    token_split_batch(&train, 99, b, 0, 1, T, in, tg);
    EXPECT(in[0] == 0 || in[0] == 1, "start %d with only starts 0 and 1 possible", in[0]);
    if (in[0] == 0 || in[0] == 1) seen[in[0]] = 1;
  }
  EXPECT(seen[0] && seen[1], "64 batches drew start 0: %d, start 1: %d", seen[0], seen[1]);
  token_data_free(&d);
}

/* ---- bad files: the job must end, with a message that names the problem ---- */

struct load_case {
  const char *path, *format;
  int vocab_size;
  int split_seq_len; /* > 0: also split with this --seq-len */
  float val_fraction;
};

static void run_load_case(const struct load_case *c) {
  struct token_data d;
  token_data_load(&d, c->path, c->format, c->vocab_size);
  if (c->split_seq_len > 0) {
    struct token_split train, val;
    token_data_split(&d, c->val_fraction, c->split_seq_len, &train, &val);
  }
}

/* Runs the case in a child with stderr captured; it must exit non-zero and say every word. */
static void call_load_case(const void *c) { run_load_case(c); }

static void expect_fatal(const char *what, const struct load_case *c, const char *word1, const char *word2) {
  char message[4096];
  int status = run_in_child(call_load_case, c, message, sizeof message);
  int failed = WIFEXITED(status) && WEXITSTATUS(status) != 0;
  EXPECT(failed, "%s: the load did not fail (stderr: %s)", what, message);
  EXPECT(strstr(message, word1) && strstr(message, word2), "%s: message lacks '%s' / '%s': %s", what, word1,
         word2, message);
  if (failed) printf("ok   %s: %s", what, message);
}

static void test_bad_files(void) {
  const uint16_t tokens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const char *missing = temp_file_path("missing.bin");
  const char *empty = temp_file_write("empty.bin", "", 0);
  const char *short_llmc = temp_file_write("short.bin", "\x88\xd8\x34\x01\x01\x00\x00\x00", 8);
  const char *mismatch = write_llmc("mismatch.bin", 20240520, 1, 11, tokens, 10);
  const char *bad_version = write_llmc("version.bin", 20240520, 3, 10, tokens, 10);
  const char *not_llmc = write_llmc("magic.bin", 12345, 1, 10, tokens, 10);
  const char *odd = temp_file_write("odd.bin", "\x01\x00\x02", 3);
  const char *wide = temp_file_write("wide.txt", "abc\xc8", 4);
  const char *small = write_nanogpt("small.bin", tokens, 10);
  const uint32_t llama[] = {128000, 5, 128256, 7};
  const char *llama_vocab = write_llmc_wide("llama_vocab.bin", 20240801, 7, 4, llama, 4, 4);
  const char *llama_version = write_llmc_wide("llama_v1.bin", 20240801, 1, 4, llama, 4, 4);
  const char *llama_count = write_llmc_wide("llama_count.bin", 20240801, 7, 5, llama, 4, 4);
  const char *llama_as_gpt2 = write_llmc("llama_u16.bin", 20240801, 7, 10, tokens, 10);
  /* llm.c's evaluation file (HellaSwag's): a header of its kind, no token file. */
  const char *eval_file = write_llmc("hellaswag_val.bin", 20240522, 1, 10, tokens, 10);

  expect_fatal("missing file", &(struct load_case){missing, "auto", 256, 0, 0}, missing, "No such file");
  expect_fatal("empty file", &(struct load_case){empty, "auto", 256, 0, 0}, empty, "empty");
  expect_fatal("short llm.c file", &(struct load_case){short_llmc, "auto", 256, 0, 0}, short_llmc, "too short");
  expect_fatal("llm.c count mismatch", &(struct load_case){mismatch, "auto", 256, 0, 0}, mismatch, "11 tokens");
  expect_fatal("llm.c version", &(struct load_case){bad_version, "auto", 256, 0, 0}, bad_version, "version 3");
  expect_fatal("wrong magic", &(struct load_case){not_llmc, "llmc", 256, 0, 0}, not_llmc, "magic 12345");
  expect_fatal("odd nanoGPT size", &(struct load_case){odd, "auto", 256, 0, 0}, odd, "odd size");
  expect_fatal("token beyond vocab", &(struct load_case){wide, "auto", 100, 0, 0}, "token id 200 at position 3",
               "vocab size 100");
  expect_fatal("llama 3 id at the vocab size", &(struct load_case){llama_vocab, "auto", 128256, 0, 0},
               "token id 128256 at position 2", "vocab size 128256");
  expect_fatal("llama 3 version", &(struct load_case){llama_version, "auto", 128256, 0, 0},
               "magic 20240801 with version 1", "version 7");
  expect_fatal("llama 3 count", &(struct load_case){llama_count, "auto", 128256, 0, 0},
               "header says 5 tokens (20 bytes of Llama 3's uint32", "16 bytes follow");
  expect_fatal("llama 3 header, uint16 body", &(struct load_case){llama_as_gpt2, "auto", 128256, 0, 0},
               "says 10 tokens (40 bytes", "20 bytes follow");
  expect_fatal("an llm.c header of another kind", &(struct load_case){eval_file, "auto", 65536, 0, 0},
               "looks like llm.c's (magic 20240522, version 1)", "--data-format");
  expect_fatal("short training split", &(struct load_case){small, "auto", 256, 16, 0.0f}, "training split",
               "--seq-len 16");
  expect_fatal("short validation split", &(struct load_case){small, "auto", 256, 4, 0.3f}, "validation split",
               "--val-fraction");
}

int main(void) {
  temp_files_init("data_test");
  test_text();
  test_nanogpt();
  test_llmc();
  test_llmc_llama3();
  test_split();
  test_batches();
  test_batch_start_range();
  test_bad_files();
  temp_files_remove();
  return check_summary("data_test");
}

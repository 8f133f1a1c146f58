/* Token data: loading each format (llm.c's GPT-2 uint16 and Llama 3 uint32 headers among
 * them) at its own width, auto detection; the order of windows (every window once an
 * epoch, shuffled within a shard); shards named by files, globs and folders, streamed
 * through pread and mmap: global batches that do not depend on how their rows are divided
 * among ranks, epochs, the validation windows, a resumed loader's batches; and the
 * messages of bad files and ids (each in a child process, since they end it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/data.h"
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
  token_data_free(&d);
  token_data_load(&d, write_llmc_wide("llama3.dat", 20240801, 7, 7, tokens, 7, 4), "llmc", 128256);
  expect_tokens32(&d, TOKENS_LLMC, 4, tokens, 7, "llama 3, explicit");
  token_data_free(&d);
}

/* ---- the order of windows ---- */

/* data_permute is a bijection of [0, n) for every n, and another seed another one. */
static void test_permute(void) {
  const uint64_t sizes[] = {1, 2, 3, 4, 5, 7, 16, 100, 1000, 4097};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    uint64_t n = sizes[k];
    unsigned char *seen = calloc(n, 1);
    int same_as_other_seed = 0, fixed = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t x = data_permute(42, 7, n, i);
      EXPECT(x < n, "permute(%llu): %llu -> %llu", (unsigned long long)n, (unsigned long long)i,
             (unsigned long long)x);
      if (x < n) seen[x]++;
      same_as_other_seed += x == data_permute(43, 7, n, i);
      fixed += x == i;
    }
    for (uint64_t i = 0; i < n; i++)
      EXPECT(seen[i] == 1, "permute(%llu): %llu taken %d times", (unsigned long long)n, (unsigned long long)i,
             seen[i]);
    if (n >= 100)
      EXPECT(same_as_other_seed < (int)(n / 10) && fixed < (int)(n / 10),
             "permute(%llu): %d places as another seed's, %d fixed: not shuffled", (unsigned long long)n,
             same_as_other_seed, fixed);
    free(seen);
  }
}

/* An epoch visits every window of every range once, shuffled, the next epoch in another
 * order; unshuffled, in order. */
static void test_order(void) {
  const size_t windows[] = {5, 0, 17, 1, 9};
  enum { N_RANGES = 5, E = 32 };
  struct data_order o;
  struct token_range *ranges = calloc(N_RANGES, sizeof *ranges);
  for (int i = 0; i < N_RANGES; i++) ranges[i] = (struct token_range){i, 0, windows[i] * 4 + 1, windows[i]};
  data_order_init(&o, ranges, N_RANGES, 4, 99, 1);
  EXPECT(o.windows_per_epoch == E, "%llu windows an epoch, want %d", (unsigned long long)o.windows_per_epoch, E);
  int first_range[2] = {-1, -1}, differs = 0;
  struct window_place epoch0[E];
  for (int e = 0; e < 2; e++) {
    int seen[N_RANGES][17] = {{0}};
    for (int u = 0; u < E; u++) {
      struct window_place p = data_order_place(&o, (uint64_t)(e * E + u));
      EXPECT(p.epoch == (uint64_t)e && p.range >= 0 && p.range < N_RANGES && p.window < windows[p.range],
             "window %d: epoch %llu, range %d, window %zu", e * E + u, (unsigned long long)p.epoch, p.range, p.window);
      if (p.range < 0 || p.range >= N_RANGES || p.window >= windows[p.range]) continue;
      seen[p.range][p.window]++;
      if (u == 0) first_range[e] = p.range;
      if (e == 0) epoch0[u] = p;
      if (e == 1) differs += epoch0[u].range != p.range || epoch0[u].window != p.window;
    }
    for (int r = 0; r < N_RANGES; r++)
      for (size_t w = 0; w < windows[r]; w++)
        EXPECT(seen[r][w] == 1, "epoch %d: range %d window %zu read %d times", e, r, w, seen[r][w]);
  }
  EXPECT(differs > E / 2, "epochs 0 and 1 share %d of %d places", E - differs, E);
  (void)first_range;
  /* Windows of a range come together: the shuffle is within a range, as llm.c's within a shard. */
  int switches = 0;
  for (int u = 1; u < E; u++) switches += epoch0[u].range != epoch0[u - 1].range;
  EXPECT(switches == 3, "epoch 0 switches ranges %d times, want 3 (4 ranges with windows)", switches);
  data_order_free(&o);

  ranges = calloc(N_RANGES, sizeof *ranges);
  for (int i = 0; i < N_RANGES; i++) ranges[i] = (struct token_range){i, 0, windows[i] * 4 + 1, windows[i]};
  data_order_init(&o, ranges, N_RANGES, 4, 99, 0);
  int u = 0;
  for (int r = 0; r < N_RANGES; r++)
    for (size_t w = 0; w < windows[r]; w++, u++) {
      struct window_place p = data_order_place(&o, (uint64_t)(E + u));
      EXPECT(p.epoch == 1 && p.range == r && p.window == w, "unshuffled window %d: range %d window %zu", u, p.range,
             p.window);
    }
  data_order_free(&o);
}

/* ---- shards: --data's files, globs and folders, streamed ---- */

/* A nanoGPT shard whose token i is base + i. */
static const char *write_counting(const char *name, size_t n, uint16_t base) {
  uint16_t *tokens = malloc(n * sizeof *tokens);
  for (size_t i = 0; i < n; i++) tokens[i] = (uint16_t)(base + i);
  const char *path = write_nanogpt(name, tokens, n);
  free(tokens);
  return path;
}

static char shard_dir[TEMP_FILES_PATH_BYTES];

/* shards/s0.bin .. s2.bin of 100, 50 and 80 tokens counting from 0, 1000 and 2000, and
 * other.txt beside them. */
static void write_shards(void) {
  snprintf(shard_dir, sizeof shard_dir, "%s", temp_file_path("shards"));
  if (mkdir(shard_dir, 0700) != 0) exit(2);
  write_counting("shards/s1.bin", 50, 1000);
  write_counting("shards/s0.bin", 100, 0);
  write_counting("shards/s2.bin", 80, 2000);
  temp_file_write("shards/other.txt", "text", 4);
}

static void expect_shards(const char *spec, const char *const *names, int n, const char *what) {
  struct data_set s;
  data_set_open(&s, "--data", spec, "auto", NULL, 65536);
  EXPECT(s.n_shards == n, "%s: %d shards, want %d", what, s.n_shards, n);
  for (int i = 0; i < n && i < s.n_shards; i++)
    EXPECT(strcmp(s.shards[i].name, names[i]) == 0, "%s: shard %d is %s, want %s", what, i, s.shards[i].name,
           names[i]);
  data_set_free(&s);
}

static void test_data_set(void) {
  const char *all[] = {"s0.bin", "s1.bin", "s2.bin"}, *two[] = {"s2.bin", "s0.bin"};
  char spec[1024];
  expect_shards(shard_dir, all, 3, "a folder");
  snprintf(spec, sizeof spec, "%s/s*.bin", shard_dir);
  expect_shards(spec, all, 3, "a glob");
  snprintf(spec, sizeof spec, "%s/s2.bin,%s/s0.bin", shard_dir, shard_dir);
  expect_shards(spec, two, 2, "a list keeps its order");
  struct data_set s;
  snprintf(spec, sizeof spec, "%s/s[01].bin", shard_dir);
  data_set_open(&s, "--data", spec, "auto", NULL, 65536);
  EXPECT(s.n_tokens == 150 && s.width == 2 && s.shards[0].layout.format == TOKENS_NANOGPT,
         "s[01]: %zu tokens of width %d", s.n_tokens, s.width);
  data_set_free(&s);
}

/* A loader over the shards as `fsdp train --data SPEC --val-fraction F` builds it. */
static void open_loader(struct data_loader *l, const char *spec, const char *val_spec, float val_fraction, int T,
                        int G, int val_batches, const char *io) {
  struct data_spec d = {.files = spec, .val_files = val_spec, .format = "auto", .io = io, .val_fraction = val_fraction,
                        .val_every = val_batches ? 1 : 0, .val_batches = val_batches ? val_batches : 1};
  data_loader_open(l, &d, 65536, 1234, T, G);
}

/* With token i of shard k equal to its base + i, a row is a window when it counts up
 * (from a multiple of T of its shard, when aligned), its targets one ahead. Returns the
 * row's first token. */
static int expect_window(const int *in, const int *tg, int T, const char *what, int row, int aligned) {
  int ok = !aligned || in[0] % 1000 % T == 0;
  for (int t = 0; t < T; t++) ok &= in[t] == in[0] + t && tg[t] == in[t] + 1;
  EXPECT(ok, "%s: row %d (from %d) is no window", what, row, in[0]);
  return in[0];
}

enum { LT = 8, LG = 6 };

static void test_loader(const char *io) {
  char spec[512];
  snprintf(spec, sizeof spec, "%s/s*.bin", shard_dir);
  struct data_loader l;
  open_loader(&l, spec, NULL, 0.0f, LT, LG, 0, io);
  /* s0: (100-1)/8 = 12 windows, s1: 6, s2: 9. */
  uint64_t E = l.train.order.windows_per_epoch;
  EXPECT(E == 27, "%s: %llu windows an epoch, want 27", io, (unsigned long long)E);
  int in[LG * LT], tg[LG * LT], part_in[LG * LT], part_tg[LG * LT];
  /* Every window once an epoch, over 9 global batches of 6 (two epochs). */
  int seen[2][3000] = {{0}};
  for (uint64_t b = 0; b < 9; b++) {
    data_loader_train_batch(&l, b, 0, LG, in, tg);
    /* The same rows read in parts, as ranks and micro-batches read them. */
    data_loader_train_batch(&l, b, 0, 2, part_in, part_tg);
    data_loader_train_batch(&l, b, 2, 3, part_in + 2 * LT, part_tg + 2 * LT);
    data_loader_train_batch(&l, b, 5, 1, part_in + 5 * LT, part_tg + 5 * LT);
    EXPECT(memcmp(in, part_in, sizeof in) == 0 && memcmp(tg, part_tg, sizeof tg) == 0,
           "%s: batch %llu read in parts differs", io, (unsigned long long)b);
    for (int j = 0; j < LG; j++) {
      int first = expect_window(in + j * LT, tg + j * LT, LT, io, j, 1);
      uint64_t u = b * LG + (uint64_t)j;
      if (first >= 0 && first < 3000) seen[u / E][first]++;
    }
    EXPECT(data_loader_epoch(&l, b) == b * LG / E, "%s: batch %llu in epoch %llu", io, (unsigned long long)b,
           (unsigned long long)data_loader_epoch(&l, b));
  }
  int complete = 1;
  for (int e = 0; e < 2; e++)
    for (int k = 0; k < 3; k++)
      for (int w = 0; w < (k == 0 ? 12 : k == 1 ? 6 : 9); w++) complete &= seen[e][k * 1000 + w * LT] == 1;
  EXPECT(complete, "%s: an epoch does not read every window once", io);

  /* A resumed run: batch 7 seeks to where batch 7 starts, and reads it again. */
  struct data_position p = data_loader_position(&l, 7);
  EXPECT(p.epoch == 1 && p.epoch_window == 7 * LG - E, "%s: batch 7 at epoch %llu window %llu", io,
         (unsigned long long)p.epoch, (unsigned long long)p.epoch_window);
  data_loader_train_batch(&l, 7, 0, LG, in, tg);
  struct data_loader resumed;
  open_loader(&resumed, spec, NULL, 0.0f, LT, LG, 0, io);
  EXPECT(data_loader_seek(&resumed, 7, p) == 0, "%s: batch 7's position refused", io);
  data_loader_train_batch(&resumed, 7, 0, LG, part_in, part_tg);
  EXPECT(memcmp(in, part_in, sizeof in) == 0, "%s: the resumed loader reads another batch 7", io);
  /* A position past the epochs the order places (a checkpoint's made up, found by the
   * checkpoint fuzzer) is refused, not taken to an internal check. */
  uint64_t epochs = data_order_epochs(&resumed.train.order);
  EXPECT(epochs == 1ull << 28, "%s: %llu epochs placed, want 2^28", io, (unsigned long long)epochs);
  EXPECT(data_loader_seek(&resumed, 7, (struct data_position){epochs, 0}) != 0 &&
             data_loader_seek(&resumed, 7, (struct data_position){epochs - 1, E}) != 0,
         "%s: a position past the order's epochs accepted", io);
  data_loader_free(&resumed);
  data_loader_free(&l);

  /* --val-fraction over the shards in order: the last 0.2 of 230 tokens, 46, are s2's
   * last; its windows step from the split, token 34 of s2. */
  open_loader(&l, spec, NULL, 0.2f, LT, 2, 2, io);
  EXPECT(l.val_windows == 5, "%s: %zu validation windows, want 5 (45 tokens)", io, l.val_windows);
  for (uint64_t b = 0; b < 2; b++) {
    data_loader_val_batch(&l, b, 0, 2, in, tg);
    for (int j = 0; j < 2; j++) {
      expect_window(in + j * LT, tg + j * LT, LT, "val", j, 0);
      int want = 2000 + 34 + (int)(b * 2 + (uint64_t)j) * LT;
      EXPECT(in[j * LT] == want, "%s: validation batch %llu row %d from %d, want %d", io, (unsigned long long)b, j,
             in[j * LT], want);
    }
  }
  data_loader_free(&l);
}

static void test_bad_id_read(void) {
  const uint16_t tokens[] = {1, 2, 3, 4, 5, 600, 7, 8, 9, 10};
  const char *path = write_nanogpt("bad_id.bin", tokens, 10);
  struct data_set s;
  data_set_open(&s, "--data", path, "auto", NULL, 500);
  struct data_reader r;
  data_reader_init(&r, &s, DATA_IO_PREAD, 500);
  int in[4], tg[4];
  data_reader_window(&r, 0, 0, 4, in, tg);
  EXPECT(in[3] == 4 && tg[3] == 5, "window 0: %d -> %d", in[3], tg[3]);
  data_reader_free(&r);
  data_set_free(&s);
}

/* The process's resident pages of file mappings (/proc/self/status's RssFile), in KiB. */
static long rss_file_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "RssFile: %ld", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

/* --data-io mmap keeps a rank's RSS flat on a shard the page cache holds (read once
 * before, as by an earlier epoch or another rank): the kernel maps cached neighbours of
 * each faulted page too, which must be dropped with the window's own. 2000 windows spread
 * over 64 MiB grew RssFile by 14 MiB when only the window's pages were dropped. */
static void test_mmap_rss(void) {
  enum { T = 64, WINDOWS = 2000 };
  const size_t n = (size_t)32 << 20; /* uint16 tokens, all 0: a sparse nanoGPT file */
  const char *path = temp_file_write("sparse.bin", "", 0);
  FILE *f = fopen(path, "r+b");
  EXPECT(f && ftruncate(fileno(f), (off_t)(2 * n)) == 0, "%s: cannot make it %zu bytes", path, 2 * n);
  static char chunk[1 << 16];
  while (f && fread(chunk, 1, sizeof chunk, f) == sizeof chunk) {
  }
  if (f) fclose(f);
  struct data_set s;
  data_set_open(&s, "--data", path, "nanogpt", NULL, 256);
  struct data_reader r;
  data_reader_init(&r, &s, DATA_IO_MMAP, 256);
  int in[T], tg[T];
  data_reader_window(&r, 0, 0, T, in, tg);
  long before = rss_file_kib();
  for (size_t w = 0; w < WINDOWS; w++) data_reader_window(&r, 0, w * (n / WINDOWS), T, in, tg);
  long grown = rss_file_kib() - before;
  EXPECT(before >= 0 && grown < 1024, "mmap: RssFile grew by %ld KiB over %d windows (from %ld KiB)", grown,
         WINDOWS, before);
  data_reader_free(&r);
  data_set_free(&s);
}

/* A shard that shrinks under a run (another process truncates it) ends the job naming it,
 * by either way of reading: the reader has read a window deep in it, the file is cut to
 * 4000 bytes, and the next window past the cut must end the child with the message (exit
 * 1), never a signal (--data-io mmap died of SIGBUS: exit 135). */
struct shrink_case {
  const char *path;
  enum data_io io;
};

static void read_across_a_cut(const void *arg) {
  const struct shrink_case *c = arg;
  enum { T = 16 };
  struct data_set s;
  data_set_open(&s, "--data", c->path, "nanogpt", NULL, 65536);
  struct data_reader r;
  data_reader_init(&r, &s, c->io, 65536);
  int in[T], tg[T];
  data_reader_window(&r, 0, 100000, T, in, tg);
  if (truncate(c->path, 4000) != 0) exit(3);
  data_reader_window(&r, 0, 200000, T, in, tg);
}

static void test_shard_shrinks(enum data_io io, const char *name) {
  enum { N = 1 << 18 };
  uint16_t *tokens = calloc(N, sizeof *tokens);
  for (size_t i = 0; i < N; i++) tokens[i] = (uint16_t)(i % 1000);
  struct shrink_case c = {write_nanogpt(io == DATA_IO_MMAP ? "shrinks_mmap.bin" : "shrinks_pread.bin", tokens, N), io};
  free(tokens);
  char message[4096];
  int status = run_in_child(read_across_a_cut, &c, message, sizeof message);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1,
         "%s: a shard cut under the reader ended it with %s %d, not exit 1 (stderr: %s)", name,
         WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
         message);
  EXPECT(strstr(message, c.path) && strstr(message, "shrank while it was read"), "%s: message lacks the file: %s",
         name, message);
}

/* --val-data that is --data's own file: said (rank 0's log) rather than measured silently
 * on the training windows. */
static void open_val_on_train(const void *path) {
  dup2(STDERR_FILENO, STDOUT_FILENO);
  struct data_spec d = {.files = path, .val_files = path, .format = "auto", .io = "pread", .val_every = 1,
                        .val_batches = 1};
  struct data_loader l;
  data_loader_open(&l, &d, 256, 0, 4, 2);
  data_loader_free(&l);
}

static void test_val_shares_data(void) {
  const uint16_t tokens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  const char *path = write_nanogpt("shared.bin", tokens, 20);
  char message[4096];
  run_in_child(open_val_on_train, path, message, sizeof message);
  EXPECT(strstr(message, "warning: --val-data's") && strstr(message, "is --data's"),
         "--val-data and --data of one file: no warning in %s", message);
}

/* ---- bad files: the job must end, with a message that names the problem ---- */

/* A case: the whole file loaded, or --data (and --val-data) opened for training, or the
 * file streamed and each window read. */
enum case_kind { LOAD, OPEN, STREAM };
struct load_case {
  enum case_kind kind;
  const char *path, *format;
  int vocab_size;
  int seq_len;       /* OPEN, STREAM */
  float val_fraction; /* OPEN */
  const char *val_path;
  int val_batches;   /* OPEN: > 0 validates */
};

static void run_load_case(const struct load_case *c) {
  if (c->kind == LOAD) {
    struct token_data d;
    token_data_load(&d, c->path, c->format, c->vocab_size);
    return;
  }
  struct data_spec d = {.files = c->path, .val_files = c->val_path, .format = c->format, .io = "pread",
                        .val_fraction = c->val_fraction, .val_every = c->val_batches > 0,
                        .val_batches = c->val_batches > 0 ? c->val_batches : 1};
  struct data_loader l;
  data_loader_open(&l, &d, c->vocab_size, 0, c->seq_len, 2);
  int in[64], tg[64];
  for (uint64_t b = 0; c->kind == STREAM && b < l.train.order.windows_per_epoch; b++)
    data_loader_train_batch(&l, b, 0, 2, in, tg);
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
  const uint16_t with_bad[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 300, 15, 16, 17, 18, 19, 20};
  const char *bad_id = write_llmc("bad_id_llmc.bin", 20240520, 1, 20, with_bad, 20);
  char spec[1024];

  expect_fatal("missing file", &(struct load_case){.kind = LOAD, .path = missing, .format = "auto", .vocab_size = 256}, missing, "No such file");
  expect_fatal("empty file", &(struct load_case){.kind = LOAD, .path = empty, .format = "auto", .vocab_size = 256}, empty, "empty");
  expect_fatal("short llm.c file", &(struct load_case){.kind = LOAD, .path = short_llmc, .format = "auto", .vocab_size = 256}, short_llmc, "too short");
  expect_fatal("llm.c count mismatch", &(struct load_case){.kind = LOAD, .path = mismatch, .format = "auto", .vocab_size = 256}, mismatch, "11 tokens");
  expect_fatal("llm.c version", &(struct load_case){.kind = LOAD, .path = bad_version, .format = "auto", .vocab_size = 256}, bad_version, "version 3");
  expect_fatal("wrong magic", &(struct load_case){.kind = LOAD, .path = not_llmc, .format = "llmc", .vocab_size = 256}, not_llmc, "magic 12345");
  expect_fatal("odd nanoGPT size", &(struct load_case){.kind = LOAD, .path = odd, .format = "auto", .vocab_size = 256}, odd, "odd size");
  expect_fatal("token beyond vocab", &(struct load_case){.kind = LOAD, .path = wide, .format = "auto", .vocab_size = 100}, "token id 200 at position 3",
               "vocab size 100");
  expect_fatal("llama 3 id at the vocab size", &(struct load_case){.kind = LOAD, .path = llama_vocab, .format = "auto", .vocab_size = 128256},
               "token id 128256 at position 2", "vocab size 128256");
  expect_fatal("llama 3 version", &(struct load_case){.kind = LOAD, .path = llama_version, .format = "auto", .vocab_size = 128256},
               "magic 20240801 with version 1", "version 7");
  expect_fatal("llama 3 count", &(struct load_case){.kind = LOAD, .path = llama_count, .format = "auto", .vocab_size = 128256},
               "header says 5 tokens (20 bytes of Llama 3's uint32", "16 bytes follow");
  expect_fatal("llama 3 header, uint16 body", &(struct load_case){.kind = LOAD, .path = llama_as_gpt2, .format = "auto", .vocab_size = 128256},
               "says 10 tokens (40 bytes", "20 bytes follow");
  expect_fatal("an llm.c header of another kind", &(struct load_case){.kind = LOAD, .path = eval_file, .format = "auto", .vocab_size = 65536},
               "looks like llm.c's (magic 20240522, version 1)", "--data-format");
  /* A magic damaged, the count still that of the tokens after the header: it was read as
   * nanoGPT's uint16, the header's 512 "tokens" trained on. */
  expect_fatal("an llm.c header with a damaged magic", &(struct load_case){.kind = LOAD, .path = not_llmc, .format = "auto", .vocab_size = 65536},
               "looks like llm.c's (magic 12345, version 1)", "--data-format");

  /* Opened as shards: every header is checked at the start, the shards named. */
  snprintf(spec, sizeof spec, "%s,%s", small, mismatch);
  expect_fatal("a bad shard among good ones", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 256, .seq_len = 4}, mismatch, "11 tokens");
  snprintf(spec, sizeof spec, "%s,%s", small, llama_count);
  expect_fatal("a bad Llama shard", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 128256, .seq_len = 4}, llama_count, "header says 5");
  const char *llama_ok = write_llmc_wide("llama_ok.bin", 20240801, 7, 4, llama, 4, 4);
  snprintf(spec, sizeof spec, "%s,%s", small, llama_ok);
  expect_fatal("shards of two token widths", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 200000, .seq_len = 2}, "4-byte tokens",
               "same token width");
  snprintf(spec, sizeof spec, "%s/none_*.bin", shard_dir);
  expect_fatal("a glob matching nothing", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 256, .seq_len = 4}, "none_*.bin",
               "matches no file");
  const char *no_bins = temp_file_path("no_bins");
  if (mkdir(no_bins, 0700) != 0) exit(2);
  temp_file_write("no_bins/a.txt", "text", 4);
  expect_fatal("a folder without .bin files", &(struct load_case){.kind = OPEN, .path = no_bins, .format = "auto", .vocab_size = 256, .seq_len = 4}, no_bins,
               "holds no .bin file");
  snprintf(spec, sizeof spec, "%s,%s", small, small);
  expect_fatal("a file given twice", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 256, .seq_len = 4}, small, "given twice");
  /* A hard link is the same file under another name (main read it twice an epoch). */
  const char *linked = temp_file_path("small_link.bin");
  if (link(small, linked) != 0) exit(2);
  snprintf(spec, sizeof spec, "%s,%s", small, linked);
  expect_fatal("a file and its hard link", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 256, .seq_len = 4}, linked,
               "given twice (as '");
  /* A comma in a file's name cuts the entry: the message says how to name it. */
  write_nanogpt("with,comma.bin", tokens, 10);
  const char *comma = temp_file_path("with,comma.bin");
  expect_fatal("a file whose name holds a comma", &(struct load_case){.kind = OPEN, .path = comma, .format = "auto", .vocab_size = 256, .seq_len = 4},
               "commas separate the entries", "'a?b.bin' for a,b.bin");
  snprintf(spec, sizeof spec, "%s,,%s", small, small);
  expect_fatal("an empty entry", &(struct load_case){.kind = OPEN, .path = spec, .format = "auto", .vocab_size = 256, .seq_len = 4}, "--data", "empty entry");
  expect_fatal("short training split", &(struct load_case){.kind = OPEN, .path = small, .format = "auto", .vocab_size = 256, .seq_len = 16}, "training split",
               "--seq-len 16");
  expect_fatal("short validation split", &(struct load_case){.kind = OPEN, .path = small, .format = "auto", .vocab_size = 256, .seq_len = 4, .val_fraction = 0.3f}, "validation split",
               "--val-fraction");
  expect_fatal("too few validation windows", &(struct load_case){.kind = OPEN, .path = small, .format = "auto", .vocab_size = 256, .seq_len = 2, .val_fraction = 0.3f, .val_path = NULL, .val_batches = 2},
               "--val-batches 2", "need 4 windows");
  expect_fatal("a short --val-data", &(struct load_case){.kind = OPEN, .path = small, .format = "auto", .vocab_size = 256, .seq_len = 2, .val_fraction = 0, .val_path = short_llmc, .val_batches = 1}, short_llmc,
               "too short");
  /* Ids are checked as windows are read: the file, the byte offset and the id. */
  expect_fatal("an id beyond the vocabulary, streamed", &(struct load_case){.kind = STREAM, .path = bad_id, .format = "auto", .vocab_size = 256, .seq_len = 4},
               "bad_id_llmc.bin': token id 300 at byte offset 1050", "vocab size 256");
}

int main(void) {
  temp_files_init("data_test");
  test_shard_shrinks(DATA_IO_PREAD, "pread");
  test_shard_shrinks(DATA_IO_MMAP, "mmap");
  test_val_shares_data();
  test_text();
  test_nanogpt();
  test_llmc();
  test_llmc_llama3();
  test_permute();
  test_order();
  write_shards();
  test_data_set();
  test_loader("pread");
  test_loader("mmap");
  test_bad_id_read();
  test_mmap_rss();
  test_bad_files();
  temp_files_remove();
  return check_summary("data_test");
}

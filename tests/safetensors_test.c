/* safetensors files and sets (fsdp/safetensors.h): what is written reads back, in every
 * dtype and any element range; a set splits at its size limit, its index maps each
 * tensor to its file, and a later set removes an earlier one's files; and every
 * malformed file is refused with a message naming the file and the tensor. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/dtype.h"
#include "fsdp/safetensors.h"
#include "temp_files.h"

/* Values exact in every dtype, so that a round trip through bf16 or fp16 is exact too. */
static float value_of(size_t i, int tensor) { return (float)((int)(i % 61) - 30 + tensor) * 0.25f; }

static const struct safetensors_entry ENTRIES[] = {
    {"a.weight", DTYPE_F32, 2, {3, 5}},
    {"b.bias", DTYPE_BF16, 1, {7}},
    {"c", DTYPE_F16, 3, {2, 3, 4}},
    {"empty", DTYPE_F32, 2, {0, 4}},
    {"d.weight", DTYPE_F32, 1, {40}},
};
enum { N_ENTRIES = sizeof ENTRIES / sizeof ENTRIES[0] };

static size_t numel_of(const struct safetensors_entry *e) {
  size_t n = 1;
  for (int d = 0; d < e->ndim; d++) n *= e->shape[d];
  return n;
}

static float *values_of(int tensor) {
  size_t n = numel_of(&ENTRIES[tensor]);
  float *v = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) v[i] = value_of(i, tensor);
  return v;
}

static void write_single(const char *path) {
  struct safetensors_writer w;
  safetensors_writer_open(&w, path, ENTRIES, N_ENTRIES);
  for (int t = 0; t < N_ENTRIES; t++) {
    float *v = values_of(t);
    safetensors_write_f32(&w, ENTRIES[t].dtype, v, numel_of(&ENTRIES[t]));
    free(v);
  }
  safetensors_writer_close(&w);
}

/* Every tensor of the set whole, and every range of the first two. */
static void check_contents(const struct safetensors_set *s, const char *what) {
  check_context = what;
  for (int t = 0; t < N_ENTRIES; t++) {
    const struct safetensors_file *file;
    const struct safetensors_tensor *st = safetensors_set_find(s, ENTRIES[t].name, &file);
    EXPECT(st != NULL, "tensor %s not found", ENTRIES[t].name);
    if (!st) continue;
    size_t n = numel_of(&ENTRIES[t]);
    EXPECT(st->numel == n && st->ndim == ENTRIES[t].ndim && st->dtype == ENTRIES[t].dtype, "tensor %s: header",
           ENTRIES[t].name);
    float *got = malloc((n ? n : 1) * sizeof(float));
    safetensors_read_f32(file, st, 0, n, got);
    for (size_t i = 0; i < n; i++) EXPECT(got[i] == value_of(i, t), "%s[%zu] = %g", ENTRIES[t].name, i, got[i]);
    if (t < 2)
      for (size_t first = 0; first < n; first++)
        for (size_t count = 0; first + count <= n; count++) {
          safetensors_read_f32(file, st, first, count, got);
          for (size_t i = 0; i < count; i++) CHECK(got[i] == value_of(first + i, t));
        }
    free(got);
  }
  const struct safetensors_file *file;
  CHECK(safetensors_set_find(s, "missing", &file) == NULL);
  check_context = NULL;
}

static void test_single(void) {
  const char *path = temp_file_path("single.safetensors");
  write_single(path);
  struct stat st;
  CHECK(stat(path, &st) == 0);
  char tmp[TEMP_FILES_PATH_BYTES + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  EXPECT(stat(tmp, &st) != 0, "the temporary file %s is left", tmp);
  struct safetensors_set s;
  safetensors_set_open(&s, path);
  EXPECT(s.n_files == 1, "%d files", s.n_files);
  check_contents(&s, "one file");
  /* The data starts 8-byte aligned, as the format's own writer has it. */
  EXPECT(s.files[0].data_start % 8 == 0, "data at %llu", (unsigned long long)s.files[0].data_start);
  safetensors_set_close(&s);
}

/* A limit of 100 bytes: a.weight and b.bias (60 + 14), c and empty (48 + 0), d.weight
 * (160, over the limit) alone. */
static void test_sharded(void) {
  const char *dir = temp_files_dir;
  /* An earlier single-file export in the folder: the set must replace it. */
  char single[TEMP_FILES_PATH_BYTES];
  snprintf(single, sizeof single, "%s", temp_file_path("model.safetensors"));
  write_single(single);
  const char *index = temp_file_path("model.safetensors.index.json");
  const char *parts[3] = {temp_file_path("model-00001-of-00003.safetensors"),
                          temp_file_path("model-00002-of-00003.safetensors"),
                          temp_file_path("model-00003-of-00003.safetensors")};
  struct safetensors_set_writer w;
  safetensors_set_writer_open(&w, dir, ENTRIES, N_ENTRIES, 100);
  for (int t = 0; t < N_ENTRIES; t++) {
    float *v = values_of(t);
    safetensors_set_write_f32(&w, v, numel_of(&ENTRIES[t]));
    free(v);
  }
  safetensors_set_writer_close(&w);
  struct stat st;
  EXPECT(stat(single, &st) != 0, "the earlier %s is left beside the new set", single);
  for (int k = 0; k < 3; k++) EXPECT(stat(parts[k], &st) == 0, "%s is missing", parts[k]);

  const char *opened_as[] = {dir, index};
  for (int i = 0; i < 2; i++) {
    struct safetensors_set s;
    safetensors_set_open(&s, opened_as[i]);
    EXPECT(s.n_files == 3, "%s: %d files", opened_as[i], s.n_files);
    check_contents(&s, opened_as[i]);
    const struct safetensors_file *file;
    if (safetensors_set_find(&s, "d.weight", &file))
      EXPECT(strcmp(file->path + strlen(file->path) - strlen("00003-of-00003.safetensors"),
                    "00003-of-00003.safetensors") == 0,
             "d.weight in %s", file->path);
    safetensors_set_close(&s);
  }
  /* And back to one file: the parts and the index go. */
  safetensors_set_writer_open(&w, dir, ENTRIES, N_ENTRIES, 1 << 20);
  for (int t = 0; t < N_ENTRIES; t++) {
    float *v = values_of(t);
    safetensors_set_write_f32(&w, v, numel_of(&ENTRIES[t]));
    free(v);
  }
  safetensors_set_writer_close(&w);
  EXPECT(stat(index, &st) != 0 && stat(parts[0], &st) != 0, "the sharded set is left beside model.safetensors");
  struct safetensors_set s;
  safetensors_set_open(&s, dir);
  check_contents(&s, "one file again");
  safetensors_set_close(&s);
}

/* ---- malformed files ---- */

typedef void open_fn(const char *path);
static void open_file(const char *path) {
  struct safetensors_file f;
  safetensors_open(&f, path);
}
static void open_set(const char *path) {
  struct safetensors_set s;
  safetensors_set_open(&s, path);
}
/* Opens path and reads every tensor of it. */
static void read_all(const char *path) {
  struct safetensors_file f;
  safetensors_open(&f, path);
  float v[64];
  for (int t = 0; t < f.n_tensors; t++) safetensors_read_f32(&f, &f.tensors[t], 0, 0, v);
}

/* Runs open(path) in a child with stderr captured: it must exit 1 with a message that
 * starts with "fsdp: error: PATH: " and goes on with want. */
struct open_call {
  open_fn *open;
  const char *path;
};
static void call_open(const void *arg) {
  const struct open_call *c = arg;
  c->open(c->path);
}

static void expect_refused(const char *what, open_fn *open, const char *path, const char *want) {
  char message[4096];
  int status = run_in_child(call_open, &(struct open_call){open, path}, message, sizeof message);
  char expected[1024];
  snprintf(expected, sizeof expected, "fsdp: error: %s: %s", path, want);
  int refused = WIFEXITED(status) && WEXITSTATUS(status) == 1;
  int named = strncmp(message, expected, strlen(expected)) == 0;
  EXPECT(refused, "%s: not refused (stderr: %s)", what, message);
  EXPECT(named, "%s: message '%s', want it to start with '%s'", what, message, expected);
  if (refused && named) printf("ok   %s: %s", what, message);
}

static const char *bad_path;

/* A file of the length field, the header and data_bytes zero bytes. */
static void write_file(uint64_t length, const char *header, size_t data_bytes) {
  size_t n = strlen(header);
  unsigned char *bytes = calloc(8 + n + data_bytes, 1);
  for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)(length >> (8 * i));
  memcpy(bytes + 8, header, n);
  FILE *f = fopen(bad_path, "wb");
  if (!f || fwrite(bytes, 1, 8 + n + data_bytes, f) != 8 + n + data_bytes || fclose(f) != 0) exit(2);
  free(bytes);
}

static void refused_header(const char *what, const char *header, size_t data_bytes, const char *want) {
  write_file(strlen(header), header, data_bytes);
  expect_refused(what, open_file, bad_path, want);
}

static void test_malformed(void) {
  bad_path = temp_file_path("bad.safetensors");
  write_file(0, "", 0);
  FILE *f = fopen(bad_path, "wb");
  if (!f || fwrite("abc", 1, 3, f) != 3 || fclose(f) != 0) exit(2);
  expect_refused("too short", open_file, bad_path, "3 bytes, too short");
  write_file(1000, "{}", 0);
  expect_refused("length past the end", open_file, bad_path, "header length 1000 is not possible");
  write_file(1ull << 40, "{}", 0);
  expect_refused("huge length", open_file, bad_path, "header length 1099511627776 is not possible");
  refused_header("not JSON", "{\"a\": {\"dtype\": ", 0, "the header is not valid JSON");
  refused_header("text after the JSON", "{} x", 0, "the header has text after its JSON value");
  refused_header("not an object", "[1, 2]", 0, "the header is not a JSON object");
  refused_header("tensor not an object", "{\"a\": 3}", 0, "tensor 'a': not a JSON object");
  refused_header("no dtype", "{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "tensor 'a': no \"dtype\"");
  refused_header("no shape", "{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4, "tensor 'a': no \"shape\"");
  refused_header("no offsets", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4, "tensor 'a': no \"data_offsets\"");
  refused_header("dtype not a string", "{\"a\": {\"dtype\": 4, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'a': \"dtype\" is not a string");
  refused_header("unknown dtype", "{\"a\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'a': unknown dtype 'Q4'");
  refused_header("shape not an array", "{\"a\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'a': \"shape\" is not an array");
  refused_header("negative dimension", "{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'a': a \"shape\" entry is not a non-negative integer");
  refused_header("fractional dimension", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}",
                 4, "tensor 'a': a \"shape\" entry is not a non-negative integer");
  refused_header("one offset", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4]}}", 4,
                 "tensor 'a': \"data_offsets\" is not an array [begin, end]");
  refused_header("offset a string", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, \"4\"]}}", 4,
                 "tensor 'a': a \"data_offsets\" entry is not a non-negative integer");
  refused_header("end before begin", "{\"a\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [4, 0]}}", 4,
                 "tensor 'a': data_offsets [4, 0] end before they begin");
  refused_header("size not shape x dtype", "{\"a\": {\"dtype\": \"BF16\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}}",
                 24, "tensor 'a': data_offsets [0, 24] hold 24 bytes, but shape [2, 3] of BF16 needs 12");
  refused_header("overlap",
                 "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                 " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                 12, "tensor 'b': data_offsets [4, 12] overlap tensor 'a'");
  refused_header("gap",
                 "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                 " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}",
                 12, "tensor 'b': data_offsets [8, 12] leave bytes 4 to 8 to no tensor");
  refused_header("past the end", "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 8,
                 "tensor 'a': data_offsets [0, 16] pass the end of the data (8 bytes)");
  refused_header("bytes after the last", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 12,
                 "the data's last 8 bytes (from byte 4) belong to no tensor");
  refused_header("twice",
                 "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                 " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                 8, "tensor 'a' appears twice in the header");
  refused_header("metadata not strings", "{\"__metadata__\": {\"format\": 1}}", 0,
                 "\"__metadata__\": \"format\" is not a string");
  write_file(strlen("{\"ids\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}"),
             "{\"ids\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8);
  expect_refused("an I64 read as parameters", read_all, bad_path,
                 "tensor 'ids': dtype I64 cannot be read as parameters (F32, BF16 or F16 can)");

  /* Sets: an index whose map names a file without the tensor, one with no map, a folder with neither file. */
  const char *index = temp_file_path("bad.index.json");
  char text[512];
  snprintf(text, sizeof text, "{\"weight_map\": {\"x\": \"bad.safetensors\"}}");
  temp_file_write("bad.index.json", text, strlen(text));
  expect_refused("index maps a missing tensor", open_set, index, "weight_map: tensor 'x' is not in");
  snprintf(text, sizeof text, "{\"metadata\": {}}");
  temp_file_write("bad.index.json", text, strlen(text));
  expect_refused("index without a map", open_set, index, "no \"weight_map\" object");
  snprintf(text, sizeof text, "{\"weight_map\": {\"x\": \"../y.safetensors\"}}");
  temp_file_write("bad.index.json", text, strlen(text));
  expect_refused("index names a file elsewhere", open_set, index,
                 "weight_map: tensor 'x': '../y.safetensors' is not a file name beside the index");
  char folder[TEMP_FILES_PATH_BYTES];
  snprintf(folder, sizeof folder, "%s", temp_file_path("empty-folder"));
  if (mkdir(folder, 0755) != 0) exit(2);
  expect_refused("folder without a model", open_set, folder,
                 "a folder with neither model.safetensors nor model.safetensors.index.json");
}

int main(void) {
  temp_files_init("safetensors_test");
  test_single();
  test_sharded();
  test_malformed();
  temp_files_remove();
  return check_summary("safetensors_test");
}

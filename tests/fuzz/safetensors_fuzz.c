/* A safetensors file: its header checked whole on opening, then every readable tensor
 * read whole and over a range of its elements, which must be the same values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/safetensors.h"
#include "fuzz.h"

static char *path;

static void read_tensor(const struct safetensors_file *f, const struct safetensors_tensor *t) {
  size_t n = (size_t)t->numel;
  float *whole = malloc((n + 1) * sizeof *whole);
  if (!whole) fuzz_finding("out of memory");
  safetensors_read_f32(f, t, 0, n, whole);
  size_t first = n / 3, count = n - first - n / 4;
  float *part = malloc((count + 1) * sizeof *part);
  if (!part) fuzz_finding("out of memory");
  safetensors_read_f32(f, t, first, count, part);
  if (memcmp(part, whole + first, count * sizeof *part) != 0)
    fuzz_finding("tensor '%s': elements [%zu, %zu) read alone differ from the whole", t->name, first, first + count);
  free(part);
  free(whole);
}

static void read_file(void *context) {
  (void)context;
  struct safetensors_file f;
  safetensors_open(&f, path);
  for (int i = 0; i < f.n_tensors; i++) {
    const struct safetensors_tensor *t = &f.tensors[i];
    if (safetensors_find(&f, t->name) != t) fuzz_finding("tensor '%s' is not found by its name", t->name);
    if (t->readable) read_tensor(&f, t);
  }
  safetensors_close(&f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("model.safetensors");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  fuzz_read(read_file, NULL);
  return 0;
}

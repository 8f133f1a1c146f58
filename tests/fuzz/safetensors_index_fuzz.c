/* A model.safetensors.index.json beside two small valid files that fsdp wrote: the
 * files it names opened, each tensor it maps looked for in its file. */
#include <stdint.h>
#include <stdlib.h>

#include "fsdp/safetensors.h"
#include "fuzz.h"

static char *index_path;

/* model-00001-of-00002.safetensors holds "a", model-00002-of-00002.safetensors "b" and "c". */
static void write_files(void) {
  static const struct safetensors_entry entries[] = {
      {"a", DTYPE_F32, 2, {2, 3}}, {"b", DTYPE_BF16, 1, {4}}, {"c", DTYPE_F16, 0, {0}}};
  struct safetensors_set_writer w;
  safetensors_set_writer_open(&w, fuzz_dir(), entries, 3, 24);
  const float values[6] = {1, 2, 3, 4, 5, 6};
  safetensors_set_write_f32(&w, values, 6);
  safetensors_set_write_f32(&w, values, 4);
  safetensors_set_write_f32(&w, values, 1);
  safetensors_set_writer_close(&w);
}

static void read_set(void *context) {
  (void)context;
  struct safetensors_set s;
  safetensors_set_open(&s, index_path);
  const struct safetensors_file *file;
  for (int k = 0; k < s.n_files; k++)
    for (int i = 0; i < s.files[k].n_tensors; i++)
      if (!safetensors_set_find(&s, s.files[k].tensors[i].name, &file))
        fuzz_finding("tensor '%s' of %s is not found in the set", s.files[k].tensors[i].name, s.files[k].path);
  safetensors_set_close(&s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  write_files();
  index_path = fuzz_path("model.safetensors.index.json");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(index_path, data, size);
  fuzz_read(read_set, NULL);
  return 0;
}

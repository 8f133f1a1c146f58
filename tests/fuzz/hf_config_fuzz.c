/* A Hugging Face config.json as --init-from reads it beside a model's safetensors: its
 * family by model_type, its shape, the runtime's checks of it; then the names of the
 * tensors such a model has. */
#include <stdint.h>
#include <stdlib.h>

#include "fsdp/hf.h"
#include "fuzz.h"

static char *config_path;

/* Layers enough for every pattern of the tables, few enough to stay fast. */
enum { MAX_LISTED_LAYERS = 64 };

static void read_config(void *context) {
  (void)context;
  struct model_config c;
  char *found;
  const struct model_family *f = hf_config_load(fuzz_dir(), &c, &found);
  if (!f) fuzz_finding("a folder with config.json read as having none");
  free(found);
  if (c.n_layer > MAX_LISTED_LAYERS) return;
  int n;
  free(hf_tensor_list(f, &c, &n));
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  config_path = fuzz_path("config.json");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(config_path, data, size);
  fuzz_read(read_config, NULL);
  return 0;
}

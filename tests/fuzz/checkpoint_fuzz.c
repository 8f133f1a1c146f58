/* A checkpoint as `fsdp eval --checkpoint` reads it: the input is its metadata.json,
 * then, after a NUL byte (which no JSON text holds), rank-00000.bin. The model the
 * metadata describes is read (checkpoint_model_read); then the weights are loaded into a
 * fixed small GPT-2 on the meta device, as rank 0 of 2 (checkpoint_load_weights: the
 * metadata checked against the model, each file's size and CRC-32C, the pieces that
 * intersect rank 0's shards read). corpus/checkpoint/ holds a checkpoint of that model
 * that `fsdp train` wrote. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpointing.h"
#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fuzz.h"

/* The flags the seed was trained with: --model gpt2-tiny --n-layer 1 --n-head 1
 * --n-embd 4 --vocab-size 8 --block-size 4 */
static const struct model_config MODEL = {
    .n_layer = 1, .n_head = 1, .n_embd = 4, .vocab_size = 8, .max_seq_len = 4};

static char *step_dir, *metadata_path, *rank_file_path;
static struct fsdp_model model;
static void *gpt2; /* the family's model, kept for the process's lifetime like fsdp's own */

static void read_model(void *context) {
  (void)context;
  struct model_config c;
  checkpoint_model_read(step_dir, &c);
}

static void load_weights(void *context) {
  (void)context;
  checkpoint_load_weights(step_dir, &model);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  step_dir = fuzz_path("step-00000001");
  if (mkdir(step_dir, 0700) != 0) fuzz_finding("cannot make %s", step_dir);
  metadata_path = fuzz_path("step-00000001/metadata.json");
  rank_file_path = fuzz_path("step-00000001/rank-00000.bin");
  struct device *meta = device_open(DEVICE_META, DEVICE_CPU);
  fsdp_model_init(&model, meta, comm_meta_group(meta, 2, 0), SHARD_FULL, NULL, NULL);
  gpt2 = model_family_by_name("gpt2")->create(&MODEL, &model, 1, MODEL.max_seq_len, 0);
  fsdp_model_wrap(&model, &FSDP_WRAP_DEFAULT);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t json = nul ? (size_t)(nul - data) : size;
  fuzz_write(metadata_path, data, json);
  if (nul)
    fuzz_write(rank_file_path, nul + 1, size - json - 1);
  else
    unlink(rank_file_path);
  fuzz_read(read_model, NULL);
  fuzz_read(load_weights, NULL);
  return 0;
}

/* A checkpoint as fsdp reads it: the input is its metadata.json, then, after a NUL byte
 * (which no JSON text holds), rank-00000.bin. The model the metadata describes is read
 * (checkpoint_model_read, as `fsdp eval --checkpoint` does); the weights are loaded into a
 * fixed small GPT-2 on the meta device, as rank 0 of 2 (checkpoint_load_weights: the
 * metadata checked against the model, each file's size and CRC-32C, the pieces that
 * intersect rank 0's shards read); and the training state is read as `fsdp train --resume`
 * reads it (ckpt_meta_read, ckpt_meta_seek_data: the flags that shape training, the
 * learning-rate schedule, the data set and the data's position, the loss scale) against
 * the run that wrote corpus/checkpoint/'s seeds (tests/fuzz/make_seeds.sh): its flags, and
 * its data file, ids.bin, written here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpointing.h"
#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/train.h"
#include "fuzz.h"

/* The flags the seed was trained with: --model gpt2-tiny --n-layer 1 --n-head 1
 * --n-embd 4 --vocab-size 8 --block-size 4 */
static const struct model_config MODEL = {
    .n_layer = 1, .n_head = 1, .n_embd = 4, .vocab_size = 8, .max_seq_len = 4};

static char *step_dir, *metadata_path, *rank_file_path;
static struct fsdp_model model;
static void *gpt2; /* the family's model, kept for the process's lifetime like fsdp's own */
/* The training run a resume would be: the seeds' flags, its data, its state. */
static struct train_config config;
static struct data_loader data;
static struct lr_schedule schedule;
static int optimizer_steps;
static struct loss_scaler scaler;
static struct ckpt_parts parts;

static void read_model(void *context) {
  (void)context;
  struct model_config c;
  checkpoint_model_read(step_dir, &c);
}

static void load_weights(void *context) {
  (void)context;
  checkpoint_load_weights(step_dir, &model);
}

static void read_training_state(void *context) {
  (void)context;
  struct ckpt_meta meta;
  ckpt_meta_read(step_dir, &parts, &meta);
  ckpt_meta_seek_data(&meta, &parts);
  ckpt_meta_free(&meta);
}

/* The flags make_seeds.sh trains the seeds with: --model gpt2-tiny --n-layer 1 --n-head 1
 * --n-embd 4 --vocab-size 8 --block-size 4 --data ids.bin --data-format nanogpt --seq-len 4
 * --batch-size 1 --warmup 0, the rest their defaults. */
static void open_run(void) {
  const struct model_preset *preset = model_preset_find("gpt2-tiny");
  struct model_config c = preset->config;
  c.n_layer = MODEL.n_layer, c.n_head = MODEL.n_head, c.n_embd = MODEL.n_embd, c.vocab_size = MODEL.vocab_size;
  c.max_seq_len = MODEL.max_seq_len;
  unsigned char ids[256];
  for (int i = 0; i < 256; i++) ids[i] = (unsigned char)(i / 2 % 8 * (1 - i % 2));
  char *ids_path = fuzz_path("ids.bin");
  fuzz_write(ids_path, ids, sizeof ids);
  config = (struct train_config){
      .model = {"gpt2-tiny", preset->family, c, NULL, NULL, "cpu", SHARD_FULL},
      .seq_len = 4, .batch_size = 1, .grad_accum = 1, .steps = 5, .seed = 1337, .lr = 6e-4f, .min_lr = 6e-4f / 10,
      .weight_decay = 0.1f, .grad_clip = 1.0f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
      .data = {.files = ids_path, .format = "nanogpt", .io = "pread", .val_fraction = 0.1f, .val_batches = 4},
      .mp = {DTYPE_F32, DTYPE_F32}};
  data_loader_open(&data, &config.data, c.vocab_size, config.seed, config.seq_len, 1);
  parts = (struct ckpt_parts){&config, 1, 1, &model, &data, &schedule, &optimizer_steps, &scaler};
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
  open_run();
  /* The resume's lines (the data's position) would be one more per input. */
  if (!freopen("/dev/null", "w", stdout)) fuzz_finding("cannot silence stdout");
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
  fuzz_read(read_training_state, NULL);
  return 0;
}

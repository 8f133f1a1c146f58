/* `fsdp eval`: the mean cross-entropy of a model over fixed windows of a token file,
 * the same whatever the world size, so that it can be compared with transformers'. */
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "model_source.h"

/* Window w: inputs tokens[w T .. w T + T - 1], targets one token later. */
static void load_windows(const struct token_data *data, size_t first_window, int B, int T, int *inputs, int *targets) {
  for (int b = 0; b < B; b++) {
    size_t start = (first_window + (size_t)b) * (size_t)T;
    for (int t = 0; t < T; t++) {
      inputs[b * T + t] = (int)token_at(data->tokens, data->width, start + (size_t)t);
      targets[b * T + t] = (int)token_at(data->tokens, data->width, start + (size_t)t + 1);
    }
  }
}

int fsdp_eval_main(int argc, char **argv) {
  comm_init(&argc, &argv);
  struct train_options o;
  if (train_options_parse(OPTIONS_EVAL, &o, argc, argv)) {
    comm_finalize();
    return 0;
  }
  struct comm_group *world = comm_world();
  int rank = comm_rank(world), W = comm_size(world), B = o.batch_size, T = o.seq_len;
  /* Every rank runs the same number of forwards: their all-gathers are collective. */
  if (o.batches % W != 0)
    fsdp_fatal("--batches %d is not divisible by the world size %d (each rank evaluates as many)", o.batches, W);
  const char *too_large = o.family->batch_problem(&o.config, B, T);
  if (too_large) fsdp_fatal("%s", too_large);
  struct token_data data;
  if (o.tokenizer)
    token_data_tokenize(&data, o.data, o.tokenizer, o.config.vocab_size);
  else
    token_data_load(&data, o.data, o.data_format, o.config.vocab_size);
  size_t windows = (size_t)o.batches * (size_t)B, needed = windows * (size_t)T + 1;
  if (data.n_tokens < needed)
    fsdp_fatal("--data %s: %zu tokens, but %d batches of %d windows of %d tokens need %zu", o.data, data.n_tokens,
               o.batches, B, T, needed);

  struct source_model m;
  source_model_open(&m, &o, world, B, T, &o.mp);
  if (m.source) fsdp_log_info("parameters: from %s", m.source);

  int *inputs = fsdp_xcalloc((size_t)B * T, sizeof(int)), *targets = fsdp_xcalloc((size_t)B * T, sizeof(int));
  int per_rank = o.batches / W;
  for (int j = 0; j < per_rank; j++) {
    load_windows(&data, (size_t)(rank * per_rank + j) * (size_t)B, B, T, inputs, targets);
    o.family->forward(m.model, inputs, targets);
    o.family->release_activations(m.model);
    fsdp_model_reshard_all(&m.fsdp);
  }
  /* Every batch has B T tokens: the mean of the ranks' means is the mean over all of them. */
  double loss = fsdp_model_mean_across_ranks(&m.fsdp, o.family->take_loss(m.model));
  if (rank == 0) {
    printf("{\"loss\": %.9g, \"windows\": %zu, \"tokens\": %zu}\n", loss, windows, windows * (size_t)T);
    fflush(stdout);
  }

  free(inputs);
  free(targets);
  source_model_close(&m, &o);
  token_data_free(&data);
  comm_finalize();
  return 0;
}

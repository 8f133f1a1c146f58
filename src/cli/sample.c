/* `fsdp sample`: generation from a prompt with the model's KV cache, on one rank. The
 * model has no notion of ranks; a generation is one sequence, so there is nothing to
 * split over several, and a job of W > 1 is refused rather than run W times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/sampler.h"
#include "fsdp/text.h"
#include "fsdp/train.h"

/* Byte-level models read and print text as bytes, token id = byte. */
enum { BYTE_VOCAB = 256 };

/* The prompt's ids: --prompt-tokens; --prompt encoded by a tokenizer.json (as a document
 * starts, after its document token), or its bytes for a byte-level model. Checked
 * against the model. */
static int *prompt_ids(const struct command_options *o, const struct tokenizer_file *t, int *n) {
  int V = o->run.model.config.vocab_size, max = o->run.model.config.max_seq_len;
  if (!o->prompt == !o->prompt_tokens.ids)
    fsdp_fatal(o->prompt ? "--prompt and --prompt-tokens: give one of them, not both"
                         : "--prompt or --prompt-tokens is required (see fsdp sample --help)");
  const char *flag = o->prompt ? "--prompt" : "--prompt-tokens";
  int encoded = o->prompt && t->json;
  if (o->prompt && !encoded && V > BYTE_VOCAB)
    fsdp_fatal("--prompt: text is read as bytes, for a byte-level model (vocab at most %d); this one has %d "
               "tokens: give --prompt-tokens, or a --tokenizer tokenizer.json to encode the text",
               BYTE_VOCAB, V);
  int *ids;
  if (encoded) {
    ids = tokenizer_file_encode(t, o->prompt, n);
  } else {
    *n = o->prompt ? (int)strlen(o->prompt) : o->prompt_tokens.n;
    ids = fsdp_xcalloc((size_t)*n + 1, sizeof *ids);
    for (int i = 0; i < *n; i++) ids[i] = o->prompt ? (unsigned char)o->prompt[i] : o->prompt_tokens.ids[i];
  }
  if (*n >= max)
    fsdp_fatal("%s: %d tokens leave no room for a new one within the model's max_seq_len %d", flag, *n, max);
  for (int i = 0; i < *n; i++)
    if (ids[i] >= V) fsdp_fatal("%s: token id %d is not below the model's vocab size %d", flag, ids[i], V);
  return ids;
}

static void print_token(const struct command_options *o, const struct tokenizer_file *t, int id, int first) {
  if (o->tokenizer)
    tokenizer_file_print(t, id, stdout);
  else if (o->run.model.config.vocab_size <= BYTE_VOCAB)
    putchar(id);
  else
    printf(first ? "%d" : " %d", id);
  fflush(stdout);
}

int fsdp_sample_main(int argc, char **argv) {
  cli_start_ranks(&argc, &argv);
  struct command_options o;
  if (command_options_parse(COMMAND_SAMPLE, &o, argc, argv)) {
    comm_finalize();
    return 0;
  }
  struct comm_group *world = comm_world();
  if (comm_size(world) != 1)
    fsdp_fatal("fsdp sample runs on one rank, not %d: a generation is one sequence (launch it without mpirun -np)",
               comm_size(world));
  const struct model_spec *spec = &o.run.model;
  const struct model_config *config = &spec->config;
  struct tokenizer_file tokenizer = {0};
  if (o.tokenizer) tokenizer_file_load(&tokenizer, "--tokenizer", o.tokenizer);
  if (tokenizer.json && tokenizer.vocab_size > config->vocab_size)
    fsdp_fatal("--tokenizer '%s' has %d tokens, more than the model's vocab size %d", o.tokenizer, tokenizer.vocab_size,
               config->vocab_size);
  int n_prompt;
  int *ids = prompt_ids(&o, &tokenizer, &n_prompt);
  int total = config->max_seq_len;
  if ((long long)n_prompt + o.max_new_tokens > total)
    fprintf(stderr, "stopping at the model's max_seq_len %d: %d new tokens, not %d\n", config->max_seq_len,
            config->max_seq_len - n_prompt, o.max_new_tokens);
  else
    total = n_prompt + o.max_new_tokens;

  /* The training activations are for batches of 1 x 1: a decode step uses its own. */
  struct source_model m;
  source_model_open(&m, spec, o.run.seed, world, 1, 1, &o.run.mp);
  void *model = m.model;
  /* Notes go to stderr: stdout is the generation. */
  if (m.source) fprintf(stderr, "parameters: from %s\n", m.source);

  struct kv_cache *cache = spec->family->cache_create(model, total);
  struct sampler sampler;
  sampler_init(&sampler, config->vocab_size, o.temperature, o.top_k, o.run.seed);
  float *logits = fsdp_xcalloc((size_t)config->vocab_size, sizeof *logits);
  spec->family->decode(model, cache, ids, n_prompt, logits); /* the prompt as one step */
  for (int position = n_prompt; position < total; position++) {
    int next = sampler_next(&sampler, logits);
    if (tokenizer.json && tokenizer_file_stops_at(&tokenizer, next)) {
      size_t length;
      const unsigned char *text = text_tokenizer_bytes(tokenizer.json, next, &length);
      fprintf(stderr, "stopped at %.*s (token %d)\n", (int)length, (const char *)text, next);
      break;
    }
    print_token(&o, &tokenizer, next, position == n_prompt);
    if (position + 1 < total) spec->family->decode(model, cache, &next, 1, logits);
  }
  putchar('\n');

  free(logits);
  sampler_free(&sampler);
  spec->family->cache_free(model, cache);
  source_model_close(&m);
  if (o.tokenizer) tokenizer_file_free(&tokenizer);
  free(ids);
  command_options_free(&o);
  comm_finalize();
  return 0;
}

/* Options of train and plan that parse: the defaults, which the flag table applies
 * through each flag's own kind, are the values they were as constants, and the overlap
 * ones are the runtime's; --device; --model first whatever the order. Bad input is
 * cli_errors_test.sh's. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fsdp/cli.h"

static struct command_options parse(enum command command, int argc, char **argv) {
  struct command_options o;
  int help = command_options_parse(command, &o, argc, argv);
  EXPECT(!help, "parsing printed --help");
  return o;
}

static void test_defaults(void) {
  char *argv[] = {"plan", "--world-size", "1"};
  struct command_options options = parse(COMMAND_PLAN, 3, argv);
  const struct train_config o = options.run;
  EXPECT(strcmp(o.model.name, "shakespeare-char") == 0, "model %s", o.model.name);
  EXPECT(o.seq_len == 256 && o.batch_size == 8 && o.global_batch_size == 0 && o.steps == 50,
         "seq_len %d batch_size %d global_batch_size %d steps %d", o.seq_len, o.batch_size, o.global_batch_size,
         o.steps);
  EXPECT(o.lr == 6e-4f && o.min_lr == 6e-4f / 10 && o.warmup == 10, "lr %g min_lr %g warmup %d", o.lr, o.min_lr,
         o.warmup);
  EXPECT(o.weight_decay == 0.1f && o.grad_clip == 1.0f, "weight_decay %g grad_clip %g", o.weight_decay, o.grad_clip);
  EXPECT(o.beta1 == 0.9f && o.beta2 == 0.95f && o.eps == 1e-8f, "betas %g %g eps %g", o.beta1, o.beta2, o.eps);
  EXPECT(o.seed == 1337, "seed %llu", (unsigned long long)o.seed);
  EXPECT(!o.data.files && strcmp(o.data.format, "auto") == 0, "data format %s", o.data.format);
  EXPECT(o.data.val_fraction == 0.1f && o.data.val_every == 0 && o.data.val_batches == 4, "val %g %d %d",
         o.data.val_fraction, o.data.val_every, o.data.val_batches);
  EXPECT(o.model.sharding == SHARD_FULL, "sharding %d", (int)o.model.sharding);
  EXPECT(o.ac_every == 0 && o.mp.param_dtype == DTYPE_F32 && o.mp.reduce_dtype == DTYPE_F32 && o.loss_scale == 0,
         "ac %d dtypes %d %d loss_scale %g", o.ac_every, (int)o.mp.param_dtype, (int)o.mp.reduce_dtype,
         o.loss_scale);
  EXPECT(o.grad_accum == 1 && o.accum_mode == ACCUM_SHARDED, "grad_accum %d accum_mode %d", o.grad_accum,
         (int)o.accum_mode);
  EXPECT(o.trace_steps.first == 2 && o.trace_steps.last == 3 && o.snapshot_steps.first == 2 &&
             o.snapshot_steps.last == 3,
         "trace %d:%d snapshot %d:%d", o.trace_steps.first, o.trace_steps.last, o.snapshot_steps.first,
         o.snapshot_steps.last);
  EXPECT(!o.log_path && !o.trace_path && !o.snapshot_path, "an output file by default");
  EXPECT(strcmp(options.format, "text") == 0 && strcmp(o.model.device, "cpu") == 0, "format %s device %s",
         options.format, o.model.device);
  /* A run with no overlap flags must be the one fsdp_model_init gives for NULL overlap. */
  const struct fsdp_overlap *d = &FSDP_OVERLAP_DEFAULT;
  EXPECT(o.overlap.prefetch == d->prefetch && o.overlap.backward_prefetch == d->backward_prefetch &&
             o.overlap.max_unsharded == d->max_unsharded && o.overlap.blocking == d->blocking,
         "overlap %d %d %d %d, the runtime's %d %d %d %d", o.overlap.prefetch, (int)o.overlap.backward_prefetch,
         o.overlap.max_unsharded, o.overlap.blocking, d->prefetch, (int)d->backward_prefetch, d->max_unsharded,
         d->blocking);
}

static void test_train_defaults_match_plan(void) {
  char *train_argv[] = {"train", "--data", "tokens.bin"};
  char *plan_argv[] = {"plan", "--world-size", "1", "--data", "tokens.bin"};
  struct train_config t = parse(COMMAND_TRAIN, 3, train_argv).run;
  struct train_config p = parse(COMMAND_PLAN, 5, plan_argv).run;
  EXPECT(t.batch_size == p.batch_size && t.steps == p.steps && t.lr == p.lr &&
             strcmp(t.model.device, p.model.device) == 0,
         "train and plan start from different defaults");
  EXPECT(strcmp(t.data.files, "tokens.bin") == 0 && strcmp(p.data.files, "tokens.bin") == 0, "--data not stored");
}

static void test_device(void) {
  char *spaced[] = {"train", "--data", "tokens.bin", "--device", "cuda"};
  char *joined[] = {"plan", "--world-size", "1", "--device=cuda"};
  EXPECT(strcmp(parse(COMMAND_TRAIN, 5, spaced).run.model.device, "cuda") == 0, "train --device cuda");
  EXPECT(strcmp(parse(COMMAND_PLAN, 4, joined).run.model.device, "cuda") == 0, "plan --device=cuda");
}

static void test_model_first(void) {
  char *argv[] = {"plan", "--world-size", "1", "--n-layer", "2", "--model", "gpt2", "--block-size", "64"};
  struct train_config o = parse(COMMAND_PLAN, 9, argv).run;
  const struct model_config *c = &o.model.config;
  EXPECT(c->n_layer == 2 && c->max_seq_len == 64 && c->n_embd == 768,
         "n_layer %d max_seq_len %d n_embd %d: the preset did not go first", c->n_layer, c->max_seq_len, c->n_embd);
  EXPECT(o.seq_len == 64, "seq_len %d, want the lowered max_seq_len", o.seq_len);
}

int main(void) {
  test_defaults();
  test_train_defaults_match_plan();
  test_device();
  test_model_first();
  return check_summary("cli_options_test");
}

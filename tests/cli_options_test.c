/* Options of train and plan that parse: the defaults, which the flag table applies
 * through each flag's own parser, are the values they were as constants, and the
 * overlap ones are the runtime's; --device; --model first whatever the order; the GPU peaks of the MFU and
 * aarch64's CPU names in its cache key. Bad input is cli_errors_test.sh's. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fsdp/cli.h"
#include "mfu.h"

static struct train_options parse(enum options_command command, int argc, char **argv) {
  struct train_options o;
  int help = train_options_parse(command, &o, argc, argv);
  EXPECT(!help, "parsing printed --help");
  return o;
}

static void test_defaults(void) {
  char *argv[] = {"plan", "--world-size", "1"};
  struct train_options o = parse(OPTIONS_PLAN, 3, argv);
  EXPECT(strcmp(o.model, "shakespeare-char") == 0, "model %s", o.model);
  EXPECT(o.seq_len == 256 && o.batch_size == 8 && o.global_batch_size == 0 && o.steps == 50,
         "seq_len %d batch_size %d global_batch_size %d steps %d", o.seq_len, o.batch_size, o.global_batch_size,
         o.steps);
  EXPECT(o.lr == 6e-4f && o.min_lr == 6e-4f / 10 && o.warmup == 10, "lr %g min_lr %g warmup %d", o.lr, o.min_lr,
         o.warmup);
  EXPECT(o.weight_decay == 0.1f && o.grad_clip == 1.0f, "weight_decay %g grad_clip %g", o.weight_decay, o.grad_clip);
  EXPECT(o.beta1 == 0.9f && o.beta2 == 0.95f && o.eps == 1e-8f, "betas %g %g eps %g", o.beta1, o.beta2, o.eps);
  EXPECT(o.seed == 1337, "seed %llu", (unsigned long long)o.seed);
  EXPECT(!o.data && strcmp(o.data_format, "auto") == 0, "data_format %s", o.data_format);
  EXPECT(o.val_fraction == 0.1f && o.val_every == 0 && o.val_batches == 4, "val %g %d %d", o.val_fraction,
         o.val_every, o.val_batches);
  EXPECT(o.sharding == SHARD_FULL, "sharding %d", (int)o.sharding);
  EXPECT(o.ac_every == 0 && o.mp.param_dtype == DTYPE_F32 && o.mp.reduce_dtype == DTYPE_F32 && o.loss_scale == 0,
         "ac %d dtypes %d %d loss_scale %g", o.ac_every, (int)o.mp.param_dtype, (int)o.mp.reduce_dtype,
         o.loss_scale);
  EXPECT(o.grad_accum == 1 && o.accum_mode == ACCUM_SHARDED, "grad_accum %d accum_mode %d", o.grad_accum,
         (int)o.accum_mode);
  EXPECT(o.trace_first == 2 && o.trace_last == 3 && o.snapshot_first == 2 && o.snapshot_last == 3,
         "trace %d:%d snapshot %d:%d", o.trace_first, o.trace_last, o.snapshot_first, o.snapshot_last);
  EXPECT(!o.log_path && !o.trace_path && !o.snapshot_path, "an output file by default");
  EXPECT(strcmp(o.format, "text") == 0 && strcmp(o.device, "cpu") == 0, "format %s device %s", o.format, o.device);
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
  struct train_options t = parse(OPTIONS_TRAIN, 3, train_argv);
  struct train_options p = parse(OPTIONS_PLAN, 5, plan_argv);
  EXPECT(t.batch_size == p.batch_size && t.steps == p.steps && t.lr == p.lr && strcmp(t.device, p.device) == 0,
         "train and plan start from different defaults");
  EXPECT(strcmp(t.data, "tokens.bin") == 0 && strcmp(p.data, "tokens.bin") == 0, "--data not stored");
}

static void test_device(void) {
  char *spaced[] = {"train", "--data", "tokens.bin", "--device", "cuda"};
  char *joined[] = {"plan", "--world-size", "1", "--device=cuda"};
  EXPECT(strcmp(parse(OPTIONS_TRAIN, 5, spaced).device, "cuda") == 0, "train --device cuda");
  EXPECT(strcmp(parse(OPTIONS_PLAN, 4, joined).device, "cuda") == 0, "plan --device=cuda");
}

static void test_model_first(void) {
  char *argv[] = {"plan", "--world-size", "1", "--n-layer", "2", "--model", "gpt2", "--block-size", "64"};
  struct train_options o = parse(OPTIONS_PLAN, 9, argv);
  EXPECT(o.config.n_layer == 2 && o.config.max_seq_len == 64 && o.config.n_embd == 768,
         "n_layer %d max_seq_len %d n_embd %d: the preset did not go first", o.config.n_layer, o.config.max_seq_len,
         o.config.n_embd);
  EXPECT(o.seq_len == 64, "seq_len %d, want the lowered max_seq_len", o.seq_len);
}

/* A GPU's peak by the names cudaGetDeviceProperties gives (src/cli/mfu.c): the PCIe and
 * NVL H100 are not taken for the SXM one, an A100 for an A10, an L40S for an L40, a GB200
 * for a B200 nor a GH200 for an H200; a card the table lacks (the A10G, GeForce cards but
 * the 5090) or has no figure for (the RTX PRO 6000 Blackwell Max-Q) has none. */
static void test_gpu_peaks(void) {
  static const struct {
    const char *model;
    double gflops;
  } cards[] = {
      {"NVIDIA A100-SXM4-80GB", 312e3},
      {"NVIDIA A100 80GB PCIe", 312e3},
      {"NVIDIA A100-PCIE-40GB", 312e3},
      {"NVIDIA A10", 125e3},
      {"NVIDIA A10G", 0.0},
      {"NVIDIA A40", 149.7e3},
      {"NVIDIA L4", 121e3},
      {"NVIDIA L40", 181.05e3},
      {"NVIDIA L40S", 362.05e3},
      {"NVIDIA RTX 6000 Ada Generation", 364.2e3},
      {"NVIDIA H100 80GB HBM3", 989e3},
      {"NVIDIA H100 PCIe", 756e3},
      {"NVIDIA H100 NVL", 835e3},
      {"NVIDIA H200", 989e3},
      {"NVIDIA H200 NVL", 835e3},
      {"NVIDIA GH200 480GB", 989e3},
      {"NVIDIA B200", 2250e3},
      {"NVIDIA GB200", 2500e3},
      {"NVIDIA GeForce RTX 5090", 209.5e3},
      {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 503.8e3},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", 503.8e3},
      {"NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 0.0},
      {"NVIDIA GeForce RTX 4090", 0.0},
      {"", 0.0},
  };
  for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
    double got = mfu_gpu_peak_gflops(cards[i].model);
    EXPECT(got == cards[i].gflops, "peak of '%s': %g GFLOP/s, want %g", cards[i].model, got, cards[i].gflops);
  }
}

/* aarch64's CPU names for the peak cache's key (src/cli/mfu.c), from /proc/cpuinfo as
 * Graviton 3, Grace, AmpereOne and an unknown part write it, and where it has a model
 * name only or nothing of either. */
static void test_arm_cpu_names(void) {
  static const struct {
    const char *cpuinfo, *name;
  } cases[] = {
      {"processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\n"
       "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\nCPU revision\t: 1\n\n"
       "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
       "ARM Neoverse-V1"},
      {"processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n", "ARM Neoverse-V2"},
      {"CPU implementer\t: 0xc0\nCPU part\t: 0xac3", "Ampere Ampere-1"},
      {"CPU implementer\t: 0x4e\nCPU part\t: 0x004\n", "aarch64 implementer 0x4e part 0x004"},
      {"processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu\n",
       "Intel(R) Xeon(R) CPU @ 2.20GHz"},
      {"processor\t: 0\ncpu\t\t: POWER9\n", "unknown"},
      {"", "unknown"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[64];
    mfu_cpu_name_from_cpuinfo(cases[i].cpuinfo, name, sizeof name);
    EXPECT(strcmp(name, cases[i].name) == 0, "case %zu: '%s', want '%s'", i, name, cases[i].name);
  }
}

int main(void) {
  test_defaults();
  test_train_defaults_match_plan();
  test_device();
  test_model_first();
  test_gpu_peaks();
  test_arm_cpu_names();
  return check_summary("cli_options_test");
}

/* A log of `fsdp train --log` (JSON Lines, a step a line) as `fsdp plan --calibrate LOG`
 * reads it (plan_calibrate): its steps after the first two fitted to a plan of the run that
 * wrote corpus/train_log/'s seeds (tests/fuzz/make_seeds.sh), its options parsed as
 * `fsdp plan` parses them, on two machines: this machine's cpu as plan_machine_cpu makes
 * it, its probed figures replaced by those of the seeds' machine (2 cores, 2 threads a rank)
 * so that an input does the same on every machine; and an h100-sxm, which takes a log
 * without threads_per_rank (a cuda run's). Beyond "no crash": a fit is one a plan can run
 * on, its scales finite and positive. The fit plans steps on the meta device, whose
 * allocator keeps a table for the process: it is made before the first input. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/train.h"
#include "fuzz.h"

static char *path;
static struct command_options cpu_run, cuda_run;
static struct plan_machine cpu, h100;
/* What one input calibrates: a copy of a machine, as plan.c's plan_machine makes it. */
static const struct train_config *run;
static struct plan_machine fitted;

static void calibrate(void *context) {
  (void)context;
  plan_calibrate(run, &fitted, path);
}

static void fit(const struct command_options *o, const struct plan_machine *m) {
  run = &o->run;
  fitted = *m;
  /* A logged run's ranks were on as few machines as they could be (plan.c). */
  fitted.links.ranks_per_node = strcmp(o->run.model.device, "cuda") == 0 ? 8 : 1 << 20;
  if (fuzz_read(calibrate, NULL)) return;
  double scales[] = {fitted.compute_scale, fitted.intra_scale, fitted.links.inter.latency_s};
  for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
    if (!(scales[i] > 0 && isfinite(scales[i])))
      fuzz_finding("calibrated: compute at %g x, links within a machine at %g x, a ring step between machines %g s",
                   scales[0], scales[1], scales[2]);
}

/* The seeds' run: --model gpt2-tiny --n-layer 1 --n-head 1 --n-embd 4 --vocab-size 8
 * --block-size 4 --seq-len 4 --batch-size 1, planned at its world size. */
static void parse(struct command_options *o, int cuda) {
  char *argv[] = {"plan", "--model", "gpt2-tiny", "--n-layer", "1", "--n-head", "1", "--n-embd", "4",
                  "--vocab-size", "8", "--block-size", "4", "--seq-len", "4", "--batch-size", "1",
                  "--world-size", "1", "--calibrate", path, "--device", "cuda", "--gpu", "h100-sxm"};
  int argc = sizeof argv / sizeof argv[0] - (cuda ? 0 : 4);
  if (command_options_parse(COMMAND_PLAN, o, argc, argv)) fuzz_finding("fsdp plan's options printed its help");
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("log.jsonl");
  parse(&cpu_run, 0);
  parse(&cuda_run, 1);
  plan_machine_cpu(&cpu, DTYPE_F32);
  cpu.cpu_cores = cpu.threads_per_rank = 2;
  cpu.peak_flops = 240e9;
  cpu.memory_bytes_per_s = cpu.host_memory_bytes_per_s = 40e9;
  cpu.host_link_bytes_per_s = cpu.memory_bytes_per_s / 2;
  plan_machine_gpu(&h100, "h100-sxm");
  /* A first plan makes what the process keeps (the device allocator's table of blocks):
   * here, outside a catch point, whose reclaim after a refusal would free it. */
  struct step_plan *p = malloc(sizeof *p);
  if (!p) fuzz_finding("out of memory");
  for (int w = 1; w <= 2; w++) {
    plan_step(&cpu_run.run, w, &cpu, p);
    plan_step(&cuda_run.run, w, &h100, p);
  }
  free(p);
  /* A fit says what it read (fsdp_log_info), one line an input. */
  if (!freopen("/dev/null", "w", stdout)) fuzz_finding("cannot silence stdout");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  fit(&cpu_run, &cpu);
  fit(&cuda_run, &h100);
  return 0;
}

/* A training step planned on the meta device (train.h, plan_step): `fsdp train`'s own
 * set-up and steps, so that the plan is what training allocates, sends and waits for. */
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/meta_clock.h"
#include "trainer.h"

void plan_step(const struct train_config *c, int world_size, const struct plan_machine *machine,
               struct step_plan *out) {
  memset(out, 0, sizeof *out);
  enum device_kind target = (enum device_kind)device_kind_parse(c->model.device);
  struct device_speed speed, host;
  struct comm_links links;
  plan_machine_speed(machine, &speed, &host, &links);
  meta_clock_set_speed(target, &speed);
  if (target == DEVICE_CUDA) meta_clock_set_speed(DEVICE_CPU, &host);
  struct device *meta = device_open(DEVICE_META, target);
  struct comm_group *group = comm_meta_group(meta, world_size, 0);
  comm_meta_set_links(group, &links);
  struct trainer t;
  trainer_setup(&t, c, meta, group, 1);
  t.peak_gflops = machine->peak_flops * world_size / 1e9;
  out->B = t.B;
  out->numel = fsdp_model_numel(&t.fsdp);
  out->n_units = t.fsdp.n_units;
  struct step_metrics m;
  for (int step = 1; step <= 2; step++) {
    if (step == 2) meta_clock_read(&out->time.clock, 1);
    trainer_step(&t, step, &m);
    fsdp_model_take_traffic(&t.fsdp, &out->traffic, &out->replicate_traffic);
  }
  meta_clock_read(&out->time.clock, 0);
  out->mem = m.mem;
  out->host = m.host_mem;
  out->time.step_ms = m.step_ms;
  out->time.tokens_per_s = m.tokens_per_s;
  out->time.mfu = m.mfu;
  out->time.all_gather_ms = m.all_gather_ms;
  out->time.reduce_scatter_ms = m.reduce_scatter_ms;
  out->time.replicate_ms = m.replicate_ms;
  out->time.exposed_ms = m.exposed_comm_ms;
  trainer_teardown(&t);
  comm_group_free(group);
  device_close(meta);
}

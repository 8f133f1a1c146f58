/* A training step planned on the meta device (train.h, plan_step): `fsdp train`'s own
 * set-up and steps, so that the plan is what training allocates and sends. */
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "trainer.h"

void plan_step(const struct train_config *c, int world_size, struct step_plan *out) {
  memset(out, 0, sizeof *out);
  struct device *meta = device_open(DEVICE_META, device_kind_parse(c->model.device));
  struct comm_group *group = comm_meta_group(meta, world_size, 0);
  struct trainer t;
  trainer_setup(&t, c, meta, group, 1);
  out->B = t.B;
  out->numel = fsdp_model_numel(&t.fsdp);
  out->n_units = t.fsdp.n_units;
  struct step_metrics m;
  for (int step = 1; step <= 2; step++) {
    trainer_step(&t, step, &m);
    fsdp_model_take_traffic(&t.fsdp, &out->traffic, &out->replicate_traffic);
  }
  out->mem = m.mem;
  out->host = m.host_mem;
  trainer_teardown(&t);
  comm_group_free(group);
  device_close(meta);
}

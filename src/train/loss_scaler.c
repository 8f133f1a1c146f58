/* GradScaler's update (loss_scaler.h). The norm is read to the host for it, as
 * GradScaler's step reads its found_inf: the one wait inside a step, and only in fp16. */
#include <math.h>

#include "fsdp/log.h"
#include "loss_scaler.h"

static const int LOSS_SCALE_GROWTH_INTERVAL = 2000;

int loss_scaler_update(struct loss_scaler *s, double grad_norm, int step) {
  if (!isfinite(grad_norm)) {
    fsdp_log_info("step %d: gradients overflowed in fp16 (grad norm %s): step skipped, loss scale %g -> %g", step,
                  isinf(grad_norm) ? "inf" : "nan", s->scale, s->scale / 2);
    s->scale /= 2;
    s->good_steps = 0;
    return 1;
  }
  if (++s->good_steps == LOSS_SCALE_GROWTH_INTERVAL) {
    s->scale *= 2;
    s->good_steps = 0;
  }
  return 0;
}

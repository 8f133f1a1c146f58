#include <math.h>

#include "fsdp/error.h"
#include "fsdp/runtime.h"

struct lr_schedule lr_warmup_cosine(float lr, float min_lr, int warmup, int total) {
  return (struct lr_schedule){lr, min_lr, warmup, total, warmup, 0.0};
}

/* The decay's progress at step (the decay has begun: step >= decay_from). */
static double progress_at(const struct lr_schedule *s, int step) {
  return s->decay_progress + (1.0 - s->decay_progress) * (double)(step - s->decay_from) /
                                 (double)(s->total - s->decay_from);
}

struct lr_schedule lr_schedule_extend(const struct lr_schedule *s, int at, int total) {
  FSDP_CHECK(at < total && at <= s->total);
  struct lr_schedule e = *s;
  e.total = total;
  /* Before the decay begins, nothing of it is to keep. */
  if (at <= s->decay_from) return e;
  /* At its end the decay has reached min_lr, where it would stay: a finished run goes on
   * from the last step it ran instead. */
  e.decay_from = at < s->total ? at : s->total - 1;
  e.decay_progress = progress_at(s, e.decay_from);
  return e;
}

float lr_at(const struct lr_schedule *s, int step) {
  if (step < s->warmup) return s->lr * (float)(step + 1) / (float)(s->warmup + 1);
  if (step >= s->total) return s->min_lr;
  double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * progress_at(s, step)));
  return s->min_lr + (float)coeff * (s->lr - s->min_lr);
}

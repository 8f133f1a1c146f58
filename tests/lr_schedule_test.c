/* The learning-rate schedule under resumes that change --steps, as properties over 20,000
 * random runs (--steps, --warmup, --lr, --min-lr), each resumed at a random checkpoint
 * (its first step, the warmup's end, its last step, anywhere) with more or fewer steps,
 * and again from the extended run's end:
 * - every rate a run takes is finite and within [--min-lr, --lr] (within (0, --lr] in the
 *   warmup, which rises from lr / (warmup + 1) as nanoGPT's does);
 * - at an extension the rate changes by no more than one step of the original schedule
 *   changed it somewhere;
 * - an extended run past its warmup keeps decaying to its new end: its rate falls step by
 *   step, its decay's progress stays below 1, and its first rate past the warmup is above
 *   --min-lr (a finished run extended stayed at --min-lr);
 * - every schedule a checkpoint holds reads back equal through the metadata's writer and
 *   reader (a finished run extended held a decay_progress of 1, which the reader refused).
 */
#include <cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "checkpointing.h"
#include "fsdp/rng.h"

enum { RUNS = 20000 };

static uint64_t draws;

/* An integer in [lo, hi], from Philox. */
static int draw_int(int lo, int hi) { return lo + (int)rng_below(7, 0, draws++, (uint64_t)(hi - lo + 1)); }

/* A rate spread over orders of magnitude: 10^[-6, 0). */
static float draw_rate(void) { return powf(10.0f, -6.0f + 6.0f * (float)draw_int(0, 9999) / 10000.0f); }

/* The largest change of the rate from one step to the next over steps [0, total], or of
 * a step of its warmup (which a run shorter than its warmup did not finish). */
static double largest_step(const struct lr_schedule *s) {
  double most = (double)s->lr / (s->warmup + 1);
  for (int k = 0; k < s->total; k++) most = fmax(most, fabs((double)lr_at(s, k + 1) - (double)lr_at(s, k)));
  return most;
}

static int same(const struct lr_schedule *a, const struct lr_schedule *b) {
  return a->lr == b->lr && a->min_lr == b->min_lr && a->warmup == b->warmup && a->total == b->total &&
         a->decay_from == b->decay_from && a->decay_progress == b->decay_progress;
}

/* Through metadata.json's text and back, as a resume reads it. */
static void expect_round_trip(const struct lr_schedule *s, const char *what) {
  cJSON *j = ckpt_schedule_json(s);
  char *text = cJSON_PrintUnformatted(j);
  cJSON *parsed = cJSON_Parse(text);
  struct lr_schedule back = ckpt_schedule_read("lr_schedule_test", parsed, s->lr, s->min_lr, s->warmup);
  EXPECT(same(s, &back), "%s: %s read back as steps %d, decay_from %d, progress %.17g (wrote %d, %d, %.17g)", what,
         text, back.total, back.decay_from, back.decay_progress, s->total, s->decay_from, s->decay_progress);
  cJSON_Delete(parsed);
  free(text);
  cJSON_Delete(j);
}

/* The rates the steps from `from` to the end take: finite, within bounds, falling past
 * the warmup; the decay's progress below 1. */
static void expect_rates(const struct lr_schedule *s, int from, const char *what) {
  double slack = 1e-6 * s->lr;
  for (int k = from; k < s->total; k++) {
    float r = lr_at(s, k), least = k < s->warmup ? 0.0f : s->min_lr;
    EXPECT(isfinite(r) && r > 0.0f && r >= least - slack && r <= s->lr + slack,
           "%s: rate %g at step %d outside [%g, %g]", what, (double)r, k, (double)least, (double)s->lr);
    if (k > s->warmup && k > from)
      EXPECT(r <= lr_at(s, k - 1) + slack, "%s: rate %g at step %d rose from %g", what, (double)r, k,
             (double)lr_at(s, k - 1));
  }
  EXPECT(s->decay_progress < 1.0, "%s: the decay is over before it begins (progress %g from step %d)", what,
         s->decay_progress, s->decay_from);
}

static void one_run(int run) {
  int steps = draw_int(1, 200), warmup = draw_int(0, 3) == 0 ? draw_int(0, 250) : draw_int(0, steps);
  float lr = draw_rate(), min_lr = draw_int(0, 4) == 0 ? 0.0f : lr * (float)draw_int(0, 1000) / 1000.0f;
  struct lr_schedule s = lr_warmup_cosine(lr, min_lr, warmup, steps);
  char what[160];
  snprintf(what, sizeof what, "run %d (--steps %d --warmup %d --lr %g --min-lr %g)", run, steps, warmup, (double)lr,
           (double)min_lr);
  expect_rates(&s, 0, what);
  expect_round_trip(&s, what);
  double step_change = largest_step(&s);
  /* The checkpoint: its first step, the warmup's end, its last step, or anywhere. */
  int pick = draw_int(0, 3), at = pick == 0 ? 1 : pick == 1 ? (warmup < steps ? warmup + 1 : steps) : pick == 2 ? steps
                                                                                                                : draw_int(1, steps);
  int longer = draw_int(0, 3) > 0;
  int total = longer ? at + draw_int(1, 300) : at + draw_int(1, steps + 1 - at > 1 ? steps + 1 - at : 1);
  if (total == steps) total++;
  struct lr_schedule e = lr_schedule_extend(&s, at, total);
  snprintf(what, sizeof what, "run %d (--steps %d --warmup %d --lr %g --min-lr %g) resumed at %d with --steps %d", run,
           steps, warmup, (double)lr, (double)min_lr, at, total);
  expect_rates(&e, at, what);
  expect_round_trip(&e, what);
  if (at >= warmup && s.lr - s.min_lr > 0.1f * s.lr)
    EXPECT(lr_at(&e, at) > min_lr, "%s: the rate is --min-lr already at the resume", what);
  double jump = fabs((double)lr_at(&e, at) - (double)lr_at(&s, at - 1));
  EXPECT(jump <= step_change * (1.0 + 1e-5) + 1e-12, "%s: the rate jumps by %g at the resume, more than the %g of a step",
         what, jump, step_change);
  /* And again from the extended run's own end. */
  struct lr_schedule again = lr_schedule_extend(&e, total, total + draw_int(1, 100));
  expect_rates(&again, total, what);
  expect_round_trip(&again, what);
}

int main(void) {
  for (int run = 0; run < RUNS; run++) one_run(run);
  return check_summary("lr_schedule_test");
}

/* A trace of `fsdp train --trace` as `fsdp traceviz` reads it (timeline_load), for ranks 0
 * and 1 (the seeds hold one rank and two): each rank's last step, and its first where it
 * holds more (the first begins at the rank's first span, a later one where the step before
 * ended), each drawn as the SVG timeline (into /dev/null: what is drawn is memviz's
 * tests' business; that drawing any accepted trace is safe and ends is this one's).
 * Beyond "no crash": every step a loaded trace says it holds loads too, and a loaded
 * step is one the drawing can trust: a finite length, its spans on its tracks and inside
 * it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz.h"
#include "timeline.h"

static char *path;
static FILE *out;
static struct timeline loaded;
static int rank, step; /* --rank, and --step (0: the last) */

static void load(void *context) {
  (void)context;
  timeline_load(&loaded, path, rank, step);
}

static void check(const struct timeline *t) {
  if (t->step < 1 || t->step > t->n_steps) fuzz_finding("step %d of %d loaded", t->step, t->n_steps);
  if (!(t->step_ms >= 0 && isfinite(t->step_ms))) fuzz_finding("a step of %g ms loaded", t->step_ms);
  for (int i = 0; i < t->n_spans; i++) {
    const struct timeline_span *s = &t->spans[i];
    if (s->track < 0 || s->track >= t->n_tracks) fuzz_finding("span %d on track %d of %d", i, s->track, t->n_tracks);
    if (!(s->begin_ms >= 0 && s->begin_ms <= s->end_ms && s->end_ms <= t->step_ms))
      fuzz_finding("span %d from %g to %g ms in a step of %g ms", i, s->begin_ms, s->end_ms, t->step_ms);
  }
}

/* Loads rank's step (0: the last); returns the steps it holds, 0 where it was refused. */
static int draw(int r, int k) {
  rank = r, step = k;
  if (fuzz_read(load, NULL)) return 0;
  check(&loaded);
  timeline_write_svg(out, &loaded);
  int n_steps = loaded.n_steps;
  timeline_free(&loaded);
  return n_steps;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("trace.json");
  out = fopen("/dev/null", "w");
  if (!out) fuzz_finding("cannot open /dev/null");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  for (int r = 0; r < 2; r++) {
    int n_steps = draw(r, 0);
    if (n_steps > 1 && draw(r, 1) == 0) fuzz_finding("rank %d: its last of %d steps loads, its first not", r, n_steps);
  }
  return 0;
}

/* A memory snapshot as `fsdp memviz` reads it: loaded and checked, each rank's view
 * built, and the page and the image drawn (into /dev/null: what is drawn is memviz's
 * tests' business; that drawing any accepted snapshot is safe is this one's). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/memviz.h"
#include "fuzz.h"
#include "render.h"

static char *path;
static FILE *out;

static void draw(void *context) {
  (void)context;
  struct memory_snapshot s;
  memory_snapshot_load(&s, path);
  struct rank_view *views = calloc((size_t)s.n_ranks, sizeof *views);
  if (!views) fuzz_finding("out of memory");
  for (int i = 0; i < s.n_ranks; i++) memviz_view_build(&views[i], &s, &s.ranks[i], MEMVIZ_PLOT_WIDTH);
  memviz_write_html(out, &s, views);
  memviz_write_svg(out, &s, views);
  for (int i = 0; i < s.n_ranks; i++) memviz_view_free(&views[i]);
  free(views);
  memory_snapshot_free(&s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("snapshot.json");
  out = fopen("/dev/null", "w");
  if (!out) fuzz_finding("cannot open /dev/null");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  fuzz_read(draw, NULL);
  return 0;
}

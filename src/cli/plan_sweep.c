/* `fsdp plan --sweep`: the job planned at each world size over the layouts a user would
 * weigh — full sharding, grad-op, DDP, HSDP with a machine or two as the shard group — at
 * --batch-size and twice it, without and with activation checkpointing, and on cuda
 * without and with the sharded state offloaded; ranked by predicted tokens/s among those
 * whose peak fits the memory limit, and drawn against the world size (--sweep-svg). */
#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/flags.h"
#include "fsdp/log.h"
#include "fsdp/output_file.h"
#include "plan.h"

enum { SWEEP_MAX_SIZES = 32, LAYOUTS = 5 };

/* A layout: the strategy and, for HSDP, how many machines a shard group spans. */
static const struct layout {
  const char *name;
  enum sharding_strategy sharding;
  int machines; /* HSDP's shard group: this many machines' ranks; 0: the whole world */
} LAYOUT[LAYOUTS] = {
    {"full", SHARD_FULL, 0},   {"grad-op", SHARD_GRAD_OP, 0}, {"ddp", SHARD_NONE, 0},
    {"hsdp-1", SHARD_FULL, 1}, {"hsdp-2", SHARD_FULL, 2},
};

struct sweep_row {
  int world_size, layout, batch, ac, offload, fits;
  double step_ms, tokens_per_s, exposed_ms, peak_bytes;
};

/* "A:B", the powers of two from A to B, or "W,W,...". */
static int world_sizes(const char *spec, int *out) {
  int n = 0;
  if (strchr(spec, ':')) {
    int first, last;
    flag_int_pair("--sweep", spec, ':', 1, "W1:W2 (e.g. 8:1024)", &first, &last);
    if (first > last) fsdp_fatal("--sweep %s: %d is above %d", spec, first, last);
    /* --help promises the powers of two from W1 to W2: doubling from another W1 plans none
     * of them (W2 bounds them only). */
    if (first & (first - 1))
      fsdp_fatal("--sweep %s: %d is not a power of two (W1:W2 plans the powers of two from W1 up to W2; list others "
                 "as W,W,...)",
                 spec, first);
    for (long w = first; w <= last && n < SWEEP_MAX_SIZES; w *= 2) out[n++] = (int)w;
    return n;
  }
  char *text = strdup(spec), *save = NULL;
  if (!text) fsdp_fatal("--sweep: out of memory");
  for (char *part = strtok_r(text, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    if (n == SWEEP_MAX_SIZES) fsdp_fatal("--sweep %s: more than %d world sizes", spec, SWEEP_MAX_SIZES);
    out[n++] = flag_int("--sweep", part, 1);
  }
  free(text);
  if (n == 0) fsdp_fatal("--sweep '%s': no world size", spec);
  return n;
}

/* The configuration of a row, or 0 where the layout does not apply at this world size. */
static int row_config(const struct command_options *o, const struct sweep_row *r, struct train_config *run) {
  const struct layout *l = &LAYOUT[r->layout];
  *run = o->run;
  run->model.sharding = l->sharding;
  run->mesh = (struct mesh_shape){0, 0};
  if (l->machines) {
    int shard = l->machines * plan_ranks_per_node(o, &o->run, r->world_size);
    if (shard >= r->world_size || r->world_size % shard) return 0;
    run->mesh = (struct mesh_shape){r->world_size / shard, shard};
  }
  if (l->sharding != SHARD_FULL) run->wrap.reshard_after_forward = RESHARD_AUTO;
  if (l->sharding == SHARD_NONE) run->mp.reduce_dtype = DTYPE_F32;
  run->batch_size = r->batch;
  run->global_batch_size = 0;
  run->ac_every = r->ac;
  run->offload_cpu = r->offload;
  return 1;
}

static void plan_row(const struct command_options *o, const struct plan_machine *m, double limit,
                     struct sweep_row *r, struct plan *p) {
  struct train_config run;
  row_config(o, r, &run);
  make_plan(o, &run, r->world_size, m, p);
  r->step_ms = p->step.time.step_ms;
  r->tokens_per_s = p->step.time.tokens_per_s;
  r->exposed_ms = p->step.time.exposed_ms;
  r->peak_bytes = (double)p->step.mem.total_peak;
  r->fits = !limit || r->peak_bytes <= limit;
}

static int by_speed(const void *a, const void *b) {
  const struct sweep_row *x = a, *y = b;
  if (x->world_size != y->world_size) return x->world_size - y->world_size;
  if (x->fits != y->fits) return y->fits - x->fits;
  return (y->tokens_per_s > x->tokens_per_s) - (y->tokens_per_s < x->tokens_per_s);
}

static void row_name(const struct sweep_row *r, char *out, size_t size) {
  snprintf(out, size, "%s B=%d%s%s", LAYOUT[r->layout].name, r->batch, r->ac ? " ac" : "",
           r->offload ? " offload" : "");
}

static void print_table(const struct sweep_row *rows, int n, double limit) {
  printf("%8s  %-28s %12s %14s %12s %12s %10s\n", "W", "layout", "step ms", "tokens/s", "a rank", "exposed ms",
         "peak GiB");
  for (int i = 0; i < n; i++) {
    const struct sweep_row *r = &rows[i];
    char name[64];
    row_name(r, name, sizeof name);
    printf("%8d  %-28s %12.2f %14.0f %12.0f %12.2f %10.2f%s\n", r->world_size, name, r->step_ms, r->tokens_per_s,
           r->tokens_per_s / r->world_size, r->exposed_ms, r->peak_bytes / 1073741824.0,
           r->fits ? "" : "  over the limit");
  }
  if (limit)
    printf("(memory limit %.2f GiB a rank; ranked by tokens/s within each world size)\n", limit / 1073741824.0);
}

static void print_json(const struct sweep_row *rows, int n, double limit) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "memory_limit_bytes", limit);
  cJSON *list = cJSON_AddArrayToObject(j, "plans");
  for (int i = 0; i < n; i++) {
    const struct sweep_row *r = &rows[i];
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "world_size", r->world_size);
    cJSON_AddStringToObject(row, "layout", LAYOUT[r->layout].name);
    cJSON_AddNumberToObject(row, "batch_per_rank", r->batch);
    cJSON_AddBoolToObject(row, "activation_checkpointing", r->ac);
    cJSON_AddBoolToObject(row, "offload", r->offload);
    cJSON_AddNumberToObject(row, "step_ms", r->step_ms);
    cJSON_AddNumberToObject(row, "tokens_per_s", r->tokens_per_s);
    cJSON_AddNumberToObject(row, "exposed_comm_ms", r->exposed_ms);
    cJSON_AddNumberToObject(row, "peak_bytes", r->peak_bytes);
    cJSON_AddBoolToObject(row, "fits", r->fits);
    cJSON_AddItemToArray(list, row);
  }
  print_json_and_free(j);
}

/* ---- the picture: for each layout its fastest fitting row at each world size ---- */

enum { SVG_W = 720, SVG_H = 300, LEFT = 70, RIGHT = 150, TOP = 30, BOTTOM = 50 };
static const char *const COLOURS[LAYOUTS] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};

static void svg(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void svg(struct text *t, const char *fmt, ...) {
  char line[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  text_append(t, line);
}

static const struct sweep_row *best_of(const struct sweep_row *rows, int n, int world_size, int layout) {
  const struct sweep_row *best = NULL;
  for (int i = 0; i < n; i++)
    if (rows[i].world_size == world_size && rows[i].layout == layout && rows[i].fits &&
        (!best || rows[i].tokens_per_s > best->tokens_per_s))
      best = &rows[i];
  return best;
}

/* One panel at y0: `value` of each layout's best row against log2 W, on a log scale
 * from the power of ten below the least value to the one above the largest. */
static void panel(struct text *f, const struct sweep_row *rows, int n, const int *sizes, int n_sizes, int y0,
                  const char *title, int exposed) {
  double least = INFINITY, most = 0;
  for (int i = 0; i < n; i++) {
    double v = exposed ? rows[i].exposed_ms : rows[i].step_ms;
    if (rows[i].fits && v > 0 && v < least) least = v;
    if (rows[i].fits && v > most) most = v;
  }
  if (most <= 0) least = most = 1;
  double bottom = floor(log10(least)), top = ceil(log10(most));
  if (top <= bottom) top = bottom + 1;
  int plot_w = SVG_W - LEFT - RIGHT, plot_h = SVG_H - TOP - BOTTOM;
  double span = n_sizes > 1 ? log2((double)sizes[n_sizes - 1] / sizes[0]) : 1;
  svg(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\">%s</text>\n", LEFT, y0 + TOP - 10, title);
  svg(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", LEFT, y0 + TOP,
      plot_w, plot_h);
  for (double e = bottom; e <= top; e++) {
    double y = y0 + TOP + plot_h - plot_h * (e - bottom) / (top - bottom);
    svg(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n", LEFT - 4, y + 3, pow(10, e));
    svg(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", LEFT, y, LEFT + plot_w, y);
  }
  for (int s = 0; s < n_sizes; s++) {
    double x = LEFT + (n_sizes > 1 ? plot_w * log2((double)sizes[s] / sizes[0]) / span : plot_w / 2.0);
    svg(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d</text>\n", x,
        y0 + TOP + plot_h + 14, sizes[s]);
  }
  for (int l = 0; l < LAYOUTS; l++) {
    svg(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", COLOURS[l]);
    for (int s = 0; s < n_sizes; s++) {
      const struct sweep_row *r = best_of(rows, n, sizes[s], l);
      if (!r) continue;
      double v = exposed ? r->exposed_ms : r->step_ms;
      double at = v > 0 ? (log10(v) - bottom) / (top - bottom) : 0;
      double x = LEFT + (n_sizes > 1 ? plot_w * log2((double)sizes[s] / sizes[0]) / span : plot_w / 2.0);
      svg(f, "%.1f,%.1f ", x, y0 + TOP + plot_h - plot_h * (at < 0 ? 0 : at));
    }
    svg(f, "\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n", SVG_W - RIGHT + 10,
        y0 + TOP + 14 * (l + 1), COLOURS[l], LAYOUT[l].name);
  }
}

static void draw(const char *path, const struct sweep_row *rows, int n, const int *sizes, int n_sizes) {
  struct text f = {0};
  svg(&f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n",
      SVG_W, 2 * SVG_H + 20);
  svg(&f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  panel(&f, rows, n, sizes, n_sizes, 0, "predicted step time (ms), each layout's fastest that fits", 0);
  panel(&f, rows, n, sizes, n_sizes, SVG_H, "its exposed communication (ms)", 1);
  svg(&f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">world size (ranks)</text>\n</svg>\n",
      LEFT + (SVG_W - LEFT - RIGHT) / 2, 2 * SVG_H + 12);
  const char *pieces[] = {f.data};
  output_write("--sweep-svg", path, pieces, &f.len, 1);
  text_free(&f);
}

/* The world sizes --ranks-per-node divides, as a plan at one world size must be; says
 * which it leaves out. */
static int laid_out(const struct command_options *o, int *sizes, int n) {
  int kept = 0;
  for (int i = 0; i < n; i++)
    if (sizes[i] % o->ranks_per_node == 0)
      sizes[kept++] = sizes[i];
    else
      fsdp_log_info("sweep: world size %d left out: --ranks-per-node %d does not divide it", sizes[i],
                    o->ranks_per_node);
  if (kept == 0)
    fsdp_fatal("--sweep %s: --ranks-per-node %d divides none of its world sizes", o->sweep, o->ranks_per_node);
  return kept;
}

int plan_sweep(const struct command_options *o, const struct plan_machine *machine) {
  int sizes[SWEEP_MAX_SIZES];
  int n_sizes = world_sizes(o->sweep, sizes);
  if (o->ranks_per_node) n_sizes = laid_out(o, sizes, n_sizes);
  int cuda = strcmp(o->run.model.device, "cuda") == 0;
  double limit = o->memory_limit ? (double)o->memory_limit : machine->capacity_bytes;
  int batches[2] = {o->run.batch_size ? o->run.batch_size : 1, 0};
  batches[1] = 2 * batches[0];
  size_t cap = (size_t)n_sizes * LAYOUTS * 2 * 2 * 2;
  struct sweep_row *rows = fsdp_xcalloc(cap, sizeof *rows);
  struct plan *p = fsdp_xmalloc(sizeof *p);
  int n = 0;
  for (int s = 0; s < n_sizes; s++)
    for (int l = 0; l < LAYOUTS; l++)
      for (int b = 0; b < 2; b++)
        for (int ac = 0; ac <= 1; ac++)
          for (int off = 0; off <= cuda; off++) {
            struct sweep_row r = {sizes[s], l, batches[b], ac, off, 0, 0, 0, 0, 0};
            struct train_config run;
            if (!row_config(o, &r, &run)) continue;
            plan_row(o, machine, limit, &r, p);
            rows[n++] = r;
          }
  free(p);
  qsort(rows, (size_t)n, sizeof *rows, by_speed);
  if (strcmp(o->format, "json") == 0)
    print_json(rows, n, limit);
  else
    print_table(rows, n, limit);
  if (o->sweep_svg) draw(o->sweep_svg, rows, n, sizes, n_sizes);
  free(rows);
  return 0;
}

/* `fsdp plan --calibrate LOG` (train.h, plan_calibrate): the planned machine's compute and
 * links scaled to what a logged run of the same configuration took. */
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/log.h"
#include "fsdp/train.h"

/* What the log's steps took, each the median over its steps after the first two; the
 * exposed communication -1 where the log has none (the cuda streams are not timed). */
struct logged_run {
  int world_size, threads, steps; /* threads: a rank's on the cpu, 0 where the log does not say */
  double step_ms, exposed_ms;
};

enum { LOG_MAX_STEPS = 1 << 20 };

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The line's value of key; -1 when it has none and the key is optional. */
static double number(const cJSON *line, const char *key, int optional, const char *path, int at) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, key);
  if (!v && optional) return -1;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
    fsdp_fatal("--calibrate '%s': line %d has no %s (a log of `fsdp train --log`, from 2026-12-06 on: its lines "
               "carry world_size)",
               path, at, key);
  return v->valuedouble;
}

static void read_log(const char *path, struct logged_run *run) {
  size_t length;
  char *text = input_file_read_all("--calibrate log", path, INPUT_JSON_MAX_BYTES, &length);
  double *step = NULL, *exposed = NULL;
  int n = 0, cap = 0, at = 0;
  run->world_size = 0;
  for (char *line = text, *next; *line; line = next) {
    at++;
    char *end = strchr(line, '\n');
    next = end ? end + 1 : line + strlen(line);
    if (end) *end = '\0';
    if (!*line) continue;
    cJSON *j = cJSON_Parse(line);
    if (!j || !cJSON_IsObject(j)) fsdp_fatal("--calibrate '%s': line %d is not a JSON object", path, at);
    if (number(j, "step", 0, path, at) > 2) {
      if (n == LOG_MAX_STEPS) fsdp_fatal("--calibrate '%s': more than %d steps", path, LOG_MAX_STEPS);
      if (n == cap) {
        cap = cap ? 2 * cap : 64;
        step = fsdp_xrealloc(step, (size_t)cap * sizeof *step);
        exposed = fsdp_xrealloc(exposed, (size_t)cap * sizeof *exposed);
      }
      int w = (int)number(j, "world_size", 0, path, at);
      if (run->world_size && w != run->world_size)
        fsdp_fatal("--calibrate '%s': line %d is of world size %d, earlier lines of %d: one run a log", path, at, w,
                   run->world_size);
      run->world_size = w;
      step[n] = number(j, "step_ms", 0, path, at);
      exposed[n] = number(j, "exposed_comm_ms", 1, path, at);
      run->threads = (int)number(j, "threads_per_rank", 1, path, at);
      n++;
    }
    cJSON_Delete(j);
  }
  free(text);
  if (n == 0) fsdp_fatal("--calibrate '%s': no step after the first two to calibrate on (log 3 steps or more)", path);
  if (run->world_size < 1) fsdp_fatal("--calibrate '%s': world_size %d", path, run->world_size);
  run->steps = n;
  run->step_ms = median(step, n);
  run->exposed_ms = median(exposed, n);
  free(step);
  free(exposed);
}

/* The compute a step takes outside its exposed communication. */
static double compute_ms(const struct step_time *t) { return t->step_ms - t->exposed_ms; }

/* What makes the plan at the log's world size expose as much communication as the log.
 * For a run on one machine, the scale of the links within it, searched over 10^-4 .. 10^2:
 * a collective's busy time is no measure of them on a CPU, where its stream waits in it
 * for the late rank and the ranks' threads share the cores. For a run across machines, a
 * ring step's latency between them, searched over 100 ns .. 100 ms: the transport's cost a
 * message (TCP's stack on busy cores is far above a wire's latency), the rate staying the
 * platform's figure. Exposure falls as the links speed up and grows with the latency. */
static void fit_links(const struct train_config *c, struct plan_machine *m, int world_size, double exposed_ms,
                      struct step_plan *p) {
  int across = world_size > m->links.ranks_per_node;
  double *knob = across ? &m->links.inter.latency_s : &m->intra_scale;
  double low = across ? -7 : -4, high = across ? -1 : 2; /* powers of ten */
  for (int i = 0; i < 16; i++) {
    *knob = pow(10, (low + high) / 2);
    plan_step(c, world_size, m, p);
    int too_much = p->time.exposed_ms > exposed_ms;
    if (too_much == across)
      high = (low + high) / 2;
    else
      low = (low + high) / 2;
  }
  *knob = pow(10, (low + high) / 2);
}

void plan_calibrate(const struct train_config *c, struct plan_machine *m, const char *log_path) {
  struct logged_run run;
  read_log(log_path, &run);
  if (m->cpu_cores && run.threads > 0 && run.threads != m->threads_per_rank)
    fsdp_fatal("--calibrate '%s': its ranks ran %d OpenMP threads each, this plan's %d: plan with "
               "OMP_NUM_THREADS=%d, as the run was",
               log_path, run.threads, m->threads_per_rank, run.threads);
  int timed = run.exposed_ms >= 0;
  double outside_ms = run.step_ms - (timed ? run.exposed_ms : 0); /* the logged step outside its exposed comm */
  if (outside_ms <= 0)
    fsdp_fatal("--calibrate '%s': its steps took %.3f ms, %.3f of them exposed communication: nothing to fit",
               log_path, run.step_ms, run.exposed_ms);
  /* The logged run had its ranks on as few machines as the plan's, and a mesh of its own
   * where the plan's does not cover it. */
  struct train_config logged = *c;
  if (c->mesh.replicate * c->mesh.shard != run.world_size) logged.mesh = (struct mesh_shape){0, 0};
  struct plan_machine at_log = *m;
  if (at_log.links.ranks_per_node > run.world_size) at_log.links.ranks_per_node = run.world_size;
  struct step_plan *p = fsdp_xmalloc(sizeof *p);
  /* Faster compute hides more of the collectives, slower links expose more of them: a few
   * rounds settle the two. */
  for (int round = 0; round < 3; round++) {
    plan_step(&logged, run.world_size, &at_log, p);
    double planned = timed ? compute_ms(&p->time) : p->time.step_ms;
    if (planned <= 0) fsdp_fatal("--calibrate: the plan at world size %d takes no time", run.world_size);
    at_log.compute_scale *= planned / outside_ms;
    if (timed && run.world_size > 1) fit_links(&logged, &at_log, run.world_size, run.exposed_ms, p);
  }
  free(p);
  m->compute_scale = at_log.compute_scale;
  m->intra_scale = at_log.intra_scale;
  m->links.inter.latency_s = at_log.links.inter.latency_s;
  fsdp_log_info("calibrate: %s: %d steps of world size %d, median step %.3f ms (%.3f exposed communication): "
                "compute at %.3f x the machine's rates, links within a machine at %.3g x, a ring step between "
                "machines %.3g us",
                log_path, run.steps, run.world_size, run.step_ms, run.exposed_ms, m->compute_scale, m->intra_scale,
                m->links.inter.latency_s * 1e6);
}

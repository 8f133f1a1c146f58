/* `fsdp plan --calibrate LOG` (train.h, plan_calibrate): the planned machine's compute and
 * links scaled to what a logged run of the same configuration took. */
#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/log.h"
#include "fsdp/train.h"
#include "mfu.h"

/* What the log's steps took, each the median over its steps after the first two; the
 * exposed communication -1 where the log has none (the cuda streams are not timed). A log
 * names no model, batch or sequence length: its tokens a step and FLOPs a token stand for
 * them. */
struct logged_run {
  int world_size, threads, steps; /* threads: a rank's on the cpu, -1 where the log does not say (cuda) */
  char setup[TRAIN_SETUP_TEXT_MAX]; /* its "setup" (train_config_setup_text's); "" in a log from before 2026-12-07 */
  double step_ms, exposed_ms;
  double tokens, flops_per_token; /* a step's over all ranks, from tokens_per_s and gflops */
};

enum { LOG_MAX_STEPS = 1 << 20 };

/* A fit beyond these is of no machine like the one planned: a log of another, or a step
 * the plan cannot meet (shorter than its launches). */
static const double COMPUTE_SCALE_MIN = 1e-4, COMPUTE_SCALE_MAX = 1e4;

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

/* The line's count of key (world_size, threads_per_rank): a whole number an int holds; -1
 * when it has none and the key is optional. */
static int count(const cJSON *line, const char *key, int optional, const char *path, int at) {
  double v = number(line, key, optional, path, at);
  if (v < 0) return -1;
  if (v != floor(v) || v > INT_MAX)
    fsdp_fatal("--calibrate '%s': line %d's %s %g is not a whole number up to %d", path, at, key, v, INT_MAX);
  return (int)v;
}

static void read_log(const char *path, struct logged_run *run) {
  size_t length;
  char *text = input_file_read_all("--calibrate log", path, INPUT_JSON_MAX_BYTES, &length);
  /* The lines are read as C strings: a NUL would end the log there, the rest unread. */
  const char *nul = memchr(text, '\0', length);
  if (nul) fsdp_fatal("--calibrate '%s': a NUL byte at offset %td: not a log of fsdp train", path, nul - text);
  double *step = NULL, *exposed = NULL;
  int n = 0, cap = 0, at = 0;
  *run = (struct logged_run){0};
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
      int w = count(j, "world_size", 0, path, at);
      if (run->world_size && w != run->world_size)
        fsdp_fatal("--calibrate '%s': line %d is of world size %d, earlier lines of %d: one run a log", path, at, w,
                   run->world_size);
      run->world_size = w;
      const cJSON *setup = cJSON_GetObjectItemCaseSensitive(j, "setup");
      if (setup && (!cJSON_IsString(setup) || strlen(setup->valuestring) >= sizeof run->setup))
        fsdp_fatal("--calibrate '%s': line %d's setup is not a string of the flags a run was set up with", path, at);
      if (n > 0 && strcmp(setup ? setup->valuestring : "", run->setup) != 0)
        fsdp_fatal("--calibrate '%s': line %d's setup is not earlier lines': one run a log", path, at);
      snprintf(run->setup, sizeof run->setup, "%s", setup ? setup->valuestring : "");
      step[n] = number(j, "step_ms", 0, path, at);
      double tokens_per_s = number(j, "tokens_per_s", 0, path, at);
      run->tokens = tokens_per_s * step[n] / 1e3;
      run->flops_per_token = number(j, "gflops", 0, path, at) * 1e9 / tokens_per_s;
      exposed[n] = number(j, "exposed_comm_ms", 1, path, at);
      run->threads = count(j, "threads_per_rank", 1, path, at);
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

/* Within the digits cJSON writes a double with, and NaN never. */
static int same(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* Fitting another configuration's steps would scale the rates by how much more or less
 * work they did: the log's must be c's at its world size (plan p). */
static void check_configuration(const struct train_config *c, const char *path, const struct logged_run *run,
                                const struct step_plan *p) {
  double tokens = (double)p->B * c->seq_len * run->world_size * c->grad_accum;
  if (!same(run->tokens, tokens))
    fsdp_fatal("--calibrate '%s': its steps are of %.6g tokens (tokens_per_s x step_ms), this plan's at its world "
               "size %d of %.6g (batch %d x --seq-len %d x %d ranks x --grad-accum %d): a log of another batch "
               "size, sequence length or accumulation",
               path, run->tokens, run->world_size, tokens, p->B, c->seq_len, run->world_size, c->grad_accum);
  double flops = mfu_flops_per_token(&c->model.config, c->seq_len, p->numel);
  if (!same(run->flops_per_token, flops))
    fsdp_fatal("--calibrate '%s': its steps did %.6g GFLOP a token (gflops / tokens_per_s), this plan's %.6g (%s, "
               "%zu parameters): a log of another model",
               path, run->flops_per_token / 1e9, flops / 1e9, c->model.name, p->numel);
}

/* The mesh the logged run had: its setup's --mesh, or none where a log has no setup. */
static struct mesh_shape logged_mesh(const struct logged_run *run) {
  struct mesh_shape mesh = {0, 0};
  const char *at = strstr(run->setup, "--mesh ");
  if (at && sscanf(at, "--mesh %d,%d", &mesh.replicate, &mesh.shard) != 2) mesh = (struct mesh_shape){0, 0};
  return mesh;
}

/* Fitting a run of another dtype, sharding, wrap, activation checkpointing or overlap
 * would scale the rates by what these change, not by the machine: the first flag whose
 * value differs is named. */
static void check_setup(const struct train_config *c, const char *path, const struct logged_run *run) {
  if (!run->setup[0]) {
    fsdp_log_info("calibrate: warning: '%s' names no setup (a log from before 2026-12-07): its run is taken to have "
                  "had this plan's dtypes, sharding, wrap, ac and overlap",
                  path);
    return;
  }
  char planned[TRAIN_SETUP_TEXT_MAX], logged[TRAIN_SETUP_TEXT_MAX], *at_planned, *at_logged;
  train_config_setup_text(c, run->world_size, planned);
  if (strcmp(planned, run->setup) == 0) return;
  snprintf(logged, sizeof logged, "%s", run->setup);
  /* "--flag value" pairs, a pair at a time from both. */
  char *flag_l = strtok_r(logged, " ", &at_logged), *flag_p = strtok_r(planned, " ", &at_planned);
  while (flag_l && flag_p) {
    char *value_l = strtok_r(NULL, " ", &at_logged), *value_p = strtok_r(NULL, " ", &at_planned);
    if (strcmp(flag_l, flag_p) != 0 || !value_l || !value_p || strcmp(value_l, value_p) != 0)
      fsdp_fatal("--calibrate '%s': its run had %s %s, this plan %s %s: plan with the flags the run had (its setup: "
                 "%s)",
                 path, flag_l, value_l ? value_l : "", flag_p, value_p ? value_p : "", run->setup);
    flag_l = strtok_r(NULL, " ", &at_logged);
    flag_p = strtok_r(NULL, " ", &at_planned);
  }
  fsdp_fatal("--calibrate '%s': its run's setup '%s' is not this plan's", path, run->setup);
}

/* The compute a step takes outside its exposed communication. */
static double compute_ms(const struct step_time *t) { return t->step_ms - t->exposed_ms; }

/* Scales m's compute so that the plan's step outside its exposed communication (the whole
 * step where the log has no exposure: cuda) takes the log's outside_ms. */
static void fit_compute(const struct train_config *c, struct plan_machine *m, int world_size, int timed,
                        double outside_ms, struct step_plan *p) {
  plan_step(c, world_size, m, p);
  double planned = timed ? compute_ms(&p->time) : p->time.step_ms;
  if (planned <= 0) fsdp_fatal("--calibrate: the plan at world size %d takes no time", world_size);
  m->compute_scale *= planned / outside_ms;
}

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
  int on_cpu = run.threads >= 0;
  if (on_cpu != (m->cpu_cores > 0))
    fsdp_fatal("--calibrate '%s': a log of a run on %s (its lines carry %sthreads_per_rank), this plan is for %s",
               log_path, on_cpu ? "the cpu" : "cuda", on_cpu ? "" : "no ", on_cpu ? "cuda" : "the cpu");
  if (m->cpu_cores && run.threads != m->threads_per_rank)
    fsdp_fatal("--calibrate '%s': its ranks ran %d OpenMP threads each, this plan's %d: plan with "
               "OMP_NUM_THREADS=%d, as the run was",
               log_path, run.threads, m->threads_per_rank, run.threads);
  int timed = run.exposed_ms >= 0;
  double outside_ms = run.step_ms - (timed ? run.exposed_ms : 0); /* the logged step outside its exposed comm */
  if (outside_ms <= 0)
    fsdp_fatal("--calibrate '%s': its steps took %.3f ms, %.3f of them exposed communication: nothing to fit",
               log_path, run.step_ms, run.exposed_ms);
  /* The logged run had its ranks on as few machines as the plan's, and its own mesh where
   * the plan's does not cover it. */
  struct train_config logged = *c;
  if (c->mesh.replicate * c->mesh.shard != run.world_size) logged.mesh = logged_mesh(&run);
  check_setup(&logged, log_path, &run);
  struct plan_machine at_log = *m;
  if (at_log.links.ranks_per_node > run.world_size) at_log.links.ranks_per_node = run.world_size;
  struct step_plan *p = fsdp_xmalloc(sizeof *p);
  plan_step(&logged, run.world_size, &at_log, p);
  check_configuration(&logged, log_path, &run, p);
  double mfu = run.flops_per_token * run.tokens / (run.step_ms / 1e3) / (run.world_size * m->peak_flops);
  if (!(mfu <= 1))
    fsdp_fatal("--calibrate '%s': its steps of %.6g ms reach %.4g%% of the peak of %s (%.4g TFLOP/s a rank): a "
               "log of a faster machine",
               log_path, run.step_ms, 100 * mfu, m->name, m->peak_flops / 1e12);
  /* Faster compute hides more of the collectives, slower links expose more of them: a few
   * rounds settle the two, the compute last. */
  for (int round = 0; round < 3; round++) {
    fit_compute(&logged, &at_log, run.world_size, timed, outside_ms, p);
    if (timed && run.world_size > 1) fit_links(&logged, &at_log, run.world_size, run.exposed_ms, p);
  }
  fit_compute(&logged, &at_log, run.world_size, timed, outside_ms, p);
  free(p);
  if (!(at_log.compute_scale >= COMPUTE_SCALE_MIN && at_log.compute_scale <= COMPUTE_SCALE_MAX))
    fsdp_fatal("--calibrate '%s': its steps of %.6g ms (%.6g outside exposed communication) fit compute at %.3g x "
               "the rates of %s, beyond %g .. %g x: a log of another machine, or a step this one cannot take",
               log_path, run.step_ms, outside_ms, at_log.compute_scale, m->name, COMPUTE_SCALE_MIN,
               COMPUTE_SCALE_MAX);
  m->compute_scale = at_log.compute_scale;
  m->intra_scale = at_log.intra_scale;
  m->links.inter.latency_s = at_log.links.inter.latency_s;
  fsdp_log_info("calibrate: %s: %d steps of world size %d, median step %.3f ms (%.3f exposed communication): "
                "compute at %.3f x the machine's rates, links within a machine at %.3g x, a ring step between "
                "machines %.3g us",
                log_path, run.steps, run.world_size, run.step_ms, run.exposed_ms, m->compute_scale, m->intra_scale,
                m->links.inter.latency_s * 1e6);
}

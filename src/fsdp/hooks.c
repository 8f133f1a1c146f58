/* The hooks around each unit's forward and backward, and when they launch the
 * all-gathers of the units that come next (FSDP1's forward and backward prefetch
 * with its rate limiter): the next unit's gather is in flight while this one
 * computes, and the number of units unsharded at once stays bounded. */
#include <stdio.h>
#include "fsdp/error.h"

#include "fsdp/memory.h"
#include "fsdp/runtime.h"
#include "fsdp/stream.h"
#include "fsdp/trace.h"

const struct fsdp_overlap FSDP_OVERLAP_DEFAULT = {
    .prefetch = 1, .backward_prefetch = BACKWARD_PREFETCH_PRE, .max_unsharded = 2, .blocking = 0};

/* Units gathered or being gathered now. */
static int units_unsharded(const struct fsdp_model *m) {
  int n = 0;
  for (int i = 0; i < m->n_units; i++) n += m->units[i]->state != UNIT_SHARDED;
  return n;
}

static void trace_unsharded_units(const struct fsdp_model *m) {
  if (!trace_enabled()) return;
  static const char *const series[] = {"units"};
  double units = units_unsharded(m);
  trace_counter("unsharded units", 1, series, &units);
}

/* The unit of the use k places after use i in forward order (before it, for k < 0), or NULL. */
static struct fsdp_unit *unit_of_use(struct fsdp_model *m, int i, int k) {
  return i + k >= 0 && i + k < m->n_uses ? m->uses[i + k].unit : NULL;
}

static const struct fsdp_module *module_of(const struct fsdp_model *m, int module) {
  FSDP_CHECK(m->n_units > 0 && module >= 0 && module < m->n_modules);
  return &m->modules[module];
}

/* Under grad-op every unit stays gathered from its forward to its backward by
 * design, so only full sharding is held to the limit. */
static void prefetch(struct fsdp_model *m, struct fsdp_unit *u) {
  if (!u || u->state != UNIT_SHARDED) return;
  if (m->strategy == SHARD_FULL && units_unsharded(m) >= m->overlap.max_unsharded) return;
  fsdp_unit_unshard(u);
}

static void begin_compute(struct fsdp_unit *u) {
  if (trace_enabled()) u->compute_begin_us = trace_now_us();
}

static void end_compute(struct fsdp_model *m, struct fsdp_unit *u, const char *pass) {
  if (!trace_enabled()) return;
  char name[TRACE_NAME_MAX];
  snprintf(name, sizeof name, "%s %s", pass, u->name);
  trace_span(trace_track(stream_name(m->streams.compute)), name, u->compute_begin_us, trace_now_us());
}

void fsdp_pre_forward(struct fsdp_model *m, int module) {
  const struct fsdp_module *mod = module_of(m, module);
  struct fsdp_unit_use *use = &m->uses[mod->use];
  if (module != use->first_module) return;
  struct fsdp_unit *u = use->unit;
  fsdp_unit_unshard(u);
  for (int k = 1; k <= m->overlap.prefetch; k++) prefetch(m, unit_of_use(m, mod->use, k));
  fsdp_unit_wait_unsharded(u);
  trace_unsharded_units(m);
  begin_compute(u);
  mem_push_context(u->name, "forward");
}

void fsdp_post_forward(struct fsdp_model *m, int module) {
  const struct fsdp_module *mod = module_of(m, module);
  struct fsdp_unit_use *use = &m->uses[mod->use];
  if (module != use->last_module) return;
  mem_pop_context();
  end_compute(m, use->unit, "forward");
  if (use->reshard_after_forward) fsdp_unit_reshard(use->unit);
  trace_unsharded_units(m);
}

/* Waits for the reductions launched before the latest one and frees their
 * buffers: the gradients of at most two units are alive in a backward, whatever the
 * timing, so that a plan of the memory can be exact. The latest has had a unit's
 * backward to finish. */
static void release_older_grads(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++)
    if (m->units[i] != m->latest_reduced) fsdp_unit_release_grads(m->units[i]);
}

void fsdp_pre_backward(struct fsdp_model *m, int module) {
  const struct fsdp_module *mod = module_of(m, module);
  struct fsdp_unit_use *use = &m->uses[mod->use];
  if (module != use->last_module) return;
  struct fsdp_unit *u = use->unit;
  release_older_grads(m);
  fsdp_unit_unshard(u);
  if (m->overlap.backward_prefetch == BACKWARD_PREFETCH_PRE) prefetch(m, unit_of_use(m, mod->use, -1));
  fsdp_unit_wait_unsharded(u);
  mem_push_context(u->name, "backward");
  fsdp_unit_begin_grads(u);
  trace_unsharded_units(m);
  begin_compute(u);
}

void fsdp_post_backward(struct fsdp_model *m, int module) {
  const struct fsdp_module *mod = module_of(m, module);
  struct fsdp_unit_use *use = &m->uses[mod->use];
  if (module != use->first_module) return;
  struct fsdp_unit *u = use->unit;
  mem_pop_context();
  end_compute(m, u, "backward");
  if (m->requires_grad_sync && use->reduces) {
    fsdp_unit_reduce_grads(u);
    m->latest_reduced = u;
  } else {
    fsdp_unit_keep_grads(u);
  }
  if (use->reshard_after_backward) fsdp_unit_reshard(u);
  if (m->overlap.backward_prefetch == BACKWARD_PREFETCH_POST) prefetch(m, unit_of_use(m, mod->use, -1));
  trace_unsharded_units(m);
}

struct tensor fsdp_param(struct fsdp_model *m, int module, int param) {
  const struct fsdp_module *mod = module_of(m, module);
  FSDP_CHECK(param >= 0 && param < m->modules[mod->owner].n_params);
  return fsdp_unit_param(mod->unit, mod->first_param + param);
}

struct tensor fsdp_grad(struct fsdp_model *m, int module, int param) {
  const struct fsdp_module *mod = module_of(m, module);
  FSDP_CHECK(param >= 0 && param < m->modules[mod->owner].n_params);
  return fsdp_unit_grad(mod->unit, mod->first_param + param);
}

void fsdp_model_wait_for_grads(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) fsdp_unit_release_grads(m->units[i]);
  m->latest_reduced = NULL;
}

void fsdp_model_synchronize(struct fsdp_model *m) {
  stream_synchronize(m->streams.all_gather);
  stream_synchronize(m->streams.reduce_scatter);
  if (m->streams.replicate) stream_synchronize(m->streams.replicate);
}

void fsdp_prefetch_for_next_step(struct fsdp_model *m, struct fsdp_unit *u) {
  /* The first use's unit and the units its pre-forward would prefetch. */
  for (int i = 0; m->overlap.prefetch > 0 && i <= m->overlap.prefetch && i < m->n_uses; i++)
    if (m->uses[i].unit == u) prefetch(m, u);
  trace_unsharded_units(m);
}

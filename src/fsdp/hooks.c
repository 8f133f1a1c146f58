/* The hooks around each unit's forward and backward, and when they launch the
 * all-gathers of the units that come next (FSDP1's forward and backward prefetch
 * with its rate limiter): the next unit's gather is in flight while this one
 * computes, and the number of units unsharded at once stays bounded. */
#include <stdio.h>

#include "fsdp/memory.h"
#include "fsdp/runtime.h"
#include "fsdp/stream.h"
#include "fsdp/trace.h"

const struct fsdp_overlap FSDP_OVERLAP_DEFAULT = {
    .prefetch = 1, .backward_prefetch = BACKWARD_PREFETCH_PRE, .max_unsharded = 2, .blocking = 0};

/* Non-root units gathered or being gathered now. */
static int units_unsharded(const struct fsdp_model *m) {
  int n = 0;
  for (int i = 0; i < m->n_units; i++) n += !m->units[i]->is_root && m->units[i]->state != UNIT_SHARDED;
  return n;
}

static void trace_unsharded_units(const struct fsdp_model *m) {
  if (!trace_enabled()) return;
  static const char *const series[] = {"units"};
  double units = units_unsharded(m);
  trace_counter("unsharded units", 1, series, &units);
}

/* The unit k places after u in forward order, or NULL. */
static struct fsdp_unit *forward_next(struct fsdp_model *m, const struct fsdp_unit *u, int k) {
  return u->id + k < m->n_units ? m->units[u->id + k] : NULL;
}

/* The unit whose backward comes after u's has begun: the root wraps the others,
 * so after it comes the last unit, and after any other unit the one before it. */
static struct fsdp_unit *backward_next(struct fsdp_model *m, const struct fsdp_unit *u) {
  int next = u->is_root ? m->n_units - 1 : u->id - 1;
  return next >= 0 && next != u->id && !m->units[next]->is_root ? m->units[next] : NULL;
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

void fsdp_pre_forward(struct fsdp_model *m, struct fsdp_unit *u) {
  fsdp_unit_unshard(u);
  for (int k = 1; k <= m->overlap.prefetch; k++) prefetch(m, forward_next(m, u, k));
  fsdp_unit_wait_unsharded(u);
  trace_unsharded_units(m);
  begin_compute(u);
  mem_push_context(u->name, "forward");
}

void fsdp_post_forward(struct fsdp_model *m, struct fsdp_unit *u) {
  mem_pop_context();
  end_compute(m, u, "forward");
  if (u->reshard_after_forward) fsdp_unit_reshard(u);
  trace_unsharded_units(m);
}

/* Waits for the reductions launched before the latest one and frees their
 * buffers: the gradients of at most two units besides the root are alive in a
 * backward, whatever the timing, so that a plan of the memory can be exact. The
 * latest has had a unit's backward to finish. */
static void release_older_grads(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++)
    if (m->units[i] != m->latest_reduced) fsdp_unit_release_grads(m->units[i]);
}

void fsdp_pre_backward(struct fsdp_model *m, struct fsdp_unit *u) {
  release_older_grads(m);
  fsdp_unit_unshard(u);
  if (m->overlap.backward_prefetch == BACKWARD_PREFETCH_PRE) prefetch(m, backward_next(m, u));
  fsdp_unit_wait_unsharded(u);
  mem_push_context(u->name, "backward");
  fsdp_unit_begin_grads(u);
  trace_unsharded_units(m);
  begin_compute(u);
}

void fsdp_post_backward(struct fsdp_model *m, struct fsdp_unit *u) {
  mem_pop_context();
  end_compute(m, u, "backward");
  if (m->requires_grad_sync) {
    fsdp_unit_reduce_grads(u);
    m->latest_reduced = u;
  } else {
    fsdp_unit_keep_grads(u);
  }
  fsdp_unit_reshard(u);
  /* The root's backward wraps all the others: nothing comes after it. */
  if (m->overlap.backward_prefetch == BACKWARD_PREFETCH_POST && !u->is_root) prefetch(m, backward_next(m, u));
  trace_unsharded_units(m);
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
  /* The root and the units the root's pre-forward would prefetch. */
  if (m->overlap.prefetch > 0 && u->id <= m->overlap.prefetch) prefetch(m, u);
  trace_unsharded_units(m);
}

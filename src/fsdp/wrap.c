/* Modules and wrap policies: which of a model's modules share a unit, and the uses of
 * each unit in the forward, which the hooks and prefetching follow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/runtime.h"
#include "wrap.h"

const struct fsdp_wrap_policy FSDP_WRAP_DEFAULT = {.kind = WRAP_MODULE, .min_params = 0,
                                                   .reshard_after_forward = RESHARD_AUTO};

static struct fsdp_module *new_module(struct fsdp_model *m, const char *name) {
  FSDP_CHECK(m->n_units == 0 && strlen(name) < PARAM_NAME_MAX);
  if (m->n_modules == FSDP_MAX_MODULES) fsdp_fatal("a model may have at most %d modules", FSDP_MAX_MODULES);
  m->modules = fsdp_xrealloc(m->modules, (size_t)(m->n_modules + 1) * sizeof *m->modules);
  struct fsdp_module *mod = &m->modules[m->n_modules];
  memset(mod, 0, sizeof *mod);
  strcpy(mod->name, name);
  mod->owner = m->n_modules++;
  return mod;
}

int fsdp_model_add_module(struct fsdp_model *m, const char *name, const char *prefix, const struct param_spec *specs,
                          int n_params) {
  FSDP_CHECK(n_params > 0);
  struct fsdp_module *mod = new_module(m, name);
  mod->n_params = n_params;
  mod->specs = fsdp_xcalloc((size_t)n_params, sizeof *mod->specs);
  for (int p = 0; p < n_params; p++) {
    char full[PARAM_NAME_MAX];
    int length = snprintf(full, sizeof full, "%s%s", prefix, specs[p].name);
    FSDP_CHECK(length > 0 && length < PARAM_NAME_MAX);
    char *owned = fsdp_xmalloc((size_t)length + 1);
    memcpy(owned, full, (size_t)length + 1);
    mod->specs[p] = specs[p];
    mod->specs[p].name = owned;
  }
  return mod->owner;
}

int fsdp_model_add_tied_module(struct fsdp_model *m, const char *name, int owner) {
  FSDP_CHECK(owner >= 0 && owner < m->n_modules && m->modules[owner].owner == owner);
  struct fsdp_module *mod = new_module(m, name);
  mod->owner = owner;
  return (int)(mod - m->modules);
}

static size_t module_numel(const struct fsdp_module *mod) {
  size_t n = 0;
  for (int p = 0; p < mod->n_params; p++) {
    size_t numel = 1;
    for (int d = 0; d < mod->specs[p].ndim; d++) numel *= mod->specs[p].shape[d];
    n += numel;
  }
  return n;
}

/* Whether a unit holding numel_so_far parameters is complete. */
static int closes_unit(const struct fsdp_wrap_policy *policy, size_t numel_so_far) {
  switch (policy->kind) {
    case WRAP_MODULE: return 1;
    case WRAP_SIZE: return numel_so_far >= policy->min_params;
    case WRAP_NONE: return 0;
  }
  return 1;
}

/* "embedding", or "block 2..block 4" for a unit of several modules. */
static void unit_name(char name[PARAM_NAME_MAX], const struct fsdp_module *first, const struct fsdp_module *last) {
  if (first == last) {
    strcpy(name, first->name);
    return;
  }
  size_t a = strlen(first->name), b = strlen(last->name);
  if (a + 2 + b >= PARAM_NAME_MAX) b = 0; /* "block 2.." */
  memcpy(name, first->name, a);
  memcpy(name + a, "..", 2);
  memcpy(name + a + 2, last->name, b);
  name[a + 2 + b] = '\0';
}

static void make_unit(struct fsdp_model *m, int first, int last) {
  if (m->n_units == FSDP_MAX_UNITS) fsdp_fatal("a model may have at most %d units", FSDP_MAX_UNITS);
  int n_params = 0;
  for (int i = first; i <= last; i++) n_params += m->modules[i].n_params; /* tied ones have none */
  struct param_spec *specs = fsdp_xcalloc((size_t)n_params, sizeof *specs);
  uint64_t *streams = fsdp_xcalloc((size_t)n_params, sizeof *streams);
  int k = 0;
  for (int i = first; i <= last; i++) {
    if (m->modules[i].owner != i) continue;
    m->modules[i].first_param = k;
    for (int p = 0; p < m->modules[i].n_params; p++, k++) {
      specs[k] = m->modules[i].specs[p];
      streams[k] = ((uint64_t)i << 32) | (uint64_t)p;
    }
  }
  char name[PARAM_NAME_MAX];
  unit_name(name, &m->modules[first], &m->modules[last]);
  struct fsdp_unit *u = fsdp_xmalloc(sizeof *u);
  fsdp_unit_init(u, name, specs, n_params, m->group, &m->streams, m->strategy, &m->mp);
  for (int p = 0; p < n_params; p++) u->layout.params[p].init_stream = streams[p];
  for (int i = first; i <= last; i++)
    if (m->modules[i].owner == i) m->modules[i].unit = u;
  m->units[m->n_units++] = u;
  free(specs);
  free(streams);
}

/* Consecutive modules of one unit make one use; a module tied to an earlier one starts
 * a use of that module's unit again. */
static void make_uses(struct fsdp_model *m, enum reshard_after_forward reshard) {
  m->uses = fsdp_xcalloc((size_t)m->n_modules, sizeof *m->uses);
  for (int i = 0; i < m->n_modules; i++) {
    struct fsdp_module *mod = &m->modules[i];
    mod->unit = m->modules[mod->owner].unit;
    mod->first_param = m->modules[mod->owner].first_param;
    if (m->n_uses == 0 || m->uses[m->n_uses - 1].unit != mod->unit)
      m->uses[m->n_uses++] = (struct fsdp_unit_use){.unit = mod->unit, .first_module = i, .last_module = i};
    m->uses[m->n_uses - 1].last_module = i;
    mod->use = m->n_uses - 1;
  }
  for (int i = 0; i < m->n_uses; i++) {
    int last = i == m->n_uses - 1, earlier = 0;
    for (int j = 0; j < i; j++) earlier |= m->uses[j].unit == m->uses[i].unit;
    m->uses[i].reduces = !earlier;
    m->uses[i].reshard_after_backward = m->strategy == SHARD_FULL || !earlier;
    m->uses[i].reshard_after_forward = m->strategy == SHARD_FULL && (reshard == RESHARD_ALWAYS ||
                                                                    (reshard == RESHARD_AUTO && !last));
  }
}

void fsdp_model_wrap(struct fsdp_model *m, const struct fsdp_wrap_policy *policy) {
  FSDP_CHECK(m->n_units == 0 && m->n_modules > 0);
  int last_owner = m->n_modules - 1;
  while (m->modules[last_owner].owner != last_owner) last_owner--;
  int first = -1;
  size_t numel = 0;
  for (int i = 0; i <= last_owner; i++) {
    if (m->modules[i].owner != i) continue;
    if (first < 0) first = i;
    numel += module_numel(&m->modules[i]);
    if (closes_unit(policy, numel) || i == last_owner) {
      make_unit(m, first, i);
      first = -1;
      numel = 0;
    }
  }
  make_uses(m, policy->reshard_after_forward);
}

void fsdp_model_free_modules(struct fsdp_model *m) {
  for (int i = 0; i < m->n_modules; i++) {
    for (int p = 0; p < m->modules[i].n_params; p++) free((char *)m->modules[i].specs[p].name);
    free(m->modules[i].specs);
  }
  free(m->modules);
  free(m->uses);
  m->modules = NULL;
  m->uses = NULL;
  m->n_modules = m->n_uses = 0;
}

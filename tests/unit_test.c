/* One FSDP unit through its hooks, at any world size (run under mpirun): the shard
 * a rank initialises is the same slice of the one-rank model bit for bit, the
 * views into the gathered buffer are the parameters, padding stays zero, the
 * reduce-scatter averages the ranks' gradients, the unsharded buffers live
 * exactly as long as the strategy says, and in 16 bits an unshard shows every write
 * to the shards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fsdp/device.h"
#include "fsdp/comm.h"
#include "fsdp/dtype.h"
#include "fsdp/memory.h"
#include "fsdp/rng.h"
#include "fsdp/runtime.h"

static const uint64_t SEED = 42;
static const struct param_spec specs[] = {
    {"w", 2, {7, 5}, PARAM_INIT_NORMAL, 0.02f, 1, 0.0f},
    {"b", 1, {7}, PARAM_INIT_CONSTANT, 0.0f, 0, 0.0f},
    {"norm", 1, {13}, PARAM_INIT_CONSTANT, 1.0f, 0, 0.0f},
    {"big", 3, {3, 4, 9}, PARAM_INIT_NORMAL, 1.5f, 1, 0.0f},
    /* Bounds of 1.5 std: one value in 7 is redrawn, from a counter no element uses. */
    {"trunc", 2, {11, 6}, PARAM_INIT_TRUNC_NORMAL, 0.2f, 1, 0.3f},
};
enum { N_PARAMS = sizeof specs / sizeof specs[0], MODULE = 0 };

/* The value element i of parameter p must have, computed without any sharding. */
static float expected_param(int p, size_t i) {
  uint64_t stream = ((uint64_t)MODULE << 32) | (uint64_t)p;
  switch (specs[p].init) {
    case PARAM_INIT_NORMAL: return specs[p].init_value * rng_normal(SEED, stream, i);
    case PARAM_INIT_TRUNC_NORMAL: return rng_trunc_normal(SEED, stream, i, specs[p].init_value, specs[p].init_bound);
    case PARAM_INIT_CONSTANT: break;
  }
  return specs[p].init_value;
}

/* The gradient rank r contributes to flat element i: exact in float, so sums are exact. */
static float rank_grad(int r, size_t i) { return (float)(r + 1) * 0.25f + (float)(i % 97); }

/* The model of one module, wrapped into one unit that full sharding frees after its
 * forward; mp NULL: fp32. */
static struct fsdp_unit *one_unit_model(struct fsdp_model *m, enum sharding_strategy strategy,
                                        const struct fsdp_mixed_precision *mp) {
  fsdp_model_init(m, device_cpu(), comm_world(), strategy, NULL, mp);
  fsdp_model_add_module(m, "test unit", "", specs, N_PARAMS); /* MODULE */
  const struct fsdp_wrap_policy reshard = {WRAP_MODULE, 0, RESHARD_ALWAYS};
  fsdp_model_wrap(m, &reshard);
  return m->units[0];
}

static size_t unsharded_bytes(enum mem_category c) {
  struct mem_stats s;
  device_memory_stats(device_cpu(), &s);
  return s.current[c];
}

static void check_strategy(enum sharding_strategy strategy) {
  struct comm_group *world = comm_world();
  int W = comm_size(world), rank = comm_rank(world);
  int mesh = strategy == SHARD_NONE ? 1 : W;
  struct fsdp_model m;
  struct fsdp_unit *u = one_unit_model(&m, strategy, NULL);
  fsdp_model_init_params(&m, SEED);
  struct flat_layout *l = &u->layout;

  ASSERT(unsharded_bytes(MEM_SHARDED_PARAMS) == l->shard * sizeof(float), "sharded params bytes %zu, expected %zu",
         unsharded_bytes(MEM_SHARDED_PARAMS), l->shard * sizeof(float));
  ASSERT(unsharded_bytes(MEM_OPTIMIZER) == 2 * l->shard * sizeof(float), "optimizer bytes are not 2 x shard");

  for (int p = 0; p < N_PARAMS; p++) {
    struct sharded_param_info info = fsdp_unit_param_info(u, p);
    struct owned_range o = flat_layout_owned(l, p, strategy == SHARD_NONE ? 0 : rank);
    ASSERT(info.mesh_size == mesh && info.begin == o.begin && info.end == o.end, "param %d info is wrong", p);
    ASSERT(info.ndim == specs[p].ndim && info.global_shape[0] == specs[p].shape[0], "param %d shape is wrong", p);
    for (size_t i = o.begin; i < o.end; i++)
      ASSERT(u->param_shard[o.shard_offset + i - o.begin] == expected_param(p, i),
             "param %d element %zu of the shard differs from the one-rank model", p, i);
  }

  fsdp_pre_forward(&m, MODULE);
  ASSERT(u->state == UNIT_UNSHARDED, "not unsharded after pre_forward");
  /* Replicated, or over one rank, the fp32 shard is the whole parameter, viewed in place. */
  int whole = strategy == SHARD_NONE || W == 1;
  ASSERT(fsdp_unit_owns_param_full(u) == !whole, "owns its unsharded parameters: %d", fsdp_unit_owns_param_full(u));
  ASSERT(unsharded_bytes(MEM_UNSHARDED_PARAMS) == (whole ? 0 : l->padded * sizeof(float)),
         "unsharded params bytes %zu after pre_forward", unsharded_bytes(MEM_UNSHARDED_PARAMS));
  ASSERT(!whole || u->param_full == u->param_shard, "a whole fp32 shard is not viewed in place");
  for (int p = 0; p < N_PARAMS; p++) {
    const float *view = fsdp_unit_param(u, p).data;
    for (size_t i = 0; i < l->params[p].numel; i++)
      ASSERT(view[i] == expected_param(p, i), "view of param %d element %zu is wrong", p, i);
  }
  for (size_t i = l->numel; i < l->padded; i++) ASSERT(((float *)u->param_full)[i] == 0.0f, "padding element %zu is not zero", i);

  fsdp_post_forward(&m, MODULE);
  if (strategy == SHARD_FULL)
    ASSERT(u->state == UNIT_SHARDED && u->param_full == NULL && unsharded_bytes(MEM_UNSHARDED_PARAMS) == 0,
           "full sharding left the parameters unsharded after post_forward");
  else
    ASSERT(u->state == UNIT_UNSHARDED, "resharded after forward");

  fsdp_pre_backward(&m, MODULE);
  for (int p = 0; p < N_PARAMS; p++) {
    float *grad = fsdp_unit_grad(u, p).data;
    for (size_t i = 0; i < l->params[p].numel; i++) {
      ASSERT(grad[i] == 0.0f, "gradient not zero at pre_backward");
      grad[i] = rank_grad(rank, l->params[p].offset + i);
    }
  }
  fsdp_post_backward(&m, MODULE);
  ASSERT(u->state == UNIT_SHARDED && u->grad_full == NULL && unsharded_bytes(MEM_UNSHARDED_PARAMS) == 0,
         "parameters alive after post_backward");
  /* The reduce-scatter may still be reading the gradients: they are freed once it is done. */
  fsdp_model_wait_for_grads(&m);
  ASSERT(unsharded_bytes(MEM_UNSHARDED_GRADS) == 0, "unsharded gradients left after the reduce-scatter");
  size_t shard_begin = strategy == SHARD_NONE ? 0 : (size_t)rank * l->shard;
  for (size_t s = 0; s < l->shard; s++) {
    size_t flat = shard_begin + s;
    float expected = 0.0f;
    if (flat < l->numel) {
      double sum = 0.0;
      for (int r = 0; r < W; r++) sum += rank_grad(r, flat);
      expected = (float)(sum / W);
    }
    ASSERT(u->grad_shard[s] == expected, "reduced gradient at flat element %zu is %g, expected %g", flat,
           u->grad_shard[s], expected);
  }

  float *gathered = malloc(l->numel * sizeof(float));
  fsdp_unit_gather_params(u, gathered);
  for (int p = 0; p < N_PARAMS; p++)
    for (size_t i = 0; i < l->params[p].numel; i++)
      ASSERT(gathered[l->params[p].offset + i] == expected_param(p, i), "gathered param %d element %zu", p, i);
  free(gathered);
  fsdp_model_free(&m);
  ASSERT(unsharded_bytes(MEM_SHARDED_PARAMS) == 0 && unsharded_bytes(MEM_OPTIMIZER) == 0, "unit leaked memory");
}

/* Two micro-batches on a one-unit model (whose reduction is always the latest one):
 * gradients g and 2g on each rank reduce to 3 x their average over the ranks, whether
 * each micro-batch is reduced into the shard or the unsharded gradients are kept and
 * reduced once. */
static void check_accumulation(enum sharding_strategy strategy, int no_sync) {
  struct comm_group *world = comm_world();
  int W = comm_size(world), rank = comm_rank(world);
  struct fsdp_model m;
  struct fsdp_unit *u = one_unit_model(&m, strategy, NULL);
  struct flat_layout *l = &u->layout;
  for (int k = 0; k < 2; k++) {
    m.requires_grad_sync = !no_sync || k == 1;
    fsdp_pre_forward(&m, MODULE);
    fsdp_post_forward(&m, MODULE);
    fsdp_pre_backward(&m, MODULE);
    for (int p = 0; p < N_PARAMS; p++) {
      float *grad = fsdp_unit_grad(u, p).data;
      for (size_t i = 0; i < l->params[p].numel; i++) grad[i] += (float)(k + 1) * rank_grad(rank, l->params[p].offset + i);
    }
    fsdp_post_backward(&m, MODULE);
  }
  fsdp_model_wait_for_grads(&m);
  size_t shard_begin = strategy == SHARD_NONE ? 0 : (size_t)rank * l->shard;
  for (size_t s = 0; s < l->shard && shard_begin + s < l->numel; s++) {
    double sum = 0.0;
    for (int r = 0; r < W; r++) sum += 3.0 * rank_grad(r, shard_begin + s);
    double expected = sum / W;
    ASSERT(fabs(u->grad_shard[s] - expected) <= 1e-5 * fabs(expected) + 1e-7,
           "%s accumulation: gradient at %zu is %g, expected %g", no_sync ? "no-sync" : "sharded", shard_begin + s,
           u->grad_shard[s], expected);
  }
  fsdp_model_free(&m);
}

/* A value unlike the initial ones, that a rank writes into its shard. */
static float written_param(int p, size_t i) { return 0.5f + 3.0f * expected_param(p, i); }

/* In 16 bits, each unshard shows the writes to the shards since the one before (the
 * initialisation's, then fsdp_unit_write_param_shard's, as a checkpoint's load or an
 * import writes them), rounded once: a shard that is the whole parameter keeps its
 * rounded copy between unshards (unit.h's param_rounded), which a write makes stale. */
static void check_writes_seen(enum sharding_strategy strategy, enum dtype d) {
  struct fsdp_model m;
  const struct fsdp_mixed_precision mp = {d, DTYPE_F32};
  struct fsdp_unit *u = one_unit_model(&m, strategy, &mp);
  fsdp_model_init_params(&m, SEED);
  for (int written = 0; written < 2; written++) {
    for (int p = 0; written && p < N_PARAMS; p++) {
      struct sharded_param_info info = fsdp_unit_param_info(u, p);
      float *values = malloc((info.end - info.begin + 1) * sizeof(float));
      for (size_t i = info.begin; i < info.end; i++) values[i - info.begin] = written_param(p, i);
      fsdp_unit_write_param_shard(u, p, values);
      free(values);
    }
    fsdp_unit_unshard(u);
    fsdp_unit_wait_unsharded(u);
    int whole = strategy == SHARD_NONE || comm_size(comm_world()) == 1;
    ASSERT(!whole || (u->param_rounded && u->param_full == u->param_rounded),
           "a whole shard's unshard does not read its kept rounded copy");
    for (int p = 0; p < N_PARAMS; p++) {
      const uint16_t *view = fsdp_unit_param(u, p).data;
      for (size_t i = 0; i < u->layout.params[p].numel; i++) {
        float want = written ? written_param(p, i) : expected_param(p, i), got;
        dtype_round(d, &want, 1);
        dtype_unpack(d, &view[i], &got, 1);
        ASSERT(got == want, "%s: param %d element %zu is %g after the %s, expected %g", dtype_name(d), p, i, got,
               written ? "write" : "initialisation", want);
      }
    }
    fsdp_unit_reshard(u);
  }
  fsdp_model_free(&m);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  check_rank = comm_rank(comm_world());
  const enum sharding_strategy strategies[] = {SHARD_FULL, SHARD_GRAD_OP, SHARD_NONE};
  const char *names[] = {"full", "grad-op", "none"};
  for (int s = 0; s < 3; s++) {
    check_context = names[s];
    check_strategy(strategies[s]);
    check_accumulation(strategies[s], 0);
    check_accumulation(strategies[s], 1);
    check_writes_seen(strategies[s], DTYPE_BF16);
    check_writes_seen(strategies[s], DTYPE_F16);
  }
  int total = check_failures;
  comm_all_reduce(comm_world(), &total, 1, COMM_I32, COMM_SUM);
  if (comm_rank(comm_world()) == 0)
    printf("unit: world size %d, 3 strategies, %d failures\n", comm_size(comm_world()), total);
  comm_finalize();
  return total ? 1 : 0;
}

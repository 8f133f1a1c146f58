/* FSDP changes no mathematics: a model (GPT-2, Llama 3) trained for 10 AdamW steps on
 * W ranks with a given strategy gives the single-process loss and grad-norm trajectory
 * on the same global batch, and the same final parameters. Overlap and activation
 * checkpointing change nothing at all: every prefetch mode, and checkpointing of
 * every block or every second one, give the plain run bit for bit. Gradient
 * accumulation over micro-batches, in both modes, gives the one-batch run to
 * rounding (the sums run in another order), and so do the wrap policies and
 * reshard-after-forward settings. Along the
 * way the memory tracker proves the sharded-state formula and the unsharded
 * buffers' lifetimes and limit.
 * With a mesh R,S (HSDP: sharded within S ranks, replicated across R), the same model
 * matches full sharding over all W ranks and the single process, with and without
 * overlap and accumulating in both modes.
 * Usage (under mpirun -np W): fsdp_equivalence_test MODEL full|grad-op|none [R,S],
 * MODEL one of tests/test_models.h's */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fsdp/device.h"
#include "fsdp/comm.h"
#include "fsdp/memory.h"
#include "fsdp/rng.h"
#include "test_models.h"

enum { STEPS = 10, GLOBAL_BATCH = 12, SEQ = TEST_MODEL_SEQ };
static const struct test_model *tested; /* the model of the command line */
static const uint64_t SEED = 1234;
/* Summation orders differ between world sizes (rows split across ranks, then
 * averaged), so agreement is to rounding, not bitwise. Parameters may move by
 * up to lr * STEPS = 3e-2 in 10 Adam steps; they must agree to 2e-5 of that. */
static const double TRAJECTORY_TOLERANCE = 1e-5, PARAM_TOLERANCE = 2e-5;

/* The first is the run without overlap that the others must match bit for bit. */
static const struct {
  const char *name;
  struct fsdp_overlap overlap;
} MODES[] = {
    {"no overlap", {.prefetch = 0, .backward_prefetch = BACKWARD_PREFETCH_NONE, .max_unsharded = 2, .blocking = 1}},
    {"prefetch off", {.prefetch = 0, .backward_prefetch = BACKWARD_PREFETCH_NONE, .max_unsharded = 2}},
    {"forward only", {.prefetch = 1, .backward_prefetch = BACKWARD_PREFETCH_NONE, .max_unsharded = 2}},
    {"backward pre", {.prefetch = 1, .backward_prefetch = BACKWARD_PREFETCH_PRE, .max_unsharded = 2}},
    {"backward post", {.prefetch = 1, .backward_prefetch = BACKWARD_PREFETCH_POST, .max_unsharded = 2}},
    {"two ahead, limit 3", {.prefetch = 2, .backward_prefetch = BACKWARD_PREFETCH_PRE, .max_unsharded = 3}},
};
enum { N_MODES = sizeof MODES / sizeof MODES[0] };

struct trajectory {
  double loss[STEPS], grad_norm[STEPS];
  float *initial_params, *params; /* every unit's flat parameter, one after another */
  size_t n_params;
};

/* Rows [first, first + count) of the global batch of a step: random tokens. */
static void make_batch(int step, int first, int count, int *inputs, int *targets) {
  for (int row = 0; row < count; row++)
    for (int t = 0; t < SEQ; t++) {
      uint64_t base = (uint64_t)(first + row) * (SEQ + 1) + (uint64_t)t;
      inputs[row * SEQ + t] = (int)rng_below(SEED, (uint64_t)step, base, (uint64_t)tested->config.vocab_size);
      targets[row * SEQ + t] = (int)rng_below(SEED, (uint64_t)step, base + 1, (uint64_t)tested->config.vocab_size);
    }
}

static size_t mem_current(enum mem_category c) {
  struct mem_stats s;
  device_memory_stats(device_cpu(), &s);
  return s.current[c];
}

static size_t padded_bytes(const struct fsdp_unit *u) { return u->layout.padded * sizeof(float); }

/* The elements of the embedding, a block, the final norm and the output projection
 * (0 when tied), computed here from the config. */
struct module_numels {
  size_t embedding, block, final_norm, output;
};
static struct module_numels module_numels(const struct model_config *c) {
  size_t C = (size_t)c->n_embd, V = (size_t)c->vocab_size;
  if (tested->family == &GPT2_FAMILY)
    return (struct module_numels){V * C + (size_t)c->max_seq_len * C, 12 * C * C + 13 * C, 2 * C, 0};
  size_t q = (size_t)c->n_head * (C / c->n_head), kv = (size_t)c->n_kv_head * (C / c->n_head);
  size_t block = 2 * C + C * q + 2 * C * kv + q * C + 3 * C * (size_t)c->ffn_hidden; /* norms, wq wk wv wo, w1 w3 w2 */
  return (struct module_numels){V * C, block, C, c->tied ? 0 : V * C};
}

/* Elements of a rank's shard of a unit of numel elements: ceil(numel / (W * 16)) * 16. */
static size_t shard_numel(size_t numel, int world) {
  size_t granule = (size_t)world * 16;
  return (numel + granule - 1) / granule * granule / (size_t)world;
}

/* Sharded state per rank under the block policy: each module's shard. */
static void check_sharded_state(const struct fsdp_model *m, int world) {
  struct module_numels n = module_numels(&tested->config);
  size_t expected = shard_numel(n.embedding, world) + shard_numel(n.final_norm, world) +
                    (size_t)tested->config.n_layer * shard_numel(n.block, world);
  if (n.output) expected += shard_numel(n.output, world);
  expected *= sizeof(float);
  if (mem_current(MEM_SHARDED_PARAMS) != expected || mem_current(MEM_SHARDED_GRADS) != expected ||
      mem_current(MEM_OPTIMIZER) != 2 * expected || fsdp_model_sharded_state_bytes(m) != 4 * expected)
    FAIL("sharded state: params %zu grads %zu optimizer %zu bytes, expected %zu, %zu, %zu",
         mem_current(MEM_SHARDED_PARAMS), mem_current(MEM_SHARDED_GRADS), mem_current(MEM_OPTIMIZER), expected,
         expected, 2 * expected);
}

/* Full sharding keeps only the unit of the forward's last use gathered (for the
 * backward that follows), grad-op every unit, DDP none of its own: nor does a world of
 * one rank, whose shards are the whole parameters (in fp32, the shard itself). */
static void check_after_forward(const struct fsdp_model *m, enum sharding_strategy s) {
  const struct fsdp_unit *kept = m->uses[m->n_uses - 1].unit;
  size_t expected = 0;
  for (int i = 0; i < m->n_units; i++) {
    const struct fsdp_unit *u = m->units[i];
    if (s == SHARD_FULL && u != kept && (u->state != UNIT_SHARDED || u->param_full))
      FAIL("unit %s unsharded after forward", u->name);
    if (!fsdp_unit_owns_param_full(u)) continue;
    if (s == SHARD_GRAD_OP || (s == SHARD_FULL && u == kept)) expected += padded_bytes(u);
  }
  if (mem_current(MEM_UNSHARDED_PARAMS) != expected)
    FAIL("%zu unsharded parameter bytes after forward, expected %zu", mem_current(MEM_UNSHARDED_PARAMS), expected);
}

static void check_after_backward(struct fsdp_model *m, enum sharding_strategy s, const struct fsdp_overlap *o) {
  if (mem_current(MEM_UNSHARDED_PARAMS)) FAIL("%zu unsharded param bytes alive after backward",
                                              mem_current(MEM_UNSHARDED_PARAMS));
  /* Gradients stay until their reduce-scatter is over. */
  fsdp_model_wait_for_grads(m);
  if (mem_current(MEM_UNSHARDED_GRADS))
    FAIL("%zu unsharded grad bytes alive after the reduce-scatters", mem_current(MEM_UNSHARDED_GRADS));
  if (s != SHARD_FULL) return;
  /* At most max_unsharded units are gathered at once (one when nothing is prefetched),
   * and without overlap one unit's gradients are alive, besides those of a unit used
   * twice (a tied head's), which add up over the backward. */
  size_t largest = 0, tied = 0;
  for (int i = 0; i < m->n_units; i++)
    if (padded_bytes(m->units[i]) > largest) largest = padded_bytes(m->units[i]);
  for (int i = 0; i < m->n_uses; i++)
    if (!m->uses[i].reduces) tied += padded_bytes(m->uses[i].unit);
  struct mem_stats st;
  device_memory_stats(device_cpu(), &st);
  int units = o->blocking || (o->prefetch == 0 && o->backward_prefetch == BACKWARD_PREFETCH_NONE)
                  ? 1
                  : o->max_unsharded;
  if (st.peak[MEM_UNSHARDED_PARAMS] > (size_t)units * largest)
    FAIL("unsharded param peak %zu bytes exceeds %d of the largest unit = %zu", st.peak[MEM_UNSHARDED_PARAMS], units,
         (size_t)units * largest);
  if (o->blocking && st.peak[MEM_UNSHARDED_GRADS] > largest + tied)
    FAIL("unsharded grad peak %zu bytes exceeds the largest unit's %zu and the tied units' %zu",
         st.peak[MEM_UNSHARDED_GRADS], largest, tied);
}

static float *gather_params(struct fsdp_model *m, size_t n) {
  float *params = malloc(n * sizeof(float)), *next = params;
  for (int i = 0; i < m->n_units; i++) {
    fsdp_unit_gather_params(m->units[i], next);
    next += m->units[i]->layout.numel;
  }
  return params;
}

/* How a run differs from the plain one besides its overlap. */
struct variant {
  const char *name;
  int ac_every;       /* model_family.create's */
  int micro_batches;  /* 0 or 1: none */
  int no_sync;        /* accumulate unsharded gradients, reduce at the last micro-batch */
  struct fsdp_wrap_policy wrap;
};
#define BLOCK_WRAP {WRAP_MODULE, 0, RESHARD_AUTO}
static const struct variant PLAIN = {"plain", 0, 1, 0, BLOCK_WRAP};

/* replicate: HSDP's replicas of group's shards, or NULL. */
static void train(struct comm_group *group, struct comm_group *replicate, enum sharding_strategy s,
                  const struct fsdp_overlap *overlap, const struct variant *v, int first_row, int rows,
                  int check_memory, struct trajectory *out) {
  struct fsdp_model m;
  int K = v->micro_batches, micro = rows / K;
  fsdp_model_init_hybrid(&m, device_cpu(), group, replicate, s, overlap, NULL);
  void *model = tested->family->create(&tested->config, &m, micro, SEQ, v->ac_every);
  fsdp_model_wrap(&m, &v->wrap);
  fsdp_model_init_params(&m, SEED);
  out->n_params = fsdp_model_numel(&m);
  out->initial_params = gather_params(&m, out->n_params);
  if (check_memory) check_sharded_state(&m, s == SHARD_NONE ? 1 : comm_size(group));

  int *inputs = malloc((size_t)micro * SEQ * sizeof(int)), *targets = malloc((size_t)micro * SEQ * sizeof(int));
  /* GPT-2's attention key bias has a gradient that is mathematically zero (softmax
   * ignores a shift), so what is computed is rounding noise; with eps 1e-8 Adam
   * would turn that noise into full-size steps of random sign. eps 1e-6 keeps
   * noise still and leaves the real gradients (>= 1e-4 here) as they are. */
  struct adamw_config adamw = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.1f};
  for (int step = 0; step < STEPS; step++) {
    device_reset_peaks(device_cpu());
    for (int k = 0; k < K; k++) {
      make_batch(step, first_row + k * micro, micro, inputs, targets);
      m.requires_grad_sync = !v->no_sync || k == K - 1;
      tested->family->forward(model, inputs, targets);
      if (check_memory) check_after_forward(&m, s);
      tested->family->backward(model, 1.0f / (float)K);
      if (check_memory) check_after_backward(&m, s, overlap);
    }
    out->loss[step] = fsdp_model_mean_across_ranks(&m, tested->family->take_loss(model));
    out->grad_norm[step] = fsdp_model_grad_norm(&m);
    fsdp_model_clip_grad_norm(&m, 0.5, 1.0f);
    fsdp_model_adamw_step(&m, &adamw, step + 1);
  }
  out->params = gather_params(&m, out->n_params);
  free(inputs);
  free(targets);
  tested->family->free(model);
  fsdp_model_free(&m);
}

static double relative_diff(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-12); }

static void check_bitwise_equal(const char *name, struct trajectory *run, const struct trajectory *expected) {
  if (memcmp(run->loss, expected->loss, sizeof run->loss) != 0 ||
      memcmp(run->grad_norm, expected->grad_norm, sizeof run->grad_norm) != 0 ||
      memcmp(run->params, expected->params, expected->n_params * sizeof(float)) != 0)
    FAIL("%s: the trajectory or the final parameters differ from the plain run without overlap", name);
  free(run->initial_params);
  free(run->params);
}

static double max_param_diff(const struct trajectory *a, const struct trajectory *b) {
  double worst = 0.0;
  /* Not fmax: gcc 12's vectorizer fails on that reduction for aarch64 (an ICE). NaN is
   * passed over all the same. */
  for (size_t i = 0; i < a->n_params; i++) {
    double diff = fabs(a->params[i] - b->params[i]);
    if (diff > worst) worst = diff;
  }
  return worst;
}

/* The same losses and grad norms to TRAJECTORY_TOLERANCE, and final parameters to PARAM_TOLERANCE. */
static void check_close(const char *name, const struct trajectory *run, const struct trajectory *expected) {
  for (int step = 0; step < STEPS; step++) {
    if (relative_diff(run->loss[step], expected->loss[step]) > TRAJECTORY_TOLERANCE)
      FAIL("%s: step %d loss %.9g, expected %.9g", name, step, run->loss[step], expected->loss[step]);
    if (relative_diff(run->grad_norm[step], expected->grad_norm[step]) > TRAJECTORY_TOLERANCE)
      FAIL("%s: step %d grad norm %.9g, expected %.9g", name, step, run->grad_norm[step], expected->grad_norm[step]);
  }
  double worst = max_param_diff(run, expected);
  if (worst > PARAM_TOLERANCE) FAIL("%s: final parameters differ by up to %g", name, worst);
}

/* HSDP over a mesh of replicas x shard: with and without overlap (bit for bit), and
 * accumulating in both modes (to rounding: the averages are taken in another order),
 * it matches full sharding over all ranks and the single process. */
static int check_hybrid(struct comm_group *world, enum sharding_strategy s, int replicas, int shard,
                        const struct trajectory *reference) {
  int W = comm_size(world), rank = comm_rank(world), rows = GLOBAL_BATCH / W;
  struct comm_mesh mesh;
  comm_mesh_init(&mesh, world, replicas, shard);
  struct trajectory full = {0}, hybrid = {0}, overlapped = {0};
  train(world, NULL, SHARD_FULL, &MODES[0].overlap, &PLAIN, rank * rows, rows, 0, &full);
  train(mesh.shard, mesh.replicate, s, &MODES[0].overlap, &PLAIN, rank * rows, rows, 1, &hybrid);
  train(mesh.shard, mesh.replicate, s, &MODES[3].overlap, &PLAIN, rank * rows, rows, 1, &overlapped);
  check_bitwise_equal("hybrid, overlapped", &overlapped, &hybrid);
  int K = rows % 2 == 0 ? 2 : 3;
  const struct variant accumulated[] = {{"hybrid, accumulation, sharded", 0, K, 0, BLOCK_WRAP},
                                        {"hybrid, accumulation, no sync", 0, K, 1, BLOCK_WRAP}};
  for (int i = 0; i < 2; i++) {
    struct trajectory run = {0};
    train(mesh.shard, mesh.replicate, s, &MODES[3].overlap, &accumulated[i], rank * rows, rows, 0, &run);
    check_close(accumulated[i].name, &run, &hybrid);
    free(run.initial_params);
    free(run.params);
  }
  check_close("hybrid against full sharding over every rank", &hybrid, &full);
  check_close("hybrid against one process", &hybrid, reference);
  if (memcmp(hybrid.initial_params, reference->initial_params, reference->n_params * sizeof(float)) != 0)
    FAIL("hybrid: the initial parameters differ from the single-process model's");
  int total = check_failures;
  comm_all_reduce(world, &total, 1, COMM_I32, COMM_SUM);
  if (rank == 0)
    printf("equivalence: hybrid %s over a mesh %d x %d, losses %.6f -> %.6f, grad norms %.4f -> %.4f, max param "
           "diff %.3g from full sharding over %d, %d failures\n",
           sharding_strategy_name(s), replicas, shard, hybrid.loss[0], hybrid.loss[STEPS - 1], hybrid.grad_norm[0],
           hybrid.grad_norm[STEPS - 1], max_param_diff(&hybrid, &full), W, total);
  free(full.initial_params);
  free(full.params);
  free(hybrid.initial_params);
  free(hybrid.params);
  comm_mesh_free(&mesh);
  return total;
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  struct comm_group *world = comm_world();
  int W = comm_size(world), rank = comm_rank(world);
  check_rank = rank;
  tested = argc == 3 || argc == 4 ? test_model_find(argv[1]) : NULL;
  int strategy = tested ? sharding_strategy_parse(argv[2]) : -1;
  int replicas = 1, shard = W;
  if (argc == 4 && (sscanf(argv[3], "%d,%d", &replicas, &shard) != 2 || replicas * shard != W)) strategy = -1;
  if (!tested || strategy < 0) {
    fprintf(stderr, "usage: fsdp_equivalence_test MODEL full|grad-op|none [R,S with R S = W]\n");
    comm_abort(2);
  }
  if (GLOBAL_BATCH % W) {
    fprintf(stderr, "world size %d does not divide the global batch %d\n", W, GLOBAL_BATCH);
    comm_abort(2);
  }

  struct trajectory reference = {0}, sharded = {0};
  if (rank == 0) train(comm_self(), NULL, SHARD_FULL, NULL, &PLAIN, 0, GLOBAL_BATCH, 0, &reference);
  comm_broadcast(world, &reference, sizeof reference.loss + sizeof reference.grad_norm, 0);
  comm_broadcast(world, &reference.n_params, sizeof reference.n_params, 0);
  size_t param_bytes = reference.n_params * sizeof(float);
  if (rank != 0) {
    reference.initial_params = malloc(param_bytes);
    reference.params = malloc(param_bytes);
  }
  comm_broadcast(world, reference.initial_params, param_bytes, 0);
  comm_broadcast(world, reference.params, param_bytes, 0);

  int rows = GLOBAL_BATCH / W;
  enum sharding_strategy s = (enum sharding_strategy)strategy;
  if (replicas > 1) {
    int failures = check_hybrid(world, s, replicas, shard, &reference);
    free(reference.initial_params);
    free(reference.params);
    comm_finalize();
    return failures ? 1 : 0;
  }
  train(world, NULL, s, &MODES[0].overlap, &PLAIN, rank * rows, rows, 1, &sharded);
  for (int mode = 1; mode < N_MODES; mode++) {
    struct trajectory overlapped = {0};
    train(world, NULL, s, &MODES[mode].overlap, &PLAIN, rank * rows, rows, 1, &overlapped);
    check_bitwise_equal(MODES[mode].name, &overlapped, &sharded);
  }
  const struct fsdp_overlap *default_overlap = &MODES[3].overlap;
  const struct variant checkpointed[] = {{"activation checkpointing of every block", 1, 1, 0, BLOCK_WRAP},
                                         {"activation checkpointing of every 2nd block", 2, 1, 0, BLOCK_WRAP}};
  for (int i = 0; i < 2; i++) {
    struct trajectory run = {0};
    train(world, NULL, s, default_overlap, &checkpointed[i], rank * rows, rows, 0, &run);
    check_bitwise_equal(checkpointed[i].name, &run, &sharded);
  }
  /* The rows of a rank split into K micro-batches: 2, or 3 where rows is odd. */
  int K = rows % 2 == 0 ? 2 : 3;
  /* Wrap policies group the same parameters in the same order: the flat parameters
   * concatenated are the same model. Reductions over other groupings add in another
   * order (and a tied head's gradient joins the embedding's in another order), so
   * agreement is to rounding. */
  const struct variant close[] = {
      {"accumulation, sharded", 0, K, 0, BLOCK_WRAP},
      {"accumulation, no sync", 0, K, 1, BLOCK_WRAP},
      {"wrap none", 0, 1, 0, {WRAP_NONE, 0, RESHARD_AUTO}},
      {"wrap size:100K", 0, 1, 0, {WRAP_SIZE, 100000, RESHARD_AUTO}},
      {"wrap block, reshard after forward always", 0, 1, 0, {WRAP_MODULE, 0, RESHARD_ALWAYS}},
      {"wrap size:1, reshard after forward never", 0, 1, 0, {WRAP_SIZE, 1, RESHARD_NEVER}},
  };
  for (size_t i = 0; i < sizeof close / sizeof close[0]; i++) {
    struct trajectory run = {0};
    train(world, NULL, s, default_overlap, &close[i], rank * rows, rows, 0, &run);
    check_close(close[i].name, &run, &sharded);
    if (memcmp(run.initial_params, reference.initial_params, param_bytes) != 0)
      FAIL("%s: the initial parameters differ from the single-process model's", close[i].name);
    free(run.initial_params);
    free(run.params);
  }
  check_close("sharded", &sharded, &reference);
  /* Each rank initialised only its own shard: together they are the one-process model, bit for bit. */
  if (memcmp(sharded.initial_params, reference.initial_params, param_bytes) != 0)
    FAIL("the initial parameters differ from the single-process model's");
  double worst = max_param_diff(&sharded, &reference);

  int total = check_failures;
  comm_all_reduce(world, &total, 1, COMM_I32, COMM_SUM);
  if (rank == 0)
    printf("equivalence: %s %s at W=%d, %d overlap modes bitwise equal, losses %.6f -> %.6f, "
           "grad norms %.4f -> %.4f, max param diff %.3g, %d failures\n",
           argv[1], argv[2], W, N_MODES, sharded.loss[0], sharded.loss[STEPS - 1], sharded.grad_norm[0],
           sharded.grad_norm[STEPS - 1], worst, total);
  free(reference.initial_params);
  free(reference.params);
  free(sharded.initial_params);
  free(sharded.params);
  comm_finalize();
  return total ? 1 : 0;
}

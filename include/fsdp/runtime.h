/* The FSDP runtime: a model's units, the strategy they share, and the
 * operations over all of them (init, gradient norm, clipping, AdamW). */
#ifndef FSDP_RUNTIME_H
#define FSDP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/comm.h"
#include "fsdp/unit.h"

enum { FSDP_MAX_UNITS = 256 };

/* When the next units' all-gathers are launched (FSDP1's forward_prefetch,
 * backward_prefetch and limit_all_gathers). */
enum backward_prefetch {
  BACKWARD_PREFETCH_NONE,
  BACKWARD_PREFETCH_PRE, /* before the unit's gradient computation: more overlap, one more unit in memory */
  BACKWARD_PREFETCH_POST /* after it, once the unit's parameters are freed */
};

struct fsdp_overlap {
  int prefetch;             /* units ahead whose all-gather is in flight during a forward (0: none) */
  enum backward_prefetch backward_prefetch;
  int max_unsharded;        /* units gathered or being gathered at once under full sharding (prefetches wait) */
  int blocking;             /* wait for every collective right after launching it: no overlap at all */
};

/* Defaults: one unit ahead in forward, BACKWARD_PRE, at most 2 units unsharded (FSDP1's defaults). */
extern const struct fsdp_overlap FSDP_OVERLAP_DEFAULT;

/* The most per-rank values one metric all-reduce carries (fsdp_model_max_across_ranks_n). */
enum { FSDP_METRICS_MAX = 4 };

struct fsdp_model {
  struct device *device;
  int world_size;           /* ranks the parameters are sharded over: the shard group's under HSDP */
  struct comm_group *group; /* those ranks */
  enum sharding_strategy strategy;
  struct fsdp_overlap overlap;
  struct fsdp_streams streams;
  struct event *collective_done; /* of the model-wide all-reduces (grad norm, metrics) */
  struct fsdp_mixed_precision mp; /* of every unit */
  /* 0: backwards keep their gradients unreduced and the next backward adds to them
   * (FSDP2's set_requires_gradient_sync(False), FSDP1's no_sync). */
  int requires_grad_sync;
  struct fsdp_unit *latest_reduced; /* the unit whose reduction was launched last in this backward */
  /* On the device, for the model-wide all-reduces: NCCL reduces device memory only.
   * scalar[0 .. FSDP_METRICS_MAX) carries the metrics, scalar[FSDP_METRICS_MAX] the
   * gradients' sum of squares over every rank, and the float after it the scale of the
   * next AdamW step's gradients. */
  double *scalar;
  /* The same two under CPU offload, where AdamW runs on the host. */
  double host_grad_squares;
  float host_grad_scale;
  struct tensor grad_scale; /* the next AdamW step's, or TENSOR_NONE (fsdp_model_clip_grad_norm) */
  int n_modules;
  struct fsdp_module *modules;
  int n_units;                      /* 0 until fsdp_model_wrap */
  struct fsdp_unit *units[FSDP_MAX_UNITS];
  int n_uses;
  struct fsdp_unit_use *uses;
};

struct adamw_config {
  float lr;
  float beta1, beta2;
  float eps;
  float weight_decay;
};

/* A model on device, sharded over group: on the meta device with a meta group
 * (comm_meta_group), the very same step allocates what it would and computes nothing,
 * which is how `fsdp plan` works. overlap and mp may be NULL for the defaults (fp32
 * throughout). Gradients are synced. */
void fsdp_model_init(struct fsdp_model *m, struct device *device, struct comm_group *group,
                     enum sharding_strategy strategy, const struct fsdp_overlap *overlap,
                     const struct fsdp_mixed_precision *mp);
void fsdp_model_free(struct fsdp_model *m);
/* HSDP (hybrid sharding): parameters sharded over group and replicated across
 * replicate (comm_mesh_init makes both); gradients are reduce-scattered within group,
 * then all-reduced across replicate on a stream of their own, averaged over both.
 * replicate NULL (or of one rank) is fsdp_model_init; strategy full or grad-op. */
void fsdp_model_init_hybrid(struct fsdp_model *m, struct device *device, struct comm_group *group,
                            struct comm_group *replicate, enum sharding_strategy strategy,
                            const struct fsdp_overlap *overlap, const struct fsdp_mixed_precision *mp);
/* CPU offload (FSDP2's CPUOffloadPolicy): the sharded parameters, gradients and AdamW
 * state go to pinned host memory; each all-gather first copies its shard to the device,
 * each reduction copies its result back, and the grad norm, clipping and AdamW run on the
 * host's CPU kernels. For a GPU (or a meta device planning for one), before
 * fsdp_model_wrap. */
void fsdp_model_offload_to_cpu(struct fsdp_model *m);
/* Bytes this rank sent in the model's collectives since the last call (comm.h): within
 * its shard group, and across the replicas (zero without them). */
void fsdp_model_take_traffic(struct fsdp_model *m, struct comm_traffic *shard, struct comm_traffic *replicate);

/* A module is what a model declares: the parameters one piece of its code uses
 * together (the embedding, a block, the final norm, the output projection), in the
 * order its forward runs them. A wrap policy (fsdp_model_wrap) then groups modules into
 * units; the model only ever names modules. */
enum { FSDP_MAX_MODULES = 1024 };

struct fsdp_module {
  char name[PARAM_NAME_MAX]; /* "block 3": a unit of this module alone is named after it */
  int n_params;
  struct param_spec *specs;  /* names owned: the module's prefix and the spec's name */
  int owner;                 /* the module whose parameters it uses: itself, or the one it is tied to */
  struct fsdp_unit *unit;    /* the owner's unit, once wrapped */
  int first_param;           /* where the owner's parameters start in the unit's layout */
  int use;                   /* the stretch of the forward it runs in (fsdp_model.uses) */
};

/* A stretch of the forward over consecutive modules that share a unit: the unit is
 * gathered before the first and, unless kept for the backward, resharded after the
 * last. A unit whose modules are not consecutive (a head tied to the embedding) has
 * several uses, each gathering it; its gradients add up over the backward's uses and
 * are reduced once, after the last (the first use of the forward), as autograd
 * accumulates a tied parameter's gradient before FSDP reduces it. */
struct fsdp_unit_use {
  struct fsdp_unit *unit;
  int first_module, last_module;
  int reshard_after_forward;
  int reduces; /* the unit's first use in the forward: its backward reduces the gradients */
  /* Full sharding frees the parameters after every use's backward; otherwise they stay
   * gathered until the unit's last backward (a tied unit's first use), so grad-op's
   * backward gathers nothing. */
  int reshard_after_backward;
};

/* Which modules share a unit: each module its own unit (MODULE; `--wrap block`, as a
 * decoder's modules are its blocks and the layers around them), consecutive modules until a unit
 * holds at least min_params parameters (SIZE, like size_based_auto_wrap_policy), or one
 * unit for the whole model (NONE). Tied modules always share their owner's unit. */
enum wrap_kind { WRAP_MODULE, WRAP_SIZE, WRAP_NONE };
/* AUTO reshards every use but the last of the forward, whose backward comes next (as
 * FSDP2 does); ALWAYS and NEVER apply to all uses. Only full sharding reshards. */
enum reshard_after_forward { RESHARD_AUTO, RESHARD_ALWAYS, RESHARD_NEVER };
struct fsdp_wrap_policy {
  enum wrap_kind kind;
  size_t min_params; /* WRAP_SIZE */
  enum reshard_after_forward reshard_after_forward;
};
extern const struct fsdp_wrap_policy FSDP_WRAP_DEFAULT; /* BLOCK, AUTO */

/* Declares a module of the model (in forward order) whose parameters are named prefix
 * + the spec's name ("layers.3." + "attention.wq.weight"); returns its index. */
int fsdp_model_add_module(struct fsdp_model *m, const char *name, const char *prefix, const struct param_spec *specs,
                          int n_params);
/* A module that computes with another module's parameters (a head tied to the
 * embedding): its uses gather the owner's unit, and its gradients add to the owner's. */
int fsdp_model_add_tied_module(struct fsdp_model *m, const char *name, int owner);
/* Groups the declared modules into units by the policy (src/fsdp/wrap.c). Each
 * parameter's initial values depend on its module and place in it, never on its unit,
 * so every policy starts from the same model. */
void fsdp_model_wrap(struct fsdp_model *m, const struct fsdp_wrap_policy *policy);

void fsdp_model_init_params(struct fsdp_model *m, uint64_t seed);
/* The unit holding the parameter named name (names are the model's, unique) and its
 * index there; returns 0 when there is none. */
int fsdp_model_find_param(const struct fsdp_model *m, const char *name, struct fsdp_unit **u, int *index);
/* Reshards every unit that is still unsharded (after an evaluation forward). */
void fsdp_model_reshard_all(struct fsdp_model *m);

/* The hooks a model calls around each module's compute (src/fsdp/hooks.c): at the
 * edges of a unit's use they gather and free parameters, launch prefetches and
 * gradient reductions, and mark the unit's compute in profile traces ("forward block 3"). */
void fsdp_pre_forward(struct fsdp_model *m, int module);
void fsdp_post_forward(struct fsdp_model *m, int module);
void fsdp_pre_backward(struct fsdp_model *m, int module);
void fsdp_post_backward(struct fsdp_model *m, int module);
/* A module's parameter p, and its gradient, in the unit's unsharded buffers: valid
 * between the module's hooks (fsdp_unit_param, fsdp_unit_grad). */
struct tensor fsdp_param(struct fsdp_model *m, int module, int param);
struct tensor fsdp_grad(struct fsdp_model *m, int module, int param);
/* Called by the optimizer once u is updated: the units of the first uses of the
 * forward (one and as many as --prefetch) start gathering for the next step while the
 * others are updated, instead of at the start of the next forward. */
void fsdp_prefetch_for_next_step(struct fsdp_model *m, struct fsdp_unit *u);
/* Waits for every launched gradient reduction: grad_shard is final afterwards.
 * The optimizer functions below call it first. */
void fsdp_model_wait_for_grads(struct fsdp_model *m);
/* Waits until the comm streams are idle (the next step's all-gathers may be in flight). */
void fsdp_model_synchronize(struct fsdp_model *m);

/* The L2 norm of all gradients across ranks (each element counted once, padding
 * excluded), measured on the device: nothing waits for it. */
void fsdp_model_measure_grad_norm(struct fsdp_model *m);
/* The norm last measured, read to the host (waits for it). */
double fsdp_model_measured_grad_norm(struct fsdp_model *m);
/* Both. */
double fsdp_model_grad_norm(struct fsdp_model *m);
/* The next AdamW step takes the gradients times unscale (undoing a loss scale of
 * 1 / unscale), clipped to a norm of max_norm > 0 (none: 0) as torch.nn.utils.
 * clip_grad_norm_ does, from the norm last measured, on the device (nn_grad_clip_scale). */
void fsdp_model_clip_grad_norm(struct fsdp_model *m, double max_norm, float unscale);
/* Drops the reduced gradients without a step (a step skipped on overflow): the next
 * backward's reduction overwrites them instead of adding. */
void fsdp_model_zero_grad(struct fsdp_model *m);
/* One AdamW step (decoupled weight decay on parameters with weight_decay set); step
 * counts from 1. It uses up the gradients, as fsdp_model_zero_grad does. */
void fsdp_model_adamw_step(struct fsdp_model *m, const struct adamw_config *cfg, int step);

/* The learning rate: linear warmup over `warmup` steps, then cosine decay from lr to
 * min_lr at step `total` (nanoGPT's schedule); steps count from 0. The decay's progress
 * runs linearly from decay_progress at step decay_from to 1 at total: from 0 at the end
 * of the warmup, unless the schedule was extended (a run resumed with another --steps). */
struct lr_schedule {
  float lr, min_lr;
  int warmup, total;
  int decay_from;
  double decay_progress;
};
struct lr_schedule lr_warmup_cosine(float lr, float min_lr, int warmup, int total);
/* s ending at total instead, from step at on (at <= s's total, at < total): the rate at
 * step at is s's, and the decay runs on from its progress there to min_lr at total. At s's
 * own end (a finished run given more steps), whose rate is min_lr, the decay runs on from
 * the rate of the last step s ran (at - 1) instead, so that the run keeps decaying to the
 * new end rather than staying at min_lr. */
struct lr_schedule lr_schedule_extend(const struct lr_schedule *s, int at, int total);
float lr_at(const struct lr_schedule *s, int step);

/* Mean and maximum of a per-rank value over every rank of the model, replicas
 * included (on the comm streams, so that the compute thread makes no MPI call). */
double fsdp_model_mean_across_ranks(struct fsdp_model *m, double value);
double fsdp_model_max_across_ranks(struct fsdp_model *m, double value);
/* The maxima of n per-rank values (n <= FSDP_METRICS_MAX) in one all-reduce, in place:
 * a flag that every rank must see rides on a metric at no extra collective. */
void fsdp_model_max_across_ranks_n(struct fsdp_model *m, double *values, int n);

/* Milliseconds, since the last call, that the all-gather, reduce-scatter and (HSDP)
 * replicate streams were busy, and that the compute stream was blocked waiting on them. */
struct fsdp_comm_times {
  double all_gather_ms, reduce_scatter_ms, replicate_ms, exposed_ms;
};
void fsdp_model_take_comm_times(struct fsdp_model *m, struct fsdp_comm_times *out);

size_t fsdp_model_numel(const struct fsdp_model *m);
/* Bytes of sharded state on this rank: (params + grads + 2 AdamW moments) * shard * 4. */
size_t fsdp_model_sharded_state_bytes(const struct fsdp_model *m);

/* The names of the strategies, backward prefetch and reshard-after-forward modes, by
 * value, then NULL. */
extern const char *const SHARDING_STRATEGY_NAMES[];
extern const char *const BACKWARD_PREFETCH_NAMES[];
extern const char *const RESHARD_AFTER_FORWARD_NAMES[];
const char *sharding_strategy_name(enum sharding_strategy s);
/* Returns -1 for an unknown name. */
int sharding_strategy_parse(const char *name);
const char *backward_prefetch_name(enum backward_prefetch p);

#endif

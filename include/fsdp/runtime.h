/* The FSDP runtime: a model's units, the strategy they share, and the
 * operations over all of them (init, gradient norm, clipping, AdamW). */
#ifndef FSDP_RUNTIME_H
#define FSDP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/unit.h"

enum { FSDP_MAX_UNITS = 256 };

struct fsdp_model {
  struct comm_group *group;
  enum sharding_strategy strategy;
  int n_units;
  struct fsdp_unit *units[FSDP_MAX_UNITS];
};

struct adamw_config {
  float lr;
  float beta1, beta2;
  float eps;
  float weight_decay;
};

void fsdp_model_init(struct fsdp_model *m, struct comm_group *group, enum sharding_strategy strategy);
void fsdp_model_free(struct fsdp_model *m);

/* Adds a unit. The root unit (is_root) stays unsharded from its pre-forward to its
 * post-backward, as FSDP2 does for the root module. */
struct fsdp_unit *fsdp_model_add_unit(struct fsdp_model *m, const char *name, const struct param_spec *specs,
                                      int n_params, int is_root);

void fsdp_model_init_params(struct fsdp_model *m, uint64_t seed);
/* Reshards every unit that is still unsharded (after an evaluation forward). */
void fsdp_model_reshard_all(struct fsdp_model *m);

/* L2 norm of all gradients across ranks (each element counted once, padding excluded). */
double fsdp_model_grad_norm(struct fsdp_model *m);
/* Scales the gradients by max_norm / norm when norm > max_norm; returns the scale used. */
float fsdp_model_clip_grads(struct fsdp_model *m, double norm, double max_norm);
/* One AdamW step (decoupled weight decay on parameters with weight_decay set); step counts from 1. */
void fsdp_model_adamw_step(struct fsdp_model *m, const struct adamw_config *cfg, int step);

/* Linear warmup over `warmup` steps, then cosine decay from lr to min_lr at step
 * `total` (nanoGPT's schedule); step counts from 0. */
float lr_warmup_cosine(int step, int warmup, int total, float lr, float min_lr);

/* Mean of a per-rank value over the ranks of the model's group. */
double fsdp_model_mean_across_ranks(struct fsdp_model *m, double value);

size_t fsdp_model_numel(const struct fsdp_model *m);
/* Bytes of sharded state on this rank: (params + grads + 2 AdamW moments) * shard * 4. */
size_t fsdp_model_sharded_state_bytes(const struct fsdp_model *m);

const char *sharding_strategy_name(enum sharding_strategy s);
/* Returns -1 for an unknown name. */
int sharding_strategy_parse(const char *name);

#endif

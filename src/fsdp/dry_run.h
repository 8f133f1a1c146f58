/* Private to src/fsdp: what model.c and dry_run.c share. */
#ifndef FSDP_DRY_RUN_H
#define FSDP_DRY_RUN_H

#include "fsdp/runtime.h"

/* The fields a model and its dry run have in common: world size, strategy, overlap and mixed precision. */
void fsdp_model_init_policies(struct fsdp_model *m, int world_size, enum sharding_strategy strategy,
                              const struct fsdp_overlap *overlap, const struct fsdp_mixed_precision *mp);
/* A unit with no buffer, whose sharded state is counted as planned memory;
 * streams is its model's (which has no streams, only the blocking flag). */
void fsdp_unit_init_dry_run(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs,
                            int n_params, int world_size, enum sharding_strategy strategy, int is_root,
                            const struct fsdp_streams *streams);
void fsdp_model_free_dry_run(struct fsdp_model *m);

#endif

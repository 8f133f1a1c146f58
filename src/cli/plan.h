/* Private to src/cli: one plan of `fsdp plan` (plan.c), which --sweep (plan_sweep.c) makes
 * over many configurations. */
#ifndef FSDP_CLI_PLAN_H
#define FSDP_CLI_PLAN_H

#include <cJSON.h>

#include "fsdp/cli.h"
#include "fsdp/train.h"

struct plan {
  struct step_plan step;
  struct plan_machine machine; /* as timed: its ranks a machine this plan's */
  int world_size, replicas, shard;
  double within_node, between_nodes; /* bytes a rank sends, on average over the ranks */
};

/* --ranks-per-node, else 8 on cuda (world_size when fewer), else the shard group of run's
 * mesh (all of world_size without one). */
int plan_ranks_per_node(const struct command_options *o, const struct train_config *run, int world_size);
/* The plan of run over world_size ranks on machine, its ranks plan_ranks_per_node a machine. */
void make_plan(const struct command_options *o, const struct train_config *run, int world_size,
               const struct plan_machine *machine, struct plan *p);
/* Prints j on stdout, then deletes it. */
void print_json_and_free(cJSON *j);
/* --sweep: plans over world sizes and layouts, ranked; 0 on success. */
int plan_sweep(const struct command_options *o, const struct plan_machine *machine);

#endif

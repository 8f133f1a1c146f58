/* Private to src/train: one training run's model, data and state, on any device.
 * train_run.c runs it on the cpu (or cuda) device over the MPI world; step_plan.c runs the
 * very same steps on the meta device over a meta group, so that the plan is what training
 * allocates. */
#ifndef FSDP_TRAIN_TRAINER_H
#define FSDP_TRAIN_TRAINER_H

#include "fsdp/train.h"
#include "loss_scaler.h"
#include "run_outputs.h"

struct trainer {
  struct train_config cfg;
  struct device *device;
  struct comm_group *group;
  int rank, world_size, B, T;
  int replicas;          /* HSDP: R of --mesh; 1 without */
  struct comm_mesh mesh; /* HSDP: the shard and replicate groups, when replicas > 1 */
  int planning; /* plan_step: no data is loaded or sampled, nothing validated or logged */
  struct data_loader data; /* the run's batches (none when planning) */
  double data_ms;          /* reading the current step's windows, so far */
  struct fsdp_model fsdp;
  void *model; /* the family's */
  /* The host side of the batches' tokens, two in turn (trainer.c, next_batch). */
  struct token_batch {
    int *inputs, *targets;
    struct event *read; /* recorded after the forward that copied them to the device */
  } batches[2];
  int next_batch;
  struct loss_scaler scaler;
  int optimizer_steps; /* steps taken, skipped ones left out: AdamW's bias correction counts these */
  double flops_per_step; /* the model FLOPs of a step, all ranks (mfu.h) */
  double peak_gflops;    /* the job's peak (a rank's times W); 0: unknown */
  struct lr_schedule schedule; /* --lr, --min-lr, --warmup and --steps; a resumed run's may be extended */
  char setup[TRAIN_SETUP_TEXT_MAX]; /* train_config_setup_text's, for the log */
};

/* Creates the model on device, sharded over group, and opens the data unless planning. */
void trainer_setup(struct trainer *t, const struct train_config *c, struct device *device, struct comm_group *group,
                   int planning);
void trainer_step(struct trainer *t, int step, struct step_metrics *m);
void trainer_teardown(struct trainer *t);

#endif

/* Private to src/train: a training run's sharded checkpoints (docs/architecture.md,
 * "Checkpoints"): where they live (checkpoint_dir.c), what their metadata says
 * (checkpoint_meta.c), and when they are written and read (checkpointing.c). They are
 * handed the pieces they save and restore, never the trainer, as torchtitan's
 * CheckpointManager is handed its model parts, optimizers, schedulers and data loader. */
#ifndef FSDP_TRAIN_CHECKPOINTING_H
#define FSDP_TRAIN_CHECKPOINTING_H

#include <stdint.h>

#include "fsdp/checkpoint.h"
#include "fsdp/train.h"
#include "loss_scaler.h"

/* What a run's checkpoints are made of: each piece the run's own, saved from and
 * restored into. */
struct ckpt_parts {
  const struct train_config *config; /* the flags: what the metadata records, and a resume must share */
  int world_size, batch_per_rank;    /* how the run splits its global batch */
  struct fsdp_model *model;          /* the shards: parameters and AdamW's moments */
  struct data_loader *data;          /* the data set, and where its next global batch starts */
  struct lr_schedule *schedule;      /* a resumed run's may be extended */
  int *optimizer_steps;              /* AdamW's bias correction's count */
  struct loss_scaler *scaler;        /* fp16's dynamic loss scale */
};

/* ---- checkpoint_dir.c: DIR/step-NNNNNNNN/{rank-RRRRR.bin, metadata.json} ---- */

enum { CKPT_PATH_MAX = 4096 };
struct ckpt_path {
  char s[CKPT_PATH_MAX];
};

extern const char CKPT_METADATA[]; /* "metadata.json" */
extern const char CKPT_LOCK[];     /* ".lock": the claim of the run that writes in the folder */

/* dir/name; a path too long ends the job naming --checkpoint-dir. */
struct ckpt_path ckpt_path_join(const char *dir, const char *name);
struct ckpt_path ckpt_step_dir(const char *dir, int step);
/* rank-RRRRR.bin */
struct ckpt_path ckpt_rank_file(int rank);
/* A checkpoint is complete once its metadata is there: it is written last, after every
 * rank's file is durable. */
int ckpt_is_complete(const char *step_dir);
/* Creates dir if it is not there and claims it for this run (one rank, before training):
 * an exclusive lock (flock) on its CKPT_LOCK file, held while the returned descriptor is
 * open; a folder another run holds, or one that cannot be written in, ends the job. */
int ckpt_dir_claim(const char *dir);
/* The steps of dir's checkpoints, ascending (complete ones only, or all); *steps is malloc'd. */
int ckpt_dir_steps(const char *dir, int complete_only, int **steps);
/* The step a checkpoint folder's name says (".../step-00000042": 42), or -1 for another name. */
int ckpt_named_step(const char *step_dir);
/* Removes a checkpoint's directory, its metadata first: a crash midway leaves an
 * incomplete checkpoint, never a complete one with a file missing. */
void ckpt_remove(const char *step_dir);
/* Removes the incomplete checkpoints, and the complete ones but the newest keep (0: all kept). */
void ckpt_dir_prune(const char *dir, int keep);

/* ---- checkpoint_meta.c: metadata.json ---- */

/* What a checkpoint holds besides the shards. The learning rate is a function of the
 * step; the data's position is where the next global batch starts (data_loader.c). */
struct train_state {
  int step; /* steps done */
  int optimizer_steps;
  float loss_scale; /* fp16's dynamic scale; 0: off */
  int good_steps;
  struct lr_schedule schedule;
  struct data_position data;
  const char *data_shard;   /* written: the shard of that window, and the window's index in it */
  size_t data_shard_window;
  int has_data;             /* read: 0 for a checkpoint from before data positions were kept */
  int data_changed;         /* read: its data set is not this run's (accepted: --data-changed accept) */
};

/* A rank's file: its name in the checkpoint directory (or, read back, its path), size,
 * pieces and CRC-32C. */
struct ckpt_file_meta {
  struct ckpt_file file;
  uint32_t crc32c;
};

/* The metadata of a checkpoint of the run p in state s made of files, as JSON text (malloc'd). */
char *ckpt_meta_json(const struct ckpt_parts *p, const struct train_state *s, const struct ckpt_file_meta *files,
                     int n_files);

struct cJSON;
/* The schedule's part of the metadata (state.lr_schedule: what --steps may change on
 * resume), and the schedule read back from it with the run's --lr, --min-lr and --warmup;
 * a field missing or out of range ends the job naming path. */
struct cJSON *ckpt_schedule_json(const struct lr_schedule *s);
struct lr_schedule ckpt_schedule_read(const char *path, const struct cJSON *j, float lr, float min_lr, int warmup);

struct ckpt_meta {
  struct ckpt_path path; /* of metadata.json */
  struct train_state state;
  int n_files;
  struct ckpt_file_meta *files; /* paths are the files' full paths */
};
/* Reads step_dir's metadata and checks it against this run: the model's tensors, the
 * flags that shape training and the data set (its shards' names and token counts; another
 * is refused unless --data-changed accept). Any problem ends the job with a message naming
 * the file or the flag. */
void ckpt_meta_read(const char *step_dir, const struct ckpt_parts *p, struct ckpt_meta *out);
/* Points p's data at the checkpoint's position: the next global batch starts there. */
void ckpt_meta_seek_data(const struct ckpt_meta *meta, const struct ckpt_parts *p);
/* The same for a model m that only takes the checkpoint's weights (eval, export,
 * sample): its tensors must be the checkpoint's; the training flags may differ. */
void ckpt_meta_read_weights(const char *step_dir, const struct fsdp_model *m, struct ckpt_meta *out);
void ckpt_meta_free(struct ckpt_meta *m);

/* ---- checkpointing.c: the run's checkpoints ---- */

struct background_write;
struct checkpointing {
  struct ckpt_parts parts;
  struct comm_group *group; /* every rank of the run */
  int rank;
  const char *dir; /* NULL: none written */
  int every, keep;
  struct ckpt_snapshot snapshot;   /* this rank's part of the checkpoint being written */
  struct background_write *writer; /* writing it, or NULL */
  struct train_state pending;      /* of the checkpoint being written */
  double write_began_ms;
  int lock;                        /* rank 0's claim on dir (ckpt_dir_claim), or -1 */
};

/* Before the first step: creates --checkpoint-dir, and loads the checkpoint --resume
 * names into the parts. Returns the steps already done (0 when starting fresh).
 * Collective over group, every rank of the run. */
int checkpointing_begin(struct checkpointing *c, const struct ckpt_parts *parts, struct comm_group *group);
/* After each step: completes the checkpoint being written once every rank's file is
 * durable, and starts one when step is due. Collective. */
void checkpointing_after_step(struct checkpointing *c, int step);
/* After the last step: waits for the checkpoint being written and completes it. Collective. */
void checkpointing_end(struct checkpointing *c);
/* A stop a signal asked for (train.h, stop_signal_install), after step: a checkpoint of
 * that step is written (unless it is being written already) and completed, waiting for
 * any earlier one first. Returns 1 once it is complete, 0 without --checkpoint-dir. Collective. */
int checkpointing_stop(struct checkpointing *c, int step);
/* Fills m's parameters (and AdamW moments) from the checkpoint at step_dir, its files
 * checked first. Collective over m's group. */
void checkpoint_load_weights(const char *step_dir, struct fsdp_model *m);

#endif

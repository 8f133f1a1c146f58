/* Sharded checkpoints of a model's training state, by parameter: each rank writes a file
 * of pieces, a piece being an element range [begin, end) of one flattened parameter with
 * its fp32 master values and AdamW's m and v for those elements (padding is never
 * written). A parameter is known by its checkpoint name and global shape alone, never by
 * its unit or its place in a flat buffer, so a checkpoint loads under any wrap policy,
 * world size and sharding strategy: each rank reads the pieces that intersect what it
 * owns. The metadata that lists the files and their pieces is the caller's
 * (src/train/checkpoint_meta.c writes it as JSON). */
#ifndef FSDP_CHECKPOINT_H
#define FSDP_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/runtime.h"

/* A parameter's name: the model's, unique in it ("layers.3.attention.wq.weight"). */
enum { CKPT_NAME_MAX = PARAM_NAME_MAX };

/* What each element of a piece holds, in this order in the file: the parameter, then m, then v. */
enum { CKPT_STATES = 3 };
extern const char *const CKPT_STATE_NAMES[CKPT_STATES];

struct ckpt_tensor {
  char name[CKPT_NAME_MAX];
  int ndim;
  size_t shape[PARAM_MAX_DIMS];
  size_t numel;
};

/* Elements [begin, end) of one tensor, at byte `offset` of its file: (end - begin) fp32
 * parameters, then as many m, then as many v. */
struct ckpt_piece {
  char tensor[CKPT_NAME_MAX];
  size_t begin, end;
  size_t offset;
};

/* The model's parameters in unit order, as checkpoints name them; *out is malloc'd. */
int fsdp_checkpoint_tensors(const struct fsdp_model *m, struct ckpt_tensor **out);

/* This rank's part of a checkpoint, in host memory: the bytes of its file. */
struct ckpt_snapshot {
  int n_pieces;
  struct ckpt_piece *pieces;
  void *data;
  size_t bytes;
};

/* Lays out this rank's part and allocates its host buffer, every page touched, so that
 * no save pays for first touches: under full and grad-op sharding the elements the rank
 * owns; under none, where every rank holds everything, the rank's W-th of each
 * parameter, so that W files still hold the model once. The buffer is host memory
 * outside the device's accounting, as large as the rank's file. */
void fsdp_checkpoint_snapshot_init(const struct fsdp_model *m, struct ckpt_snapshot *s);
/* Copies this rank's part into s and waits for the copies. */
void fsdp_checkpoint_snapshot(struct fsdp_model *m, struct ckpt_snapshot *s);
void ckpt_snapshot_free(struct ckpt_snapshot *s);

/* A file of a checkpoint as its metadata describes it. */
struct ckpt_file {
  const char *path;
  size_t bytes;
  int n_pieces;
  const struct ckpt_piece *pieces;
};

/* Fills the parameters and AdamW moments this rank owns from the pieces that intersect
 * them. Every owned element must be in exactly one piece and every piece within its
 * tensor and its file; anything else (a tensor missing, a file shorter than its pieces)
 * ends the job with a message naming the file, or `checkpoint` (the checkpoint's name in
 * messages) for elements in no file. Gradients stay zero. */
void fsdp_checkpoint_load(struct fsdp_model *m, const char *checkpoint, const struct ckpt_file *files, int n_files);

#endif

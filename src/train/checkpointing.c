/* When a run's checkpoints are written and read (docs/architecture.md, "Checkpoints").
 *
 * Writing stalls training only while each rank copies its shards into host memory; a
 * background thread then writes the rank's file (temporary name, fsync, rename). The
 * thread does file I/O only: every collective here runs on the training thread between
 * steps. Once every rank's file is durable (polled with one small all-reduce per step),
 * rank 0 gathers their sizes, pieces and CRCs and writes metadata.json the same durable
 * way: that marks the checkpoint complete. The next checkpoint, or the end of training,
 * waits for the one being written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpointing.h"
#include "fsdp/background_write.h"
#include "fsdp/comm.h"
#include "fsdp/durable_file.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/timer.h"

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* ---- resuming ---- */

/* The checkpoint to resume from, decided by rank 0 and broadcast ("" for none), so that
 * every rank loads the same one. */
static struct ckpt_path resume_dir(const struct checkpointing *c) {
  struct ckpt_path p = {{0}};
  const char *resume = c->parts.config->resume;
  if (c->rank == 0 && strcmp(resume, "auto") == 0) {
    int *steps;
    int n = ckpt_dir_steps(c->dir, 1, &steps);
    if (n > 0)
      p = ckpt_step_dir(c->dir, steps[n - 1]);
    else
      fsdp_log_info("resume: no complete checkpoint in '%s': starting fresh", c->dir);
    free(steps);
  } else if (c->rank == 0) {
    if (strlen(resume) >= sizeof p.s) fsdp_fatal("--resume: the path '%s' is too long", resume);
    strcpy(p.s, resume);
  }
  comm_broadcast(c->group, p.s, sizeof p.s, 0);
  return p;
}

/* Each rank reads back every W-th file whole and checks its size and CRC-32C; the pieces
 * a rank loads are checked against their file's size as it opens it. */
static void verify_files(const struct ckpt_meta *meta, struct comm_group *group) {
  for (int f = comm_rank(group); f < meta->n_files; f += comm_size(group)) {
    const struct ckpt_file_meta *file = &meta->files[f];
    size_t bytes;
    uint32_t crc;
    char why[1024];
    if (file_crc32c(file->file.path, &bytes, &crc, why, sizeof why) != 0) fsdp_fatal("checkpoint file: %s", why);
    if (bytes != file->file.bytes)
      fsdp_fatal("checkpoint file '%s' is %s: %zu bytes, %s says %zu", file->file.path,
                 bytes < file->file.bytes ? "truncated" : "longer than written", bytes, meta->path.s,
                 file->file.bytes);
    if (crc != file->crc32c)
      fsdp_fatal("checkpoint file '%s' is corrupt: its CRC-32C is %08x, %s says %08x", file->file.path,
                 (unsigned)crc, meta->path.s, (unsigned)file->crc32c);
  }
}

/* Checks meta's files and loads them into m; returns their bytes. */
static size_t load(const char *step_dir, const struct ckpt_meta *meta, struct fsdp_model *m) {
  verify_files(meta, m->group);
  struct ckpt_file *files = fsdp_xcalloc((size_t)meta->n_files, sizeof *files);
  size_t bytes = 0;
  for (int f = 0; f < meta->n_files; f++) {
    files[f] = meta->files[f].file;
    bytes += files[f].bytes;
  }
  fsdp_checkpoint_load(m, step_dir, files, meta->n_files);
  free(files);
  return bytes;
}

void checkpoint_load_weights(const char *step_dir, struct fsdp_model *m) {
  struct ckpt_meta meta;
  ckpt_meta_read_weights(step_dir, m, &meta);
  load(step_dir, &meta, m);
  ckpt_meta_free(&meta);
}

/* The checkpoint's schedule, to the new --steps where it differs: the steps after the
 * checkpoint run as if --steps had been given when they began (lr_schedule_extend). */
static void resume_schedule(const struct ckpt_parts *p, const struct lr_schedule *saved, int step,
                            const char *dir) {
  int steps = p->config->steps;
  *p->schedule = *saved;
  if (steps == saved->total) return;
  if (steps <= step)
    fsdp_fatal("--steps %d: the checkpoint '%s' is at step %d; a resumed run needs --steps above it", steps, dir,
               step);
  *p->schedule = lr_schedule_extend(saved, step, steps);
  const struct lr_schedule *e = p->schedule;
  /* Step s runs at the schedule's rate at s - 1; its warmup ends at step warmup + 1. */
  char then[160];
  if (e->warmup >= steps)
    snprintf(then, sizeof then, "still warming up at the last step (--warmup %d is longer than the run)", e->warmup);
  else if (step < e->warmup)
    snprintf(then, sizeof then, "warming up to --lr %.3e at step %d, then decaying to --min-lr %.3e at step %d",
             (double)e->lr, e->warmup + 1, (double)e->min_lr, steps);
  else
    snprintf(then, sizeof then, "its decay reaching --min-lr %.3e at step %d", (double)e->min_lr, steps);
  fsdp_log_info("resume: --steps %d, the checkpoint's %d: the learning rate goes on from %.3e at step %d, %s", steps,
                saved->total, (double)lr_at(e, step), step + 1, then);
}

static int resume(const struct checkpointing *c) {
  const struct ckpt_parts *p = &c->parts;
  struct ckpt_path dir = resume_dir(c);
  if (!dir.s[0]) return 0;
  double began = time_now_ms();
  struct ckpt_meta meta;
  ckpt_meta_read(dir.s, p, &meta);
  size_t bytes = load(dir.s, &meta, p->model);
  *p->optimizer_steps = meta.state.optimizer_steps;
  p->scaler->scale = meta.state.loss_scale;
  p->scaler->good_steps = meta.state.good_steps;
  int step = meta.state.step;
  fsdp_log_info("resume: from '%s' at step %d (%d files, %.1f MiB, checked and read in %.0f ms)", dir.s, step,
                meta.n_files, mib(bytes), time_now_ms() - began);
  resume_schedule(p, &meta.state.schedule, step, dir.s);
  ckpt_meta_seek_data(&meta, p);
  ckpt_meta_free(&meta);
  return step;
}

/* Complete checkpoints of steps after the one this run starts from are another run's
 * (one this run went back from, or one it does not resume): --keep-last would keep them
 * over this run's own, and --resume auto would later go on from them. */
static void refuse_later_checkpoints(const char *dir, int done) {
  int *steps, n = ckpt_dir_steps(dir, 1, &steps);
  int later = 0;
  while (later < n && steps[n - 1 - later] > done) later++;
  if (later) {
    struct ckpt_path newest = ckpt_step_dir(dir, steps[n - 1]);
    if (done)
      fsdp_fatal("--checkpoint-dir: '%s' holds %d checkpoint(s) of steps after step %d, which this run resumes from "
                 "(the newest '%s'), of the run it goes back from: its own would mix with them. Move them elsewhere, "
                 "or give another --checkpoint-dir",
                 dir, later, done, newest.s);
    fsdp_fatal("--checkpoint-dir: '%s' holds %d checkpoint(s) of an earlier run (the newest '%s'): --resume auto "
               "continues it; to start afresh, move them elsewhere or give another --checkpoint-dir",
               dir, later, newest.s);
  }
  free(steps);
}

int checkpointing_begin(struct checkpointing *c, const struct ckpt_parts *parts, struct comm_group *group) {
  memset(c, 0, sizeof *c);
  c->parts = *parts;
  c->group = group;
  c->rank = comm_rank(group);
  const struct train_config *config = parts->config;
  c->dir = config->checkpoint_dir;
  c->every = config->checkpoint_every;
  c->keep = config->keep_last;
  c->lock = c->dir && c->rank == 0 ? ckpt_dir_claim(c->dir) : -1;
  if (c->dir) fsdp_checkpoint_snapshot_init(parts->model, &c->snapshot);
  int done = config->resume ? resume(c) : 0;
  if (c->dir && c->rank == 0) {
    refuse_later_checkpoints(c->dir, done);
    /* What a killed run left half-written is never loaded; it goes now. */
    ckpt_dir_prune(c->dir, 0);
  }
  return done;
}

/* ---- writing ---- */

/* What each rank tells rank 0 about its file once it is durable; its pieces follow it. */
struct file_record {
  uint64_t bytes;
  uint32_t crc32c;
  int32_t n_pieces;
};

static void write_metadata(struct checkpointing *c, const char *records, size_t total) {
  int world_size = c->parts.world_size;
  struct ckpt_file_meta *files = fsdp_xcalloc((size_t)world_size, sizeof *files);
  struct ckpt_path *names = fsdp_xcalloc((size_t)world_size, sizeof *names);
  size_t at = 0, bytes = 0;
  for (int r = 0; r < world_size; r++) {
    struct file_record rec;
    FSDP_CHECK(at + sizeof rec <= total);
    memcpy(&rec, records + at, sizeof rec);
    at += sizeof rec;
    struct ckpt_piece *pieces = fsdp_xcalloc((size_t)(rec.n_pieces ? rec.n_pieces : 1), sizeof *pieces);
    FSDP_CHECK(at + (size_t)rec.n_pieces * sizeof *pieces <= total);
    memcpy(pieces, records + at, (size_t)rec.n_pieces * sizeof *pieces);
    at += (size_t)rec.n_pieces * sizeof *pieces;
    names[r] = ckpt_rank_file(r);
    files[r] = (struct ckpt_file_meta){{names[r].s, rec.bytes, rec.n_pieces, pieces}, rec.crc32c};
    bytes += rec.bytes;
  }
  char *json = ckpt_meta_json(&c->parts, &c->pending, files, world_size);
  struct ckpt_path step_dir = ckpt_step_dir(c->dir, c->pending.step);
  struct ckpt_path path = ckpt_path_join(step_dir.s, CKPT_METADATA);
  uint32_t crc;
  char why[1024];
  if (durable_write(path.s, json, strlen(json), &crc, why, sizeof why) != 0) fsdp_fatal("--checkpoint-dir: %s", why);
  free(json);
  for (int r = 0; r < world_size; r++) free((struct ckpt_piece *)files[r].file.pieces);
  free(files);
  free(names);
  fsdp_log_info("checkpoint step %d complete: '%s', %.1f MiB in %d files, durable %.0f ms after it began",
                c->pending.step, step_dir.s, mib(bytes), world_size, time_now_ms() - c->write_began_ms);
  ckpt_dir_prune(c->dir, c->keep);
}

/* Waits for this rank's file, then rank 0 writes the metadata. Collective. */
static void complete(struct checkpointing *c) {
  uint32_t crc;
  char why[1024];
  if (background_write_finish(c->writer, &crc, why, sizeof why) != 0) fsdp_fatal("--checkpoint-dir: %s", why);
  c->writer = NULL;
  const struct ckpt_snapshot *s = &c->snapshot;
  struct file_record rec = {s->bytes, crc, s->n_pieces};
  size_t pieces_bytes = (size_t)s->n_pieces * sizeof *s->pieces, send_bytes = sizeof rec + pieces_bytes;
  char *send = fsdp_xmalloc(send_bytes);
  memcpy(send, &rec, sizeof rec);
  memcpy(send + sizeof rec, s->pieces, pieces_bytes);
  size_t total = 0;
  char *all = comm_gather_bytes(c->group, send, send_bytes, 0, &total);
  free(send);
  if (c->rank == 0) write_metadata(c, all, total);
  free(all);
}

static void start(struct checkpointing *c, int step) {
  const struct ckpt_parts *p = &c->parts;
  double began = time_now_ms();
  fsdp_checkpoint_snapshot(p->model, &c->snapshot);
  double copied = time_now_ms();
  struct ckpt_path step_dir = ckpt_step_dir(c->dir, step);
  if (c->rank == 0 && mkdir(step_dir.s, 0755) != 0)
    fsdp_fatal("--checkpoint-dir: cannot create '%s': %s", step_dir.s, strerror(errno));
  /* No rank writes before the directory is there. */
  comm_barrier(c->group);
  struct ckpt_path file = ckpt_path_join(step_dir.s, ckpt_rank_file(c->rank).s);
  c->writer = background_write_start(file.s, c->snapshot.data, c->snapshot.bytes);
  c->pending = (struct train_state){.step = step, .optimizer_steps = *p->optimizer_steps,
                                    .loss_scale = p->scaler->scale, .good_steps = p->scaler->good_steps,
                                    .schedule = *p->schedule, .data = data_loader_position(p->data, (uint64_t)step)};
  data_loader_describe(p->data, c->pending.data, &c->pending.data_shard, &c->pending.data_shard_window);
  c->write_began_ms = began;
  fsdp_log_info("checkpoint step %d: %.1f MiB per rank copied out in %.1f ms; training stalled %.1f ms, the files "
                "are written in the background",
                step, mib(c->snapshot.bytes), copied - began, time_now_ms() - began);
}

void checkpointing_after_step(struct checkpointing *c, int step) {
  if (c->writer) {
    double busy = background_write_done(c->writer) ? 0.0 : 1.0;
    if (fsdp_model_max_across_ranks(c->parts.model, busy) == 0.0) complete(c);
  }
  int due = c->dir && ((c->every && step % c->every == 0) || step == c->parts.config->steps);
  if (!due) return;
  if (c->writer) complete(c);
  start(c, step);
}

int checkpointing_stop(struct checkpointing *c, int step) {
  if (!c->dir) return 0;
  if (!c->writer || c->pending.step != step) {
    if (c->writer) complete(c);
    start(c, step);
  }
  complete(c);
  return 1;
}

void checkpointing_end(struct checkpointing *c) {
  if (c->writer) complete(c);
  ckpt_snapshot_free(&c->snapshot);
  if (c->lock >= 0) close(c->lock);
}

#include "fsdp/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/stream.h"

const char *const CKPT_STATE_NAMES[CKPT_STATES] = {"param", "adam_m", "adam_v"};

/* Bytes a piece of n elements takes in its file. */
static size_t piece_bytes(size_t n) { return CKPT_STATES * n * sizeof(float); }

int fsdp_checkpoint_tensors(const struct fsdp_model *m, struct ckpt_tensor **out) {
  int n = 0;
  for (int i = 0; i < m->n_units; i++) n += m->units[i]->layout.n_params;
  struct ckpt_tensor *t = fsdp_xcalloc((size_t)n, sizeof *t);
  int k = 0;
  for (int i = 0; i < m->n_units; i++) {
    const struct fsdp_unit *u = m->units[i];
    for (int p = 0; p < u->layout.n_params; p++, k++) {
      const struct flat_param_entry *e = &u->layout.params[p];
      snprintf(t[k].name, sizeof t[k].name, "%s", e->name);
      t[k].ndim = e->ndim;
      memcpy(t[k].shape, e->shape, sizeof t[k].shape);
      t[k].numel = e->numel;
    }
  }
  *out = t;
  return n;
}

/* The elements of parameter p this rank writes (param-local) and where they start in its
 * shard. Ranks that hold the same elements split them evenly, so that the files hold the
 * model once: every rank under none, the replicas of a shard under HSDP. */
static struct owned_range written_range(const struct fsdp_model *m, const struct fsdp_unit *u, int p) {
  struct sharded_param_info info = fsdp_unit_param_info(u, p);
  struct owned_range r = {info.begin, info.end, info.shard_offset};
  struct comm_group *holders = u->strategy == SHARD_NONE ? m->group : m->streams.replicate_group;
  if (!holders || comm_size(holders) == 1) return r;
  size_t n = info.end - info.begin, w = (size_t)comm_size(holders), rank = (size_t)comm_rank(holders);
  r.begin = info.begin + n * rank / w;
  r.end = info.begin + n * (rank + 1) / w;
  r.shard_offset = info.shard_offset + n * rank / w;
  return r;
}

/* The pieces in unit and parameter order, empty ranges left out, packed one after another. */
void fsdp_checkpoint_snapshot_init(const struct fsdp_model *m, struct ckpt_snapshot *s) {
  int n = 0;
  for (int i = 0; i < m->n_units; i++)
    for (int p = 0; p < m->units[i]->layout.n_params; p++) {
      struct owned_range r = written_range(m, m->units[i], p);
      n += r.end > r.begin;
    }
  s->pieces = fsdp_xcalloc((size_t)(n ? n : 1), sizeof *s->pieces);
  s->n_pieces = 0;
  s->bytes = 0;
  for (int i = 0; i < m->n_units; i++)
    for (int p = 0; p < m->units[i]->layout.n_params; p++) {
      struct owned_range r = written_range(m, m->units[i], p);
      if (r.end == r.begin) continue;
      struct ckpt_piece *pc = &s->pieces[s->n_pieces++];
      snprintf(pc->tensor, sizeof pc->tensor, "%s", m->units[i]->layout.params[p].name);
      pc->begin = r.begin;
      pc->end = r.end;
      pc->offset = s->bytes;
      s->bytes += piece_bytes(r.end - r.begin);
    }
  s->data = fsdp_xmalloc(s->bytes);
  memset(s->data, 0, s->bytes);
}

void fsdp_checkpoint_snapshot(struct fsdp_model *m, struct ckpt_snapshot *s) {
  FSDP_CHECK(s->pieces != NULL);
  struct stream *home = fsdp_streams_home(&m->streams);
  int k = 0;
  for (int i = 0; i < m->n_units; i++) {
    const struct fsdp_unit *u = m->units[i];
    const float *sources[CKPT_STATES] = {u->param_shard, u->adam_m, u->adam_v};
    for (int p = 0; p < u->layout.n_params; p++) {
      struct owned_range r = written_range(m, u, p);
      size_t n = r.end - r.begin;
      if (!n) continue;
      char *dst = (char *)s->data + s->pieces[k++].offset;
      for (int state = 0; state < CKPT_STATES; state++)
        device_copy_to_host(home, dst + state * n * sizeof(float), sources[state] + r.shard_offset,
                            n * sizeof(float));
    }
  }
  FSDP_CHECK(k == s->n_pieces);
  stream_synchronize(home);
}

void ckpt_snapshot_free(struct ckpt_snapshot *s) {
  free(s->pieces);
  free(s->data);
  memset(s, 0, sizeof *s);
}

/* ---- loading ---- */

struct reader {
  const char *checkpoint;
  const struct ckpt_file *files;
  int n_files;
  int *fds; /* opened on first use; -1 until then */
};

/* Opens file f, checking that it holds the bytes its metadata says. */
static int file_fd(struct reader *rd, int f) {
  if (rd->fds[f] >= 0) return rd->fds[f];
  const struct ckpt_file *file = &rd->files[f];
  struct input_file in;
  input_file_open(&in, "checkpoint file", file->path);
  if (in.size != file->bytes)
    fsdp_fatal("checkpoint file '%s' is %s: %zu bytes, its metadata says %zu", file->path,
               in.size < file->bytes ? "truncated" : "longer than written", in.size, file->bytes);
  return rd->fds[f] = in.fd;
}

static void read_at(struct reader *rd, int f, void *dst, size_t bytes, size_t offset) {
  int fd = file_fd(rd, f);
  for (size_t done = 0; done < bytes;) {
    ssize_t n = pread(fd, (char *)dst + done, bytes - done, (off_t)(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fsdp_fatal("checkpoint file '%s': cannot read: %s", rd->files[f].path, strerror(errno));
    if (n == 0) fsdp_fatal("checkpoint file '%s' shrank while it was read", rd->files[f].path);
    done += (size_t)n;
  }
}

static void check_pieces(const struct reader *rd, const struct ckpt_tensor *tensors, int n_tensors) {
  for (int f = 0; f < rd->n_files; f++) {
    const struct ckpt_file *file = &rd->files[f];
    size_t end_of_last = 0;
    for (int k = 0; k < file->n_pieces; k++) {
      const struct ckpt_piece *pc = &file->pieces[k];
      const struct ckpt_tensor *t = NULL;
      for (int i = 0; i < n_tensors && !t; i++)
        if (strcmp(tensors[i].name, pc->tensor) == 0) t = &tensors[i];
      if (!t) fsdp_fatal("checkpoint file '%s' holds tensor '%s', which this model does not have", file->path, pc->tensor);
      if (pc->begin >= pc->end || pc->end > t->numel)
        fsdp_fatal("checkpoint file '%s': elements [%zu, %zu) of '%s' are not within its %zu elements", file->path,
                   pc->begin, pc->end, pc->tensor, t->numel);
      /* As the writer lays them: end to end, so that no two share a byte. */
      if (pc->offset != end_of_last)
        fsdp_fatal("checkpoint file '%s': the piece of '%s' is at byte %zu, where the one before it ends at byte %zu "
                   "(a file's pieces lie end to end)",
                   file->path, pc->tensor, pc->offset, end_of_last);
      if (pc->offset > file->bytes || piece_bytes(pc->end - pc->begin) > file->bytes - pc->offset)
        fsdp_fatal("checkpoint file '%s': the piece of '%s' at byte %zu runs past the file's %zu bytes", file->path,
                   pc->tensor, pc->offset, file->bytes);
      end_of_last = pc->offset + piece_bytes(pc->end - pc->begin);
    }
    if (end_of_last != file->bytes)
      fsdp_fatal("checkpoint file '%s': its pieces end at byte %zu, before the file's %zu bytes", file->path,
                 end_of_last, file->bytes);
  }
}

/* Reads the owned elements [r.begin, r.end) of tensor `name` into the unit's host copies
 * (param, m, v: shard elements each); returns how many elements the pieces covered. */
static size_t read_owned(struct reader *rd, const char *name, struct owned_range r, float *host[CKPT_STATES]) {
  size_t covered = 0;
  for (int f = 0; f < rd->n_files; f++)
    for (int k = 0; k < rd->files[f].n_pieces; k++) {
      const struct ckpt_piece *pc = &rd->files[f].pieces[k];
      if (strcmp(pc->tensor, name) != 0) continue;
      size_t lo = pc->begin > r.begin ? pc->begin : r.begin, hi = pc->end < r.end ? pc->end : r.end;
      if (lo >= hi) continue;
      size_t n = pc->end - pc->begin;
      for (int state = 0; state < CKPT_STATES; state++)
        read_at(rd, f, host[state] + r.shard_offset + (lo - r.begin), (hi - lo) * sizeof(float),
                pc->offset + (state * n + (lo - pc->begin)) * sizeof(float));
      covered += hi - lo;
    }
  return covered;
}

static void load_unit(struct fsdp_model *m, struct reader *rd, struct fsdp_unit *u) {
  size_t shard = u->layout.shard;
  float *buffer = fsdp_xcalloc(CKPT_STATES * shard, sizeof(float)); /* padding stays zero */
  float *host[CKPT_STATES] = {buffer, buffer + shard, buffer + 2 * shard};
  for (int p = 0; p < u->layout.n_params; p++) {
    struct sharded_param_info info = fsdp_unit_param_info(u, p);
    struct owned_range r = {info.begin, info.end, info.shard_offset};
    const char *name = u->layout.params[p].name;
    size_t covered = read_owned(rd, name, r, host);
    if (covered < r.end - r.begin)
      fsdp_fatal("checkpoint '%s': some of elements [%zu, %zu) of '%s' are in none of its files", rd->checkpoint,
                 r.begin, r.end, name);
    if (covered > r.end - r.begin)
      fsdp_fatal("checkpoint '%s': some of elements [%zu, %zu) of '%s' are in more than one piece", rd->checkpoint,
                 r.begin, r.end, name);
  }
  struct stream *home = fsdp_streams_home(&m->streams);
  float *targets[CKPT_STATES] = {u->param_shard, u->adam_m, u->adam_v};
  for (int state = 0; state < CKPT_STATES; state++)
    device_copy_to_device(home, targets[state], host[state], shard * sizeof(float));
  stream_synchronize(home);
  u->rounded_stale = 1;
  free(buffer);
}

void fsdp_checkpoint_load(struct fsdp_model *m, const char *checkpoint, const struct ckpt_file *files, int n_files) {
  struct ckpt_tensor *tensors;
  int n_tensors = fsdp_checkpoint_tensors(m, &tensors);
  struct reader rd = {checkpoint, files, n_files, fsdp_xmalloc(sizeof(int) * (size_t)(n_files ? n_files : 1))};
  for (int f = 0; f < n_files; f++) rd.fds[f] = -1;
  check_pieces(&rd, tensors, n_tensors);
  for (int i = 0; i < m->n_units; i++) load_unit(m, &rd, m->units[i]);
  for (int f = 0; f < n_files; f++)
    if (rd.fds[f] >= 0) close(rd.fds[f]);
  free(rd.fds);
  free(tensors);
}

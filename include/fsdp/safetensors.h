/* Hugging Face's safetensors format (https://github.com/huggingface/safetensors): an
 * 8-byte little-endian header length, a JSON header mapping each tensor's name to its
 * dtype, shape and [begin, end) byte offsets into the data that follows, and the data,
 * every byte of it belonging to exactly one tensor. Large models are split into
 * model-0000i-of-0000n.safetensors files named by a model.safetensors.index.json
 * ("weight_map": tensor name -> file).
 *
 * Reading checks the whole header when a file is opened, and then reads any element
 * range of a tensor with pread, so that a rank reads only the part of a parameter it
 * owns. Writing streams the tensors' bytes in the order they were declared into a
 * temporary file, which is synced and renamed when complete. Every problem ends the job
 * with a message naming the file and, where there is one, the tensor. */
#ifndef FSDP_SAFETENSORS_H
#define FSDP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/dtype.h"

enum { SAFETENSORS_MAX_DIMS = 8 };

struct safetensors_tensor {
  const char *name;
  const char *dtype_name; /* as in the header: "F32", "BF16", "I64", ... */
  int readable;           /* F32, BF16 or F16: the dtypes read as fp32 */
  enum dtype dtype;       /* when readable */
  size_t element_size;
  int ndim;
  uint64_t shape[SAFETENSORS_MAX_DIMS];
  uint64_t numel;
  uint64_t begin, end; /* bytes, from the start of the data */
};

struct safetensors_file {
  char *path;
  int fd;
  uint64_t data_start; /* 8 + the header's length */
  int n_tensors;
  struct safetensors_tensor *tensors; /* sorted by name */
  void *header;                       /* the parsed JSON, which the names point into */
};

/* Opens path and checks its header: the length, the JSON, each tensor's fields, dtype
 * (any of the format's; only F32, BF16 and F16 can be read), shape and offsets (the
 * size shape x dtype, no overlap, no gap, nothing past the end of the file). */
void safetensors_open(struct safetensors_file *f, const char *path);
void safetensors_close(struct safetensors_file *f);
/* The tensor named, or NULL. */
const struct safetensors_tensor *safetensors_find(const struct safetensors_file *f, const char *name);
/* Elements [first, first + count) of t, flattened in row-major order, as fp32. */
void safetensors_read_f32(const struct safetensors_file *f, const struct safetensors_tensor *t, uint64_t first,
                          size_t count, float *out);

/* A tensor to write: its data follows in declaration order. */
struct safetensors_entry {
  const char *name;
  enum dtype dtype; /* DTYPE_F32, DTYPE_BF16 or DTYPE_F16 */
  int ndim;
  uint64_t shape[SAFETENSORS_MAX_DIMS];
};
uint64_t safetensors_entry_bytes(const struct safetensors_entry *e);

struct safetensors_writer {
  char *path, *tmp;
  int fd;
  uint64_t expected, written; /* data bytes */
};

/* Writes the header of entries (metadata {"format": "pt"}, as transformers expects) to
 * path's temporary file; their data is to follow with safetensors_write_f32. */
void safetensors_writer_open(struct safetensors_writer *w, const char *path, const struct safetensors_entry *entries,
                             int n);
/* Appends n values, narrowed to dtype (the entry's being written). */
void safetensors_write_f32(struct safetensors_writer *w, enum dtype dtype, const float *values, size_t n);
/* Checks that every declared byte was written, syncs and renames the file into place. */
void safetensors_writer_close(struct safetensors_writer *w);
/* The same but the rename: the file stays, complete and synced, under w->tmp, for a set to rename with all of its
 * files once every one is complete. w->tmp and w->path are the caller's to free. */
void safetensors_writer_sync(struct safetensors_writer *w);

/* ---- sets: one file, or several and their index ---- */

struct safetensors_set {
  char *path; /* what was opened: a file, an index or a directory */
  int n_files;
  struct safetensors_file *files;
};

/* path: a .safetensors file, a model.safetensors.index.json, or a directory holding
 * model.safetensors or model.safetensors.index.json. Every file of an index is opened,
 * and each tensor it maps must be in the file it names. */
void safetensors_set_open(struct safetensors_set *s, const char *path);
void safetensors_set_close(struct safetensors_set *s);
/* The tensor named, and the file holding it, or NULL. */
const struct safetensors_tensor *safetensors_set_find(const struct safetensors_set *s, const char *name,
                                                      const struct safetensors_file **file);

/* Writes entries into directory dir: model.safetensors when they total at most
 * max_file_bytes of data, else files of at most that much each (a tensor larger than the
 * limit alone in a file), model-0000i-of-0000n.safetensors, and the index. Every file is
 * written under a temporary name, and dir is left as it was until the close renames them
 * all into place (safetensors_set.c says in which order, and what a crash then leaves);
 * a job that fails before removes them. Files of an earlier set in dir that the new one
 * does not use are removed, and so are the temporary files of an earlier set's export
 * that was killed. */
struct safetensors_set_writer {
  char *dir;
  const struct safetensors_entry *entries;
  int n_entries, n_files;
  int *file_of;      /* entry -> file */
  int next_entry;    /* the entry whose data comes next */
  uint64_t left;     /* of that entry's bytes */
  int current;       /* the open file, or -1 */
  struct safetensors_writer writer;
  /* Complete under their temporary names, waiting for the close: the set's files in order, and those added. */
  struct safetensors_pending {
    char *tmp, *path;
  } *pending;
  size_t n_pending, pending_cap;
};
void safetensors_set_writer_open(struct safetensors_set_writer *w, const char *dir,
                                 const struct safetensors_entry *entries, int n, uint64_t max_file_bytes);
/* Appends n values of the entries' data, in order, as safetensors_write_f32; a call may
 * not span two entries. */
void safetensors_set_write_f32(struct safetensors_set_writer *w, const float *values, size_t n);
/* A file that goes with the set (config.json): dir/name, n bytes of data, written now under its temporary name
 * and renamed in by the close with the set's own files. */
void safetensors_set_writer_add(struct safetensors_set_writer *w, const char *name, const void *data, size_t n);
void safetensors_set_writer_close(struct safetensors_set_writer *w);

#endif

/* A model's safetensors: one file, or several and the index that maps each tensor to
 * its file (fsdp/safetensors.h), as transformers' save_pretrained writes them. */
#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsdp/durable_file.h"
#include "fsdp/file_commit.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/safetensors.h"

static const char SINGLE_NAME[] = "model.safetensors", INDEX_NAME[] = "model.safetensors.index.json";

/* malloc'd "dir/name". */
static char *join(const char *dir, const char *name) {
  size_t size = strlen(dir) + strlen(name) + 2;
  char *path = fsdp_xmalloc(size);
  snprintf(path, size, "%s/%s", dir, name);
  return path;
}

/* malloc'd: the folder holding path. */
static char *folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *dir = fsdp_xmalloc(n + 1);
  memcpy(dir, path, n);
  dir[n] = '\0';
  return dir;
}

/* Present, whatever it is: a FIFO or a directory by that name is then refused by name. */
static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Opens each file the index names (once), and checks that every tensor it maps is in the
 * file it names. */
static void open_index(struct safetensors_set *s, const char *index_path) {
  size_t length;
  char *text = input_file_read_all("safetensors index", index_path, INPUT_JSON_MAX_BYTES, &length);
  cJSON *root = cJSON_ParseWithLength(text, length);
  free(text);
  if (!root) fsdp_fatal("%s: not valid JSON", index_path);
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  if (!cJSON_IsObject(root) || !cJSON_IsObject(map)) fsdp_fatal("%s: no \"weight_map\" object", index_path);
  int n_entries = cJSON_GetArraySize(map);
  if (n_entries == 0) fsdp_fatal("%s: the \"weight_map\" is empty", index_path);
  const char **names = fsdp_xcalloc((size_t)n_entries, sizeof *names);
  int *file_of = fsdp_xcalloc((size_t)n_entries, sizeof *file_of);
  int i = 0;
  for (const cJSON *e = map->child; e; e = e->next, i++) {
    if (!cJSON_IsString(e)) fsdp_fatal("%s: weight_map: tensor '%s': its file is not a string", index_path, e->string);
    const char *file = e->valuestring;
    if (!file[0] || strchr(file, '/') || strcmp(file, "..") == 0)
      fsdp_fatal("%s: weight_map: tensor '%s': '%s' is not a file name beside the index", index_path, e->string, file);
    int k = 0;
    while (k < s->n_files && strcmp(names[k], file) != 0) k++;
    if (k == s->n_files) names[s->n_files++] = file;
    file_of[i] = k;
  }
  char *dir = folder_of(index_path);
  s->files = fsdp_xcalloc((size_t)s->n_files, sizeof *s->files);
  for (int k = 0; k < s->n_files; k++) {
    char *path = join(dir, names[k]);
    safetensors_open(&s->files[k], path);
    free(path);
  }
  i = 0;
  for (const cJSON *e = map->child; e; e = e->next, i++)
    if (!safetensors_find(&s->files[file_of[i]], e->string))
      fsdp_fatal("%s: weight_map: tensor '%s' is not in %s, the file it names", index_path, e->string,
                 s->files[file_of[i]].path);
  /* A tensor in two files would make the set's contents depend on the order of reading. */
  for (int a = 0; a < s->n_files; a++)
    for (int t = 0; t < s->files[a].n_tensors; t++)
      for (int b = a + 1; b < s->n_files; b++)
        if (safetensors_find(&s->files[b], s->files[a].tensors[t].name))
          fsdp_fatal("%s: tensor '%s' is in both %s and %s", index_path, s->files[a].tensors[t].name,
                     s->files[a].path, s->files[b].path);
  free(dir);
  free(file_of);
  free(names);
  cJSON_Delete(root);
}

static void open_one(struct safetensors_set *s, const char *path) {
  s->n_files = 1;
  s->files = fsdp_xcalloc(1, sizeof *s->files);
  safetensors_open(&s->files[0], path);
}

void safetensors_set_open(struct safetensors_set *s, const char *path) {
  memset(s, 0, sizeof *s);
  s->path = strdup(path);
  if (!s->path) fsdp_fatal("out of memory");
  struct stat st;
  if (stat(path, &st) != 0) fsdp_fatal("%s: cannot open: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    /* transformers' order: the single file first. */
    char *single = join(path, SINGLE_NAME), *index = join(path, INDEX_NAME);
    if (exists(single))
      open_one(s, single);
    else if (exists(index))
      open_index(s, index);
    else
      fsdp_fatal("%s: a folder with neither %s nor %s", path, SINGLE_NAME, INDEX_NAME);
    free(single);
    free(index);
  } else if (ends_with(path, ".json")) {
    open_index(s, path);
  } else {
    open_one(s, path);
  }
}

void safetensors_set_close(struct safetensors_set *s) {
  for (int k = 0; k < s->n_files; k++) safetensors_close(&s->files[k]);
  free(s->files);
  free(s->path);
  memset(s, 0, sizeof *s);
}

const struct safetensors_tensor *safetensors_set_find(const struct safetensors_set *s, const char *name,
                                                      const struct safetensors_file **file) {
  for (int k = 0; k < s->n_files; k++) {
    const struct safetensors_tensor *t = safetensors_find(&s->files[k], name);
    if (t) {
      *file = &s->files[k];
      return t;
    }
  }
  return NULL;
}

/* ---- writing ---- */

static char *file_name(int k, int n_files) {
  char name[64];
  if (n_files == 1)
    snprintf(name, sizeof name, "%s", SINGLE_NAME);
  else
    snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, n_files);
  return strdup(name);
}

/* The set being written, whose temporary files a job that ends on an error removes: fsdp_fatal ends the process
 * with exit(), which runs remove_unfinished. A kill (or MPI's abort when another rank fails) leaves them, for the
 * next export into the folder to remove (remove_stale). */
static struct safetensors_set_writer *unfinished;

static void remove_unfinished(void) {
  struct safetensors_set_writer *w = unfinished;
  if (!w) return;
  if (w->writer.tmp) remove(w->writer.tmp);
  for (size_t i = 0; i < w->n_pending; i++) remove(w->pending[i].tmp);
}

static void add_pending(struct safetensors_set_writer *w, char *tmp, char *path) {
  w->pending = fsdp_xgrow(w->pending, &w->pending_cap, w->n_pending + 1, sizeof *w->pending, 8);
  w->pending[w->n_pending++] = (struct safetensors_pending){tmp, path};
}

/* Makes the next entry that has bytes the one the next write is for (empty ones are
 * written by their header alone). */
static void skip_to_next_entry(struct safetensors_set_writer *w) {
  w->left = 0;
  while (w->left == 0 && ++w->next_entry < w->n_entries) w->left = safetensors_entry_bytes(&w->entries[w->next_entry]);
}

void safetensors_set_writer_open(struct safetensors_set_writer *w, const char *dir,
                                 const struct safetensors_entry *entries, int n, uint64_t max_file_bytes) {
  FSDP_CHECK(n > 0 && max_file_bytes > 0);
  static int handler_set;
  if (!handler_set && atexit(remove_unfinished) != 0) fsdp_fatal("cannot register the removal of temporary files");
  handler_set = 1;
  memset(w, 0, sizeof *w);
  w->dir = strdup(dir);
  w->entries = entries;
  w->n_entries = n;
  w->file_of = fsdp_xcalloc((size_t)n, sizeof *w->file_of);
  uint64_t in_file = 0;
  for (int i = 0; i < n; i++) {
    uint64_t bytes = safetensors_entry_bytes(&entries[i]);
    if (i > 0 && in_file + bytes > max_file_bytes) {
      w->n_files++;
      in_file = 0;
    }
    w->file_of[i] = w->n_files;
    in_file += bytes;
  }
  w->n_files++;
  w->current = -1;
  w->next_entry = -1;
  skip_to_next_entry(w);
  unfinished = w;
}

static void start_file(struct safetensors_set_writer *w, int k) {
  int first = 0;
  while (w->file_of[first] != k) first++;
  int last = first;
  while (last < w->n_entries && w->file_of[last] == k) last++;
  char *name = file_name(k, w->n_files), *path = join(w->dir, name);
  /* Opened aside: a failed open leaves w->writer without the temporary name for the exit to remove, which is then
   * no file of ours (a folder by that name). */
  struct safetensors_writer opened;
  safetensors_writer_open(&opened, path, &w->entries[first], last - first);
  w->writer = opened;
  free(path);
  free(name);
  w->current = k;
}

static void finish_file(struct safetensors_set_writer *w) {
  safetensors_writer_sync(&w->writer);
  add_pending(w, w->writer.tmp, w->writer.path);
  memset(&w->writer, 0, sizeof w->writer);
}

void safetensors_set_write_f32(struct safetensors_set_writer *w, const float *values, size_t n) {
  FSDP_CHECK(w->next_entry < w->n_entries);
  const struct safetensors_entry *e = &w->entries[w->next_entry];
  if (w->current != w->file_of[w->next_entry]) {
    if (w->current >= 0) finish_file(w);
    start_file(w, w->file_of[w->next_entry]);
  }
  uint64_t bytes = (uint64_t)n * dtype_size(e->dtype);
  FSDP_CHECK(bytes <= w->left);
  safetensors_write_f32(&w->writer, e->dtype, values, n);
  w->left -= bytes;
  if (w->left == 0) skip_to_next_entry(w);
}

void safetensors_set_writer_add(struct safetensors_set_writer *w, const char *name, const void *data, size_t n) {
  char *path = join(w->dir, name), *tmp = file_commit_temp_path(path);
  int fd = file_commit_create(tmp);
  add_pending(w, tmp, path);
  file_commit_write(fd, tmp, data, n);
  if (fsync(fd) != 0) fsdp_fatal("%s: cannot sync: %s", tmp, strerror(errno));
  if (close(fd) != 0) fsdp_fatal("%s: cannot close: %s", tmp, strerror(errno));
}

static void write_index(struct safetensors_set_writer *w) {
  uint64_t total = 0;
  for (int i = 0; i < w->n_entries; i++) total += safetensors_entry_bytes(&w->entries[i]);
  cJSON *root = cJSON_CreateObject(), *metadata = cJSON_AddObjectToObject(root, "metadata");
  char total_text[32];
  snprintf(total_text, sizeof total_text, "%" PRIu64, total);
  cJSON_AddItemToObject(metadata, "total_size", cJSON_CreateRaw(total_text));
  cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
  for (int i = 0; i < w->n_entries; i++) {
    char *name = file_name(w->file_of[i], w->n_files);
    cJSON_AddStringToObject(map, w->entries[i].name, name);
    free(name);
  }
  char *text = cJSON_Print(root);
  size_t len = strlen(text);
  text = fsdp_xrealloc(text, len + 2);
  text[len++] = '\n';
  safetensors_set_writer_add(w, INDEX_NAME, text, len);
  free(text);
  cJSON_Delete(root);
}

static void sync_dir(const char *dir) {
  char why[512];
  if (durable_sync_dir(dir, why, sizeof why) != 0) fsdp_fatal("%s", why);
}

static void rename_pending(const struct safetensors_pending *p) {
  if (rename(p->tmp, p->path) != 0) fsdp_fatal("%s: cannot rename '%s' to it: %s", p->path, p->tmp, strerror(errno));
}

/* Renames every pending file into place. Several renames cannot be one, so a reader must not be able to take a
 * folder caught between them for a model: the index names files by their place in the set, and an earlier set's
 * index beside some of the new set's files would load a mix of two models. So the earlier set's entry points
 * (model.safetensors, the index) go first, and the new one comes in last, once every file it names (and
 * config.json) is in place. A crash among the renames leaves a folder that no loader opens (no entry point: the
 * earlier set is gone, the new one not yet whole), never one that opens as a mix of two; what may remain is the
 * new set's files, in part under their names and in part under temporary ones, beside the earlier set's others. */
static void commit(struct safetensors_set_writer *w) {
  const char *old_entries[] = {SINGLE_NAME, INDEX_NAME};
  for (int i = 0; i < 2; i++) {
    char *path = join(w->dir, old_entries[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      fsdp_fatal("%s: cannot remove it (from an earlier export) to put the new set in its place: %s", path,
                 strerror(errno));
    free(path);
  }
  sync_dir(w->dir);
  char *entry_path = join(w->dir, w->n_files > 1 ? INDEX_NAME : SINGLE_NAME);
  size_t entry = 0;
  while (strcmp(w->pending[entry].path, entry_path) != 0) entry++;
  free(entry_path);
  for (size_t i = 0; i < w->n_pending; i++)
    if (i != entry) rename_pending(&w->pending[i]);
  rename_pending(&w->pending[entry]);
  sync_dir(w->dir);
}

/* A file of a set: model.safetensors, the index, or model-NNNNN-of-NNNNN.safetensors. */
static int is_set_file(const char *name) {
  int k, n, end = 0;
  if (strcmp(name, SINGLE_NAME) == 0 || strcmp(name, INDEX_NAME) == 0) return 1;
  return sscanf(name, "model-%5d-of-%5d.safetensors%n", &k, &n, &end) == 2 && end == (int)strlen(name);
}

/* A set's file's temporary name (file_commit_temp_path's). */
static int is_set_temp_file(const char *name) {
  char stem[256];
  size_t n = strlen(name);
  if (n <= 4 || n - 4 >= sizeof stem || strcmp(name + n - 4, ".tmp") != 0) return 0;
  memcpy(stem, name, n - 4);
  stem[n - 4] = '\0';
  return is_set_file(stem);
}

/* A file of an earlier set that the new one, w's, did not write. */
static int is_stale(const struct safetensors_set_writer *w, const char *name) {
  if (!is_set_file(name)) return 0;
  int ours = w->n_files > 1 && strcmp(name, INDEX_NAME) == 0;
  for (int k = 0; k < w->n_files && !ours; k++) {
    char *own = file_name(k, w->n_files);
    ours = strcmp(own, name) == 0;
    free(own);
  }
  return !ours;
}

/* Removes the files of an earlier set that the new one did not write, so that a reader
 * of the folder cannot take them for part of it, and the temporary files of a killed
 * export (the new set's own are renamed by now). */
static void remove_stale(const struct safetensors_set_writer *w) {
  DIR *d = opendir(w->dir);
  if (!d) fsdp_fatal("%s: cannot list: %s", w->dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int temp = is_set_temp_file(e->d_name);
    if (!temp && !is_stale(w, e->d_name)) continue;
    char *path = join(w->dir, e->d_name);
    /* A temporary name that cannot go (a folder by that name) is no file a loader reads: the set stands. */
    if (unlink(path) != 0 && !temp)
      fsdp_fatal("%s: cannot remove it (left from an earlier export): %s", path, strerror(errno));
    free(path);
  }
  closedir(d);
}

void safetensors_set_writer_close(struct safetensors_set_writer *w) {
  FSDP_CHECK(w->next_entry == w->n_entries);
  /* A set whose tensors are all empty has had no write to open its file. */
  if (w->current < 0) start_file(w, 0);
  finish_file(w);
  if (w->n_files > 1) write_index(w);
  commit(w);
  unfinished = NULL;
  remove_stale(w);
  for (size_t i = 0; i < w->n_pending; i++) {
    free(w->pending[i].tmp);
    free(w->pending[i].path);
  }
  free(w->pending);
  free(w->file_of);
  free(w->dir);
  memset(w, 0, sizeof *w);
}

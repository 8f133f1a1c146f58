/* The shards a --data (or --val-data) names: files, quoted globs and folders, separated by
 * commas. llm.c's FineWeb is a glob ('fineweb_train_*.bin', as llm.c's -i takes it),
 * nanoGPT's a file or a folder; a glob's and a folder's files are sorted by name, so that
 * the shards' order (and with it the data's) does not depend on the file system's. Opening
 * reads each shard's header and size only, whatever the data's size. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/crc32c.h"
#include "fsdp/input_file.h"
#include "fsdp/error.h"
#include "fsdp/data.h"

struct path_list {
  char **paths;
  int n, cap;
};

static void add_path(struct path_list *l, const char *path) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 16;
    char **grown = realloc(l->paths, (size_t)l->cap * sizeof *grown);
    if (!grown) fsdp_fatal("out of memory listing token files");
    l->paths = grown;
  }
  size_t n = strlen(path) + 1;
  l->paths[l->n++] = memcpy(fsdp_xmalloc(n), path, n);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void sort_from(struct path_list *l, int first) {
  qsort(l->paths + first, (size_t)(l->n - first), sizeof *l->paths, by_name);
}

static int is_directory(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_bin_suffix(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".bin") == 0;
}

/* A folder's .bin files (not its hidden ones, nor its folders), sorted. */
static void add_folder(struct path_list *l, const char *flag, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) fsdp_fatal("%s: cannot read the folder '%s': %s", flag, dir, strerror(errno));
  int first = l->n;
  size_t dir_len = strlen(dir);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || !has_bin_suffix(e->d_name)) continue;
    char *path = fsdp_xmalloc(dir_len + strlen(e->d_name) + 2);
    strcpy(path, dir);
    if (dir_len == 0 || dir[dir_len - 1] != '/') strcat(path, "/");
    strcat(path, e->d_name);
    if (!is_directory(path)) add_path(l, path);
    free(path);
  }
  closedir(d);
  if (l->n == first)
    fsdp_fatal("%s: the folder '%s' holds no .bin file (a folder gives its .bin token files; name other files, or "
               "a glob, instead)",
               flag, dir);
  sort_from(l, first);
}

static void add_glob(struct path_list *l, const char *flag, const char *pattern) {
  glob_t g;
  int status = glob(pattern, GLOB_ERR, NULL, &g);
  if (status == GLOB_NOMATCH) {
    globfree(&g);
    /* A file whose name holds a glob's characters is still that file. */
    struct stat st;
    if (stat(pattern, &st) == 0) {
      add_path(l, pattern);
      return;
    }
    fsdp_fatal("%s: '%s' matches no file", flag, pattern);
  }
  if (status == GLOB_ABORTED) fsdp_fatal("%s: '%s': a folder it names cannot be read", flag, pattern);
  if (status != 0) fsdp_fatal("%s: '%s': out of memory expanding it", flag, pattern);
  int first = l->n;
  for (size_t i = 0; i < g.gl_pathc; i++) add_path(l, g.gl_pathv[i]);
  globfree(&g);
  sort_from(l, first);
}

static void add_entry(struct path_list *l, const char *flag, const char *entry) {
  if (strpbrk(entry, "*?["))
    add_glob(l, flag, entry);
  else if (is_directory(entry))
    add_folder(l, flag, entry);
  else
    add_path(l, entry); /* a missing file is named when it is opened */
}

/* Its status change time: a write sets it, and so does any setting of the modification
 * time back (touch -r), which no user can set back in turn. */
static int64_t changed_ns(const struct stat *st) {
  return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

void data_shard_check_unchanged(const struct data_shard *s, int fd) {
  struct stat st;
  if (!s->inode || fstat(fd, &st) != 0) return;
  if ((uint64_t)st.st_ino != s->inode || (uint64_t)st.st_dev != s->device)
    fsdp_fatal("token file '%s' changed while the job ran: another file has its name now", s->path);
  /* Moved over or removed: its name lost, its bytes are still the start's to this open
   * file, and whatever takes the name is found when it is opened again. */
  if (st.st_nlink == 0) return;
  if (changed_ns(&st) != s->changed_ns)
    fsdp_fatal("token file '%s' changed while the job ran: it was written to (or its times set) after the start",
               s->path);
}

/* The identity of the file at path (stat follows links) and its status change time, into
 * the shard; a file that is not there is named by the caller, with the commas that cut
 * spec in mind. */
static void identify(const char *flag, const char *spec, const char *path, struct data_shard *shard) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT && strchr(spec, ','))
      fsdp_fatal("%s: token file '%s': no such file (commas separate the entries of '%s': a file whose name holds a "
                 "comma is named by a glob with ? for it, e.g. 'a?b.bin' for a,b.bin)",
                 flag, path, spec);
    return; /* named as the file is opened */
  }
  shard->device = (uint64_t)st.st_dev;
  shard->inode = (uint64_t)st.st_ino;
  shard->changed_ns = changed_ns(&st);
}

/* Each file once, whatever names it goes by (a symlink, another path, a hard link): the
 * same shard twice would be read twice an epoch. */
static void check_distinct(const struct data_set *s, const char *flag) {
  for (int i = 0; i < s->n_shards; i++)
    for (int j = 0; j < i; j++)
      if (s->shards[i].inode && s->shards[i].device == s->shards[j].device && s->shards[i].inode == s->shards[j].inode)
        fsdp_fatal("%s: '%s' is given twice (as '%s' too: the same file)", flag, s->shards[i].path,
                   s->shards[j].path);
}

static void list_paths(struct path_list *l, const char *flag, const char *spec) {
  memset(l, 0, sizeof *l);
  for (const char *p = spec;; p++) {
    size_t len = strcspn(p, ",");
    if (len == 0) fsdp_fatal("%s: '%s' has an empty entry (entries are separated by single commas)", flag, spec);
    char *entry = memcpy(fsdp_xmalloc(len + 1), p, len);
    entry[len] = '\0';
    add_entry(l, flag, entry);
    free(entry);
    p += len;
    if (*p == '\0') break;
  }
}

const struct data_shard *data_set_shared(const struct data_set *a, const struct data_set *b,
                                         const struct data_shard **in_b) {
  for (int i = 0; i < a->n_shards; i++)
    for (int j = 0; j < b->n_shards; j++)
      if (a->shards[i].inode && a->shards[i].device == b->shards[j].device && a->shards[i].inode == b->shards[j].inode) {
        *in_b = &b->shards[j];
        return &a->shards[i];
      }
  return NULL;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static const char *format_name(enum token_format f) {
  switch (f) {
    case TOKENS_TEXT: return "text";
    case TOKENS_NANOGPT: return "nanoGPT's";
    case TOKENS_LLMC: return "llm.c's";
    case TOKENS_TOKENIZED: return "tokenized text";
  }
  return "?";
}

static void tokenize(struct data_shard *shard, const char *tokenizer, int vocab_size) {
  struct token_data d;
  token_data_tokenize(&d, shard->path, tokenizer, vocab_size);
  shard->tokens = d.tokens;
  shard->layout = (struct token_file_layout){d.format, d.width, 0, d.n_tokens};
}

/* The CRC-32C of the shard's first tokens: another file of the same name and size (the
 * same shard name in another folder, a data set in another order) begins otherwise. */
enum { HEAD_BYTES = 1 << 14 };
static uint32_t head_crc32c(const struct data_shard *shard) {
  size_t bytes = shard->layout.n_tokens * (size_t)shard->layout.width;
  if (bytes > HEAD_BYTES) bytes = HEAD_BYTES;
  if (shard->tokens) return crc32c_update(0, shard->tokens, bytes);
  unsigned char head[HEAD_BYTES];
  struct input_file f;
  input_file_open(&f, "token file", shard->path);
  input_file_read_at(&f, "token file", head, bytes, shard->layout.offset);
  input_file_close(&f);
  return crc32c_update(0, head, bytes);
}

void data_set_open(struct data_set *s, const char *flag, const char *spec, const char *format,
                   const char *tokenizer, int vocab_size) {
  memset(s, 0, sizeof *s);
  s->flag = flag;
  struct path_list l;
  list_paths(&l, flag, spec);
  s->n_shards = l.n;
  s->shards = fsdp_xcalloc((size_t)l.n, sizeof *s->shards);
  for (int i = 0; i < l.n; i++) {
    struct data_shard *shard = &s->shards[i];
    shard->path = l.paths[i];
    shard->name = base_name(shard->path);
    identify(flag, spec, shard->path, shard);
  }
  check_distinct(s, flag);
  for (int i = 0; i < l.n; i++) {
    struct data_shard *shard = &s->shards[i];
    if (tokenizer)
      tokenize(shard, tokenizer, vocab_size);
    else
      token_file_probe(shard->path, format, &shard->layout);
    shard->head_crc32c = head_crc32c(shard);
    const struct data_shard *first = &s->shards[0];
    if (shard->layout.width != first->layout.width)
      fsdp_fatal("%s: '%s' holds %d-byte tokens (%s), but '%s' holds %d-byte ones (%s): every shard must have the "
                 "same token width",
                 flag, shard->path, shard->layout.width, format_name(shard->layout.format), first->path,
                 first->layout.width, format_name(first->layout.format));
    s->n_tokens += shard->layout.n_tokens;
  }
  free(l.paths);
  s->width = s->shards[0].layout.width;
}

void data_set_free(struct data_set *s) {
  for (int i = 0; i < s->n_shards; i++) {
    free(s->shards[i].path);
    free(s->shards[i].tokens);
  }
  free(s->shards);
  memset(s, 0, sizeof *s);
}

/* Where checkpoints live: DIR/step-NNNNNNNN/ holds rank-RRRRR.bin per rank and, once they
 * are all durable, metadata.json. Only rank 0 creates and removes directories. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpointing.h"
#include "fsdp/durable_file.h"
#include "fsdp/error.h"
#include "fsdp/log.h"

const char CKPT_METADATA[] = "metadata.json";
const char CKPT_LOCK[] = ".lock";
static const char STEP_PREFIX[] = "step-";
enum { STEP_DIGITS = 8 };

struct ckpt_path ckpt_path_join(const char *dir, const char *name) {
  struct ckpt_path p;
  if ((size_t)snprintf(p.s, sizeof p.s, "%s/%s", dir, name) >= sizeof p.s)
    fsdp_fatal("--checkpoint-dir: the path '%s/%s' is too long", dir, name);
  return p;
}

struct ckpt_path ckpt_step_dir(const char *dir, int step) {
  char name[32];
  snprintf(name, sizeof name, "%s%0*d", STEP_PREFIX, STEP_DIGITS, step);
  return ckpt_path_join(dir, name);
}

struct ckpt_path ckpt_rank_file(int rank) {
  struct ckpt_path p;
  snprintf(p.s, sizeof p.s, "rank-%05d.bin", rank);
  return p;
}

int ckpt_is_complete(const char *step_dir) {
  struct stat st;
  return stat(ckpt_path_join(step_dir, CKPT_METADATA).s, &st) == 0 && S_ISREG(st.st_mode);
}

/* mkdir -p */
int ckpt_dir_claim(const char *dir) {
  struct ckpt_path p = ckpt_path_join(dir, "");
  for (char *slash = strchr(p.s + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    if (mkdir(p.s, 0755) != 0 && errno != EEXIST)
      fsdp_fatal("--checkpoint-dir: cannot create '%s': %s", p.s, strerror(errno));
    *slash = '/';
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) fsdp_fatal("--checkpoint-dir: '%s' is not a directory", dir);
  /* Opening it for writing finds a folder that cannot take a checkpoint now, not at the
   * first checkpoint, steps later. */
  struct ckpt_path lock = ckpt_path_join(dir, CKPT_LOCK);
  int fd = open(lock.s, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fsdp_fatal("--checkpoint-dir: cannot write in '%s' (its '%s'): %s", dir, CKPT_LOCK, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno == EWOULDBLOCK)
    fsdp_fatal("--checkpoint-dir: '%s' is another run's (it holds '%s'): two runs in one folder remove each other's "
               "checkpoints; wait for it to end, or give another --checkpoint-dir",
               dir, lock.s);
  /* A file system without locks (Lustre mounted without flock): the folder is unguarded. */
  fsdp_log_info("checkpoint: warning: cannot lock '%s' (%s): nothing keeps a second run out of '%s'", lock.s,
                strerror(errno), dir);
  return fd;
}

/* The step of a name "step-NNNNNNNN", or -1 for any other name. */
static int step_of(const char *name) {
  size_t prefix = sizeof STEP_PREFIX - 1;
  if (strncmp(name, STEP_PREFIX, prefix) != 0 || strlen(name) != prefix + STEP_DIGITS) return -1;
  int step = 0;
  for (const char *c = name + prefix; *c; c++) {
    if (*c < '0' || *c > '9') return -1;
    step = step * 10 + (*c - '0');
  }
  return step;
}

int ckpt_named_step(const char *step_dir) {
  size_t n = strlen(step_dir);
  while (n > 1 && step_dir[n - 1] == '/') n--;
  const char *name = step_dir + n;
  while (name > step_dir && name[-1] != '/') name--;
  char base[32];
  if ((size_t)(step_dir + n - name) >= sizeof base) return -1;
  snprintf(base, sizeof base, "%.*s", (int)(step_dir + n - name), name);
  return step_of(base);
}

static int ascending(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int ckpt_dir_steps(const char *dir, int complete_only, int **steps) {
  DIR *d = opendir(dir);
  if (!d) fsdp_fatal("--checkpoint-dir: cannot open '%s': %s", dir, strerror(errno));
  int n = 0, cap = 16;
  int *out = fsdp_xmalloc(sizeof *out * (size_t)cap);
  for (struct dirent *e; (e = readdir(d));) {
    int step = step_of(e->d_name);
    if (step < 0 || (complete_only && !ckpt_is_complete(ckpt_step_dir(dir, step).s))) continue;
    if (n == cap) out = fsdp_xrealloc(out, sizeof *out * (size_t)(cap *= 2));
    out[n++] = step;
  }
  closedir(d);
  qsort(out, (size_t)n, sizeof *out, ascending);
  *steps = out;
  return n;
}

/* The names fsdp writes into a checkpoint directory, finished or not. */
static int is_ours(const char *name) {
  size_t n = strlen(name);
  int rank_file = strncmp(name, "rank-", 5) == 0 &&
                  ((n > 4 && strcmp(name + n - 4, ".bin") == 0) || (n > 8 && strcmp(name + n - 8, ".bin.tmp") == 0));
  return rank_file || strcmp(name, "metadata.json.tmp") == 0;
}

/* Removal only ever frees space, so a failure is reported and training goes on. */
static void warn_not_removed(const char *path) {
  fsdp_log_info("checkpoint: warning: cannot remove '%s': %s", path, strerror(errno));
}

void ckpt_remove(const char *step_dir) {
  char why[1024];
  struct stat st;
  if (lstat(step_dir, &st) != 0) return warn_not_removed(step_dir);
  /* A link (to a checkpoint kept elsewhere) goes as a link: what it points to is not in
   * the checkpoint directory, and not the run's to remove. */
  if (S_ISLNK(st.st_mode)) {
    if (unlink(step_dir) != 0) warn_not_removed(step_dir);
    return;
  }
  struct ckpt_path metadata = ckpt_path_join(step_dir, CKPT_METADATA);
  if (unlink(metadata.s) != 0 && errno != ENOENT) return warn_not_removed(metadata.s);
  if (durable_sync_dir(step_dir, why, sizeof why) != 0) fsdp_log_info("checkpoint: warning: %s", why);
  DIR *d = opendir(step_dir);
  if (!d) return warn_not_removed(step_dir);
  for (struct dirent *e; (e = readdir(d));)
    if (is_ours(e->d_name) && unlink(ckpt_path_join(step_dir, e->d_name).s) != 0)
      warn_not_removed(ckpt_path_join(step_dir, e->d_name).s);
  closedir(d);
  if (rmdir(step_dir) != 0) warn_not_removed(step_dir);
}

void ckpt_dir_prune(const char *dir, int keep) {
  int *all, *complete;
  int n_all = ckpt_dir_steps(dir, 0, &all), n_complete = ckpt_dir_steps(dir, 1, &complete);
  /* The oldest step still kept: the keep-th newest complete one. */
  int oldest_kept = keep > 0 && n_complete > keep ? complete[n_complete - keep] : 0;
  for (int i = 0; i < n_all; i++) {
    struct ckpt_path step_dir = ckpt_step_dir(dir, all[i]);
    if (!ckpt_is_complete(step_dir.s) || all[i] < oldest_kept) ckpt_remove(step_dir.s);
  }
  char why[1024];
  if (durable_sync_dir(dir, why, sizeof why) != 0) fsdp_log_info("checkpoint: warning: %s", why);
  free(all);
  free(complete);
}

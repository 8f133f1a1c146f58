/* The fuzz targets' files: one directory per process, the inputs written into it, and
 * the descriptors a refused reader left open on them closed again. */
#define _GNU_SOURCE /* nftw's FTW_DEPTH and FTW_PHYS */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char dir[4096];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *at) {
  (void)st;
  (void)flag;
  (void)at;
  remove(path);
  return 0;
}

static void remove_dir(void) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

const char *fuzz_dir(void) {
  if (dir[0]) return dir;
  /* Every input is written to a file: in memory (/dev/shm) rather than to a disk. */
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !tmp[0]) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(dir, sizeof dir, "%s/fsdp-fuzz-XXXXXX", tmp);
  if (!mkdtemp(dir)) fuzz_finding("cannot make a directory %s for the inputs", dir);
  /* As /proc/self/fd shows the files opened in it. */
  char *real = realpath(dir, NULL);
  if (!real) fuzz_finding("cannot resolve %s", dir);
  snprintf(dir, sizeof dir, "%s", real);
  free(real);
  atexit(remove_dir);
  return dir;
}

char *fuzz_path(const char *name) {
  size_t size = strlen(fuzz_dir()) + strlen(name) + 2;
  char *path = malloc(size);
  if (!path) fuzz_finding("out of memory");
  snprintf(path, size, "%s/%s", dir, name);
  return path;
}

void fuzz_write(const char *path, const void *data, size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fuzz_finding("cannot write %s", path);
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, (const char *)data + done, size - done);
    if (n <= 0) fuzz_finding("cannot write %s", path);
    done += (size_t)n;
  }
  close(fd);
}

void fuzz_close_files(void) {
  DIR *fds = opendir("/proc/self/fd");
  if (!fds) fuzz_finding("cannot list /proc/self/fd");
  size_t n = strlen(dir);
  struct dirent *e;
  while ((e = readdir(fds))) {
    int fd = atoi(e->d_name);
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0 || fd == dirfd(fds)) continue;
    target[len] = '\0';
    if (strncmp(target, dir, n) == 0 && target[n] == '/') close(fd);
  }
  closedir(fds);
}

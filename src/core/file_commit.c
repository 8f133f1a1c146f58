#include "fsdp/file_commit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/durable_file.h"
#include "fsdp/error.h"

char *file_commit_temp_path(const char *path) {
  size_t size = strlen(path) + sizeof ".tmp";
  char *tmp = fsdp_xmalloc(size);
  snprintf(tmp, size, "%s.tmp", path);
  return tmp;
}

int file_commit_create(const char *tmp) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fsdp_fatal("%s: cannot open for writing: %s", tmp, strerror(errno));
  return fd;
}

void file_commit_write(int fd, const char *path, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t got = write(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fsdp_fatal("%s: cannot write: %s", path, got < 0 ? strerror(errno) : "no progress");
    p += got;
    n -= (size_t)got;
  }
}

void file_commit_write_at(int fd, const char *path, const void *data, size_t n, size_t offset) {
  const char *p = data;
  while (n > 0) {
    ssize_t got = pwrite(fd, p, n, (off_t)offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fsdp_fatal("%s: cannot write: %s", path, got < 0 ? strerror(errno) : "no progress");
    p += got;
    n -= (size_t)got;
    offset += (size_t)got;
  }
}

void file_commit_finish(int fd, const char *tmp, const char *path) {
  if (fsync(fd) != 0) fsdp_fatal("%s: cannot sync: %s", tmp, strerror(errno));
  if (close(fd) != 0) fsdp_fatal("%s: cannot close: %s", tmp, strerror(errno));
  if (rename(tmp, path) != 0) {
    int saved = errno;
    remove(tmp);
    fsdp_fatal("%s: cannot rename '%s' to it: %s", path, tmp, strerror(saved));
  }
  char why[512];
  if (durable_sync_parent(path, why, sizeof why) != 0) fsdp_fatal("%s", why);
}

void file_commit_whole(const char *path, const void *data, size_t n) {
  char why[512];
  uint32_t crc;
  if (durable_write(path, data, n, &crc, why, sizeof why) != 0) fsdp_fatal("%s", why);
}

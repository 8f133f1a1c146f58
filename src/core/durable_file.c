#include "fsdp/durable_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/crc32c.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"

/* Written and read in pieces of this size: the CRC of a piece is computed while it is
 * still in cache, and no single write() is asked for more than Linux moves at once. */
enum { IO_CHUNK_BYTES = 8 << 20 };

__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t why_size, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(why, why_size, fmt, args);
  va_end(args);
  return -1;
}

/* The directory part of path ("." when there is none), malloc'd. */
static char *parent_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strcpy(fsdp_xmalloc(2), ".");
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *dir = fsdp_xmalloc(n + 1);
  memcpy(dir, path, n);
  dir[n] = '\0';
  return dir;
}

int durable_sync_dir(const char *dir, char *why, size_t why_size) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return fail(why, why_size, "cannot open directory '%s': %s", dir, strerror(errno));
  int ok = fsync(fd) == 0;
  int saved = errno;
  close(fd);
  return ok ? 0 : fail(why, why_size, "cannot fsync directory '%s': %s", dir, strerror(saved));
}

int durable_sync_parent(const char *path, char *why, size_t why_size) {
  char *dir = parent_dir(path);
  int result = durable_sync_dir(dir, why, why_size);
  free(dir);
  return result;
}

static int write_chunks(int fd, const char *tmp, const char *data, size_t bytes, uint32_t *crc, char *why,
                        size_t why_size) {
  uint32_t c = 0;
  for (size_t done = 0; done < bytes;) {
    size_t n = bytes - done < IO_CHUNK_BYTES ? bytes - done : IO_CHUNK_BYTES;
    c = crc32c_update(c, data + done, n);
    for (size_t put = 0; put < n;) {
      ssize_t w = write(fd, data + done + put, n - put);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return fail(why, why_size, "cannot write '%s': %s", tmp, strerror(errno));
      put += (size_t)w;
    }
    done += n;
  }
  if (fsync(fd) != 0) return fail(why, why_size, "cannot fsync '%s': %s", tmp, strerror(errno));
  *crc = c;
  return 0;
}

/* path.tmp written, fsynced and closed. */
static int write_tmp(const char *tmp, const void *data, size_t bytes, uint32_t *crc, char *why, size_t why_size) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return fail(why, why_size, "cannot open '%s' for writing: %s", tmp, strerror(errno));
  int result = write_chunks(fd, tmp, data, bytes, crc, why, why_size);
  if (close(fd) != 0 && result == 0) result = fail(why, why_size, "cannot write '%s': %s", tmp, strerror(errno));
  return result;
}

int durable_write(const char *path, const void *data, size_t bytes, uint32_t *crc, char *why, size_t why_size) {
  size_t tmp_size = strlen(path) + sizeof ".tmp";
  char *tmp = fsdp_xmalloc(tmp_size);
  snprintf(tmp, tmp_size, "%s.tmp", path);
  int result = write_tmp(tmp, data, bytes, crc, why, why_size);
  if (result == 0 && rename(tmp, path) != 0)
    result = fail(why, why_size, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  if (result != 0) remove(tmp);
  if (result == 0) result = durable_sync_parent(path, why, why_size);
  free(tmp);
  return result;
}

int file_crc32c(const char *path, size_t *bytes, uint32_t *crc, char *why, size_t why_size) {
  struct input_file in;
  char refused[512];
  if (input_file_try_open(&in, path, refused, sizeof refused) != 0)
    return fail(why, why_size, "cannot open '%s': %s", path, refused);
  int fd = in.fd;
  char *buffer = fsdp_xmalloc(IO_CHUNK_BYTES);
  uint32_t c = 0;
  size_t total = 0;
  int result = 0;
  for (;;) {
    ssize_t n = read(fd, buffer, IO_CHUNK_BYTES);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result = fail(why, why_size, "cannot read '%s': %s", path, strerror(errno));
      break;
    }
    if (n == 0) break;
    c = crc32c_update(c, buffer, (size_t)n);
    total += (size_t)n;
  }
  free(buffer);
  close(fd);
  *bytes = total;
  *crc = c;
  return result;
}

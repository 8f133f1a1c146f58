#include "fsdp/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsdp/error.h"

static const char *kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

static int refuse(char *why, size_t why_size, int error, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(char *why, size_t why_size, int error, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(why, why_size, fmt, args);
  va_end(args);
  errno = error;
  return -1;
}

int input_file_try_open(struct input_file *f, const char *path, char *why, size_t why_size) {
  f->fd = -1;
  f->path = path;
  f->size = 0;
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return refuse(why, why_size, errno, "%s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int error = errno;
    close(fd);
    return refuse(why, why_size, error, "cannot stat: %s", strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return refuse(why, why_size, EINVAL, "is %s, not a regular file", kind_of(st.st_mode));
  }
  /* Reads of a regular file never block; clearing the flag keeps them plain reads. */
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    int error = errno;
    close(fd);
    return refuse(why, why_size, error, "fcntl: %s", strerror(error));
  }
  f->fd = fd;
  f->size = (size_t)st.st_size;
  return 0;
}

void input_file_open(struct input_file *f, const char *what, const char *path) {
  char why[512];
  if (input_file_try_open(f, path, why, sizeof why) != 0) fsdp_fatal("%s '%s': %s", what, path, why);
}

void input_file_close(struct input_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}

void input_file_read_at(const struct input_file *f, const char *what, void *dst, size_t bytes, size_t offset) {
  if (offset > f->size || bytes > f->size - offset)
    fsdp_fatal("%s '%s': bytes %zu to %zu are past its end (%zu bytes)", what, f->path, offset, offset + bytes,
               f->size);
  for (size_t done = 0; done < bytes;) {
    ssize_t n = pread(f->fd, (char *)dst + done, bytes - done, (off_t)(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fsdp_fatal("%s '%s': cannot read: %s", what, f->path, strerror(errno));
    if (n == 0) fsdp_fatal("%s '%s' shrank while it was read (%zu bytes at its open)", what, f->path, f->size);
    done += (size_t)n;
  }
}

char *input_file_read_whole(struct input_file *f, const char *what, size_t cap, size_t *length) {
  if (f->size > cap) fsdp_fatal("%s '%s' is %zu bytes, more than the %zu it may be", what, f->path, f->size, cap);
  char *data = fsdp_xmalloc(f->size + 1);
  input_file_read_at(f, what, data, f->size, 0);
  char past;
  ssize_t n;
  while ((n = pread(f->fd, &past, 1, (off_t)f->size)) < 0 && errno == EINTR) continue;
  if (n != 0) fsdp_fatal("%s '%s' grew while it was read (%zu bytes at its open)", what, f->path, f->size);
  data[f->size] = '\0';
  *length = f->size;
  return data;
}

char *input_file_read_all(const char *what, const char *path, size_t cap, size_t *length) {
  struct input_file f;
  input_file_open(&f, what, path);
  char *data = input_file_read_whole(&f, what, cap, length);
  input_file_close(&f);
  return data;
}

int input_file_same(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void input_file_folder(const char *path, char *folder, size_t size) {
  const char *slash = strrchr(path, '/');
  snprintf(folder, size, "%.*s", slash ? (int)(slash - path + (slash == path)) : 1, slash ? path : ".");
}

/* The one rule for the files fsdp reads (fsdp/input_file.h): a FIFO, a character device,
 * a directory, a symlink to either, a missing file are refused by name without blocking
 * or reading; a regular file (through a symlink too) is read within the size it had at its
 * open, and one that grows or shrinks while it is read, or is larger than its cap, is
 * refused. The refusals end the process, so each runs in a child. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/input_file.h"
#include "temp_files.h"

static const char TEXT[] = "{\"a\": 1}";

static void read_all(const void *path) {
  size_t length;
  input_file_read_all("test file", path, 1 << 20, &length);
}

/* The job ends within the test's time with "test file 'PATH': WANT". */
static void expect_refused(const char *what, const char *path, const char *want) {
  char message[1024], expected[512];
  snprintf(expected, sizeof expected, "test file '%s': %s", path, want);
  int status = run_in_child(read_all, path, message, sizeof message);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s: status 0x%x, want exit 1", what, status);
  EXPECT(strstr(message, expected) != NULL, "%s: '%s' not in: %s", what, expected, message);
}

static const char *symlink_to(const char *name, const char *target) {
  const char *path = temp_file_path(name);
  if (symlink(target, path) != 0) exit(2);
  return path;
}

static void test_refused(void) {
  const char *fifo = temp_file_path("fifo");
  if (mkfifo(fifo, 0600) != 0) exit(2);
  const char *dir = temp_file_path("dir");
  if (mkdir(dir, 0700) != 0) exit(2);
  expect_refused("a FIFO", fifo, "is a FIFO, not a regular file");
  expect_refused("a symlink to a FIFO", symlink_to("to_fifo", fifo), "is a FIFO, not a regular file");
  expect_refused("/dev/zero", "/dev/zero", "is a character device, not a regular file");
  expect_refused("a symlink to /dev/zero", symlink_to("to_zero", "/dev/zero"),
                 "is a character device, not a regular file");
  expect_refused("a directory", dir, "is a directory, not a regular file");
  expect_refused("a symlink to a directory", symlink_to("to_dir", dir), "is a directory, not a regular file");
  expect_refused("a missing file", temp_file_path("missing"), "No such file or directory");
  expect_refused("a dangling symlink", symlink_to("dangling", temp_file_path("gone")), "No such file or directory");
  rmdir(dir);
}

static void test_read(void) {
  const char *path = temp_file_write("good.json", TEXT, strlen(TEXT));
  const char *link = symlink_to("to_good", path);
  const char *paths[] = {path, link};
  for (int i = 0; i < 2; i++) {
    size_t length = 0;
    char *data = input_file_read_all("test file", paths[i], 1 << 20, &length);
    EXPECT(length == strlen(TEXT) && strcmp(data, TEXT) == 0, "%s: read %zu bytes: %s", paths[i], length, data);
    free(data);
  }
}

/* A file changed between its open and its read: appended to, or truncated. */
struct change {
  const char *path;
  int grow;
};

static void read_changed(const void *arg) {
  const struct change *c = arg;
  struct input_file f;
  input_file_open(&f, "test file", c->path);
  int fd = open(c->path, O_WRONLY | O_APPEND);
  if (fd < 0 || (c->grow ? write(fd, "x", 1) != 1 : ftruncate(fd, 2) != 0)) _exit(2);
  close(fd);
  size_t length;
  input_file_read_whole(&f, "test file", 1 << 20, &length);
}

static void expect_changed(const char *name, int grow, const char *want) {
  struct change c = {temp_file_write(name, TEXT, strlen(TEXT)), grow};
  char message[1024];
  int status = run_in_child(read_changed, &c, message, sizeof message);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s: status 0x%x, want exit 1", name, status);
  EXPECT(strstr(message, want) != NULL, "%s: '%s' not in: %s", name, want, message);
}

static void read_capped(const void *path) {
  size_t length;
  input_file_read_all("test file", path, 4, &length);
}

int main(void) {
  temp_files_init("input_file_test");
  test_refused();
  test_read();
  expect_changed("grows.json", 1, "grew while it was read (8 bytes at its open)");
  expect_changed("shrinks.json", 0, "shrank while it was read (8 bytes at its open)");
  const char *big = temp_file_write("big.json", TEXT, strlen(TEXT));
  char message[1024];
  int status = run_in_child(read_capped, big, message, sizeof message);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(message, "is 8 bytes, more than the 4 it may be"),
         "a file over its cap: status 0x%x: %s", status, message);
  temp_files_remove();
  return check_summary("input_file_test");
}

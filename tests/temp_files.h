/* Input files a test writes for the code under test to read: all in one fresh
 * directory under /tmp, which temp_files_remove empties and deletes at the end. A
 * failure to set them up is not a failed check but a broken test run, so it exits 2. */
#ifndef FSDP_TESTS_TEMP_FILES_H
#define FSDP_TESTS_TEMP_FILES_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each test program is one translation unit, so these are the program's own. */
enum { TEMP_FILES_MAX = 64, TEMP_FILES_PATH_BYTES = 256 };
static const char *temp_files_program;
static char temp_files_dir[TEMP_FILES_PATH_BYTES];
/* Every path handed out, so that temp_files_remove finds them all. */
static char temp_files_paths[TEMP_FILES_MAX][TEMP_FILES_PATH_BYTES];
static int temp_files_count;

/* Creates /tmp/fsdp_PROGRAM_XXXXXX; program also starts the messages of failures. */
static inline void temp_files_init(const char *program) {
  temp_files_program = program;
  snprintf(temp_files_dir, sizeof temp_files_dir, "/tmp/fsdp_%s_XXXXXX", program);
  if (!mkdtemp(temp_files_dir)) {
    fprintf(stderr, "%s: mkdtemp %s: %s\n", program, temp_files_dir, strerror(errno));
    exit(2);
  }
}

/* The path of name in the directory, whether or not it is ever written: a test of a
 * missing file needs one that is sure not to exist. Valid until the end of the test. */
static inline const char *temp_file_path(const char *name) {
  if (temp_files_count == TEMP_FILES_MAX) {
    fprintf(stderr, "%s: too many temporary files\n", temp_files_program);
    exit(2);
  }
  char *path = temp_files_paths[temp_files_count++];
  if (snprintf(path, TEMP_FILES_PATH_BYTES, "%s/%s", temp_files_dir, name) >= TEMP_FILES_PATH_BYTES) {
    fprintf(stderr, "%s: temporary file name too long: %s\n", temp_files_program, name);
    exit(2);
  }
  return path;
}

/* Writes n bytes to the directory's file name and returns its path. */
static inline const char *temp_file_write(const char *name, const void *bytes, size_t n) {
  const char *path = temp_file_path(name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "%s: cannot write %s\n", temp_files_program, path);
    exit(2);
  }
  return path;
}

/* Paths never written are in the list too; removing them fails, harmlessly. Last first:
 * a folder made for files (mkdir of a temp_file_path) goes after them. */
static inline void temp_files_remove(void) {
  for (int i = temp_files_count - 1; i >= 0; i--) remove(temp_files_paths[i]);
  rmdir(temp_files_dir);
}

#endif

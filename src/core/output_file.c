#include "fsdp/output_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/error.h"

void text_append(struct text *t, const char *s) {
  size_t n = strlen(s);
  t->data = fsdp_xgrow(t->data, &t->cap, t->len + n, 1, 1 << 16);
  memcpy(t->data + t->len, s, n);
  t->len += n;
}

void text_free(struct text *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}

/* malloc'd */
static char *temp_path(const char *path) {
  size_t size = strlen(path) + sizeof ".tmp";
  char *tmp = fsdp_xmalloc(size);
  snprintf(tmp, size, "%s.tmp", path);
  return tmp;
}

void output_check_writable(const char *flag, const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) fsdp_fatal("%s: '%s' is a directory", flag, path);
  char *tmp = temp_path(path);
  FILE *f = fopen(tmp, "w");
  if (!f) fsdp_fatal("%s: cannot open '%s' for writing: %s", flag, tmp, strerror(errno));
  fclose(f);
  remove(tmp);
  free(tmp);
}

/* Stops at the first failure, so that errno still holds its reason. */
static int write_all(FILE *f, const char *const *pieces, const size_t *lengths, int n) {
  for (int i = 0; i < n; i++)
    if (fwrite(pieces[i], 1, lengths[i], f) != lengths[i]) return 0;
  return fflush(f) == 0;
}

void output_write(const char *flag, const char *path, const char *const *pieces, const size_t *lengths, int n) {
  char *tmp = temp_path(path);
  FILE *f = fopen(tmp, "w");
  if (!f) fsdp_fatal("%s: cannot open '%s' for writing: %s", flag, tmp, strerror(errno));
  int ok = write_all(f, pieces, lengths, n);
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    saved = errno;
  }
  if (!ok) {
    remove(tmp);
    fsdp_fatal("%s: cannot write '%s': %s", flag, tmp, strerror(saved));
  }
  if (rename(tmp, path) != 0) {
    saved = errno;
    remove(tmp);
    fsdp_fatal("%s: cannot rename '%s' to '%s': %s", flag, tmp, path, strerror(saved));
  }
  free(tmp);
}

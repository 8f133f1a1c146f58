/* Text built up in memory, and files written the safe way, to a temporary name and
 * renamed, so that a failure never leaves a half-written file under the real name.
 * Every failure ends the job with a message naming the flag. */
#ifndef FSDP_OUTPUT_FILE_H
#define FSDP_OUTPUT_FILE_H

#include <stddef.h>

struct text {
  char *data;
  size_t len, cap;
};

void text_append(struct text *t, const char *s);
void text_free(struct text *t);

/* Ends the job now, with the reason, when path could not be written later (a
 * directory, a missing folder, no permission): for checks before a long run. */
void output_check_writable(const char *flag, const char *path);

/* Writes the n pieces in order to path.tmp, then renames it to path. */
void output_write(const char *flag, const char *path, const char *const *pieces, const size_t *lengths, int n);

#endif

/* Private to src/data: an input file's bytes from start to end, inflated when it is gzip
 * (told by its first two bytes, never its name: a JSONL or text file never starts with
 * them; a build without zlib refuses them by name), for fsdp tokenize's readers. Read
 * through input_file.h, so the same files are
 * refused (FIFOs, devices, a file that changes size while read); every failure ends the
 * job naming the file. */
#ifndef FSDP_DATA_BYTE_SOURCE_H
#define FSDP_DATA_BYTE_SOURCE_H

#include <stddef.h>

#include "fsdp/input_file.h"

struct byte_source {
  struct input_file file;
  const char *what;
  size_t offset;       /* of the file, read so far */
  void *inflater;      /* a z_stream when the file is gzip, else NULL */
  unsigned char *in;   /* the gzip bytes read and not yet inflated */
  size_t in_n;
  int member_ended;    /* the last gzip member ended: more bytes start another */
};

void byte_source_open(struct byte_source *s, const char *what, const char *path);
/* Up to cap bytes of the content into dst; 0 at its end. *file_bytes: bytes of the file
 * read by this call (for a progress line over files' sizes). */
size_t byte_source_read(struct byte_source *s, void *dst, size_t cap, size_t *file_bytes);
void byte_source_close(struct byte_source *s);

#endif

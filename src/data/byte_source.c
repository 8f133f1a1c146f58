#include "byte_source.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

#ifdef FSDP_ZLIB
#include <zlib.h>

enum { GZIP_IN_BYTES = 1 << 20 };

static void inflater_start(struct byte_source *s) {
  z_stream *z = fsdp_xcalloc(1, sizeof *z);
  if (inflateInit2(z, 16 + MAX_WBITS) != Z_OK) { /* 16: gzip's header and trailer, nothing else */
    free(z);
    fsdp_fatal("%s '%s': cannot start zlib to inflate it", s->what, s->file.path);
  }
  s->inflater = z;
  s->in = fsdp_xmalloc(GZIP_IN_BYTES);
}

static size_t inflate_some(struct byte_source *s, void *dst, size_t cap, size_t *file_bytes) {
  FSDP_CHECK(cap > 0 && cap <= UINT_MAX);
  z_stream *z = s->inflater;
  z->next_out = dst;
  z->avail_out = (unsigned)cap;
  while (z->avail_out == cap) {
    if (z->avail_in == 0) {
      size_t n = s->file.size - s->offset < GZIP_IN_BYTES ? s->file.size - s->offset : GZIP_IN_BYTES;
      if (n == 0) {
        /* A download cut short must not pass for a smaller data set. */
        if (!s->member_ended)
          fsdp_fatal("%s '%s': its gzip data is cut short (the file ends inside it)", s->what, s->file.path);
        return 0;
      }
      input_file_read_at(&s->file, s->what, s->in, n, s->offset);
      s->offset += n;
      *file_bytes += n;
      z->next_in = s->in;
      z->avail_in = (unsigned)n;
    }
    /* gzip files may be members one after another (cat a.gz b.gz): each is inflated in
     * turn; anything else after a member is refused by the next header's check. */
    if (s->member_ended) {
      inflateReset(z);
      s->member_ended = 0;
    }
    int r = inflate(z, Z_NO_FLUSH);
    if (r == Z_STREAM_END)
      s->member_ended = 1;
    else if (r != Z_OK && r != Z_BUF_ERROR)
      fsdp_fatal("%s '%s': not valid gzip data (near byte %zu of the file: %s)", s->what, s->file.path,
                 s->offset - z->avail_in, z->msg ? z->msg : "zlib error");
  }
  return cap - z->avail_out;
}

static void inflater_end(struct byte_source *s) {
  inflateEnd(s->inflater);
  free(s->inflater);
  free(s->in);
}
#else
static void inflater_start(struct byte_source *s) {
  fsdp_fatal("%s '%s': is gzip, and this fsdp was built without zlib (install zlib1g-dev and build again, or "
             "gunzip it first)", s->what, s->file.path);
}

static size_t inflate_some(struct byte_source *s, void *dst, size_t cap, size_t *file_bytes) {
  (void)s, (void)dst, (void)cap, (void)file_bytes;
  return 0;
}

static void inflater_end(struct byte_source *s) { (void)s; }
#endif

void byte_source_open(struct byte_source *s, const char *what, const char *path) {
  memset(s, 0, sizeof *s);
  s->what = what;
  input_file_open(&s->file, what, path);
  unsigned char magic[2];
  if (s->file.size < 2) return;
  input_file_read_at(&s->file, what, magic, 2, 0);
  if (magic[0] == 0x1f && magic[1] == 0x8b) inflater_start(s);
}

size_t byte_source_read(struct byte_source *s, void *dst, size_t cap, size_t *file_bytes) {
  *file_bytes = 0;
  if (s->inflater) return inflate_some(s, dst, cap, file_bytes);
  size_t n = s->file.size - s->offset < cap ? s->file.size - s->offset : cap;
  if (n) input_file_read_at(&s->file, s->what, dst, n, s->offset);
  s->offset += n;
  *file_bytes = n;
  return n;
}

void byte_source_close(struct byte_source *s) {
  if (s->inflater) inflater_end(s);
  input_file_close(&s->file);
  memset(s, 0, sizeof *s);
}

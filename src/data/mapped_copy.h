/* Private to src/data: a copy out of a file's mapping that survives the file shrinking
 * under it. A page of a mapping past the file's end raises SIGBUS when touched (a shard
 * truncated by another process, a cleanup job on NFS); here that ends the copy instead of
 * the process, so that the reader can name the file. */
#ifndef FSDP_DATA_MAPPED_COPY_H
#define FSDP_DATA_MAPPED_COPY_H

#include <stddef.h>

/* Copies n bytes of a mapping at src to dst; returns 0, or -1 when a bus error (a page
 * past the file's end) stopped it. SIGBUS anywhere else in the process still ends it as
 * before. */
int mapped_copy(void *dst, const void *src, size_t n);

#endif

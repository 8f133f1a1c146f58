/* Files that survive a crash of the process or the machine: written to PATH.tmp,
 * fsynced, renamed to PATH, and the directory fsynced, so that PATH is either absent
 * or whole. These return 0, or -1 with the reason (naming the file) in why: they run on
 * background threads too, where ending the job is the caller's decision. */
#ifndef FSDP_DURABLE_FILE_H
#define FSDP_DURABLE_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Writes bytes of data to path the durable way; *crc is their CRC-32C (fsdp/crc32c.h),
 * computed as they are written. */
int durable_write(const char *path, const void *data, size_t bytes, uint32_t *crc, char *why, size_t why_size);

/* fsyncs a directory, so that the names created, renamed or removed in it last. */
int durable_sync_dir(const char *dir, char *why, size_t why_size);
/* The same for the directory that holds path: what makes a rename into it last. */
int durable_sync_parent(const char *path, char *why, size_t why_size);

/* The size and CRC-32C of a whole file, read back. */
int file_crc32c(const char *path, size_t *bytes, uint32_t *crc, char *why, size_t why_size);

#endif

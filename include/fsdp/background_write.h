/* One durable file write (fsdp/durable_file.h) on a thread of its own, so that the
 * caller goes on working while the bytes reach the disk. The thread makes no call
 * but file I/O: it never touches MPI or a device. */
#ifndef FSDP_BACKGROUND_WRITE_H
#define FSDP_BACKGROUND_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct background_write;

/* Starts writing bytes of data to path; data must stay alive and unchanged until
 * background_write_finish. */
struct background_write *background_write_start(const char *path, const void *data, size_t bytes);
/* 1 once the write has ended (well or not), without waiting. */
int background_write_done(struct background_write *w);
/* Waits for the write to end and frees w. Returns 0 with the file's CRC-32C in *crc, or
 * -1 with the reason in why. */
int background_write_finish(struct background_write *w, uint32_t *crc, char *why, size_t why_size);

#endif

/* Files streamed under a temporary name, then synced and renamed (durable_file.h's way),
 * so that a crash leaves either the old file or the complete new one, never a part.
 * Every failure ends the job with a message naming the file. */
#ifndef FSDP_FILE_COMMIT_H
#define FSDP_FILE_COMMIT_H

#include <stddef.h>

/* path + ".tmp", malloc'd. */
char *file_commit_temp_path(const char *path);
/* Creates (truncates) tmp for writing; returns its descriptor. */
int file_commit_create(const char *tmp);
/* Writes all n bytes to fd; a failure names path. */
void file_commit_write(int fd, const char *path, const void *data, size_t n);
/* Writes all n bytes to fd at offset (a header filled in last); a failure names path. */
void file_commit_write_at(int fd, const char *path, const void *data, size_t n, size_t offset);
/* fsync and close fd, rename tmp to path, fsync the folder. */
void file_commit_finish(int fd, const char *tmp, const char *path);
/* The whole of data to path, through its temporary name. */
void file_commit_whole(const char *path, const void *data, size_t n);

#endif

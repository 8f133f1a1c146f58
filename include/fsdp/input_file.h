/* Files fsdp reads, one rule for all of them (token data, safetensors and their index,
 * config.json, checkpoint metadata and shards, memory snapshots, tokenizer files): a
 * file is opened without blocking and must be a regular file — symlinks followed, the
 * target checked — so that a FIFO never hangs the open and /dev/zero is never read
 * without bound; then it is read within the size fstat gave, and a file that changes
 * size while it is read is refused rather than read half old, half new. */
#ifndef FSDP_INPUT_FILE_H
#define FSDP_INPUT_FILE_H

#include <stddef.h>

struct input_file {
  int fd;
  const char *path;
  size_t size; /* fstat's, at the open */
};

/* The caps of input_file_read_all for what is held whole in memory. */
enum { INPUT_JSON_MAX_BYTES = 256 << 20 };

/* Opens path, or returns -1 with the reason in why ("No such file or directory", "is a
 * FIFO, not a regular file") and errno set (EINVAL for a file that is not regular). */
int input_file_try_open(struct input_file *f, const char *path, char *why, size_t why_size);
/* The same, ending the job with "<what> '<path>': <why>" (what: "token file", ...). */
void input_file_open(struct input_file *f, const char *what, const char *path);
void input_file_close(struct input_file *f);

/* bytes at offset, all of them within the file's size, or the job ends naming what. */
void input_file_read_at(const struct input_file *f, const char *what, void *dst, size_t bytes, size_t offset);
/* The whole file, NUL-terminated, *length bytes (the terminator not counted); ends the
 * job when it is larger than cap bytes, or grows or shrinks while it is read. */
char *input_file_read_whole(struct input_file *f, const char *what, size_t cap, size_t *length);
/* input_file_open, input_file_read_whole and input_file_close. */
char *input_file_read_all(const char *what, const char *path, size_t cap, size_t *length);

/* Whether a and b name one file (device and inode, links followed); 0 where either is
 * not there. For a command's checks that what it writes is not what it reads. */
int input_file_same(const char *a, const char *b);
/* The folder path is in, as text: up to its last slash ("/" in the root, "." without one). */
void input_file_folder(const char *path, char *folder, size_t size);

#endif

/* What the fuzz targets share (docs/architecture.md, "Fuzzing"): each writes its input to
 * a file of the process's own directory and runs the real reader on it, as fsdp would,
 * under a catch point (fsdp/error.h), so that an input the reader refuses is one more
 * input rather than the end of the process. A refusal must be a clear one: a message
 * that names the file, never a broken internal check; anything else, like a crash, a
 * sanitizer's report or a hang, is a finding: the harness aborts and libFuzzer keeps
 * the input. */
#ifndef FSDP_FUZZ_H
#define FSDP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points, which each target defines: its setup, and one input. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The process's directory for its inputs, made on first use under $TMPDIR (else /dev/shm,
 * else /tmp) and removed with all it holds when the process exits. */
const char *fuzz_dir(void);
/* fuzz_dir()/name, malloc'd, for the process's lifetime. */
char *fuzz_path(const char *name);
/* Writes size bytes of data to path, replacing what was there. */
void fuzz_write(const char *path, const void *data, size_t size);
/* Closes the descriptors left open on files of fuzz_dir(). */
void fuzz_close_files(void);

/* Records the heap blocks this thread allocates from now on, until forgotten (they are
 * the program's) or reclaimed (those still allocated are freed). */
void fuzz_heap_track(void);
void fuzz_heap_forget(void);
void fuzz_heap_reclaim(void);

/* Runs read(context) with a catch point set. Returns 0 when it returned, 1 when it
 * refused its input: then what the abandoned call had allocated and opened has been
 * reclaimed, and its message has been checked (it names fuzz_dir(), and is no internal
 * check); FUZZ_VERBOSE=1 in the environment prints it. */
int fuzz_read(void (*read)(void *context), void *context);

/* Ends the process as a finding: the message, then abort(). */
_Noreturn void fuzz_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

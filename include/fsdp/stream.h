/* Streams and events with CUDA semantics, so that the runtime is written once for
 * every device (fsdp/device.h creates them): work on a stream runs in order; an event
 * marks a point in a stream; a stream or the host can wait for an event.
 *
 * On CPU a worker stream is a thread with a FIFO queue, and an event is a completion
 * count of the stream it was recorded on. The host stream stands for the calling thread
 * (the compute stream of the CPU path): work launched on it runs at once, and a wait on
 * it blocks the caller. On CUDA they are cudaStream_t and cudaEvent_t. */
#ifndef FSDP_STREAM_H
#define FSDP_STREAM_H

#include <stddef.h>
#include <stdint.h>

struct device;
struct stream;
struct event;
struct stream_word;

enum { STREAM_LABEL_MAX = 96 };

/* Waits for the stream's work, then stops it. */
void stream_destroy(struct stream *s);
const char *stream_name(const struct stream *s);
struct device *stream_device(const struct stream *s);
int stream_is_host(const struct stream *s);

/* How the device backends of the kernels (src/nn) and of the collectives (src/comm)
 * put their work on a stream; nothing above them calls it. fn is the backend's
 * launcher: on cpu it is the work itself, run after all work launched on s before; on
 * cuda it enqueues the work on the stream and returns; on meta it is not called. The
 * arg_bytes at arg are copied, so arg may live on the caller's stack. label names the
 * work in profile traces (a span on the stream's track while it runs). */
void stream_launch(struct stream *s, const char *label, void (*fn)(void *arg), const void *arg, size_t arg_bytes);
/* The cudaStream_t of a cuda stream, for the cuda backends of the kernels and the
 * collectives to enqueue their work on; NULL on cpu and meta streams. */
void *stream_native_handle(const struct stream *s);
/* Work launched on s after this call starts only once e's recorded point is reached.
 * On the host stream the caller blocks until then. */
void stream_wait_event(struct stream *s, struct event *e);
/* Blocks the caller until all work launched on s so far has run. */
void stream_synchronize(struct stream *s);

/* An event is recorded, queried and waited for by one thread at a time (the
 * runtime's compute thread); streams copy its point when they are told to wait. */
struct event *event_create(struct device *d);
void event_destroy(struct event *e);
/* Marks the point after all work launched on s so far; recording again moves the mark. */
void event_record(struct event *e, struct stream *s);
/* 1 when the recorded point has been reached (or the event was never recorded). */
int event_query(const struct event *e);
void event_synchronize(struct event *e);

/* A 32-bit word of host memory that streams store into and wait on, and host threads
 * read and store (mapped pinned memory on cuda): how a stream and a host thread hand work
 * to each other with no device call on the host thread's side, which a thread that a
 * stream waits for must not make (docs/architecture.md, "Collectives on device streams").
 * Values compare modulo 2^32: a word has reached v when (word - v) mod 2^32 < 2^31, so
 * a counter may wrap. A word starts at 0; it must outlive the work launched on it. */
struct stream_word *stream_word_create(struct device *d);
void stream_word_destroy(struct stream_word *w);
/* When s gets here, after all work launched on it before (and seeing its writes), the
 * word becomes value: cuStreamWriteValue32 on cuda; nothing on meta. On a host stream, now. */
void stream_write_word(struct stream *s, struct stream_word *w, uint32_t value);
/* Work launched on s after this starts once the word has reached value:
 * cuStreamWaitValue32 on cuda. On the host stream of cpu the caller blocks until then. */
void stream_wait_word(struct stream *s, struct stream_word *w, uint32_t value);
/* The host's side, from any thread and without a device call: load (acquire), store
 * (release: what the thread wrote before is seen by the work that waited for it), and
 * a wait that polls, sleeping between polls, until the word has reached value. */
uint32_t stream_word_load(const struct stream_word *w);
void stream_word_store(struct stream_word *w, uint32_t value);
int stream_word_reached(uint32_t word, uint32_t value);
void stream_word_wait(const struct stream_word *w, uint32_t value);

/* Milliseconds since the stream was created (or last reset) that it spent running
 * work (worker streams) and that the host stream's thread spent blocked in
 * stream_wait_event; NAN where the backend does not time its streams (cuda). */
struct stream_times {
  double busy_ms;
  double blocked_ms;
};
void stream_get_times(struct stream *s, struct stream_times *out);
void stream_reset_times(struct stream *s);

#endif

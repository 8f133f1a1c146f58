/* A device: where tensors live and work runs. Three backends behind one interface,
 * the way ggml-backend does it:
 *   cpu   host memory; a stream is a worker thread with a FIFO queue (fsdp/stream.h);
 *   cuda  an NVIDIA GPU: cudaStream_t, cudaEvent_t, cudaMemcpyAsync, pinned host memory;
 *   meta  hands out address ranges and runs nothing: `fsdp plan` runs the real training
 *         step on it, and its memory accounting is the plan.
 *
 * Memory comes from a stream-ordered caching allocator per device (allocator.c): blocks
 * are rounded, cached when freed and reused across steps, never given back inside a run;
 * a block freed after its last use on one stream goes to another only once an event
 * recorded after that use has been reached. What each block is for (category, unit,
 * operation) sits in a side table keyed by its address (fsdp/memory.h), never in a
 * header in front of device memory. */
#ifndef FSDP_DEVICE_H
#define FSDP_DEVICE_H

#include <stddef.h>

#include "fsdp/memory.h"
#include "fsdp/stream.h"

enum device_kind { DEVICE_CPU, DEVICE_CUDA, DEVICE_META };

struct device;

/* The process's CPU device (host memory). */
struct device *device_cpu(void);
/* The GPU of this rank (cuda), or a meta device planning for `target` (cpu or cuda).
 * A cuda device where there is none, or in a build without CUDA, ends the job with a
 * message saying so. */
struct device *device_open(enum device_kind kind, enum device_kind target);
void device_close(struct device *d);
/* 1 when this process can use a GPU; 0 where there is none to use (no device, no NVIDIA
 * driver installed, a build without CUDA), with the reason in why: lets a GPU test skip
 * where device_open(DEVICE_CUDA, ...) would end the job. A driver that is there but fails
 * ends the job, so that a broken GPU never reads as a missing one. */
int device_cuda_available(char *why, size_t why_size);
/* The GPU this process would use (its local rank's, as device_open picks it): its compute
 * capability and the shared memory a block may opt in to; 0 where there is none to use
 * (device_cuda_available's reasons). */
int device_cuda_capability(int *major, int *minor, size_t *smem_optin);

enum device_kind device_kind(const struct device *d);
/* The kind whose kernels and sizes a meta device stands for; a real device's own kind. */
enum device_kind device_target(const struct device *d);
const char *device_name(const struct device *d); /* "cpu", "cuda", "meta" */
int device_kind_parse(const char *name);          /* -1 for an unknown name */
/* 0 on meta: nothing launched there runs, and its memory must never be read. */
int device_computes(const struct device *d);
/* Where d is on its machine, so that processes can tell whether they share it: a GPU's
 * PCI bus id; "" on cpu and meta, whose memory is every process's own. */
void device_location(const struct device *d, char *out, size_t size);
/* What d is: a GPU's product name ("NVIDIA H100 80GB HBM3"); "" on cpu and meta. */
void device_model(const struct device *d, char *out, size_t size);

/* A stream of this device; name labels its track in profile traces. The host stream is
 * the calling thread's own: work launched on it runs before the launch returns (on cpu
 * and meta), or is queued on a GPU stream that the calling thread launches on (cuda). */
struct stream *device_stream_create(struct device *d, const char *name);
struct stream *device_host_stream_create(struct device *d, const char *name);

/* Device memory of the given category, for work on stream s first (NULL: the host's).
 * Not zeroed. bytes may be 0 (NULL is returned). Ends the job when out of memory. */
void *device_alloc(struct device *d, size_t bytes, enum mem_category category, struct stream *s);
/* Frees a block of d whose last use was launched on stream s (NULL: the host, done):
 * it is reused by s at once, by another stream once s has passed this point. Accepts NULL. */
void device_free(struct device *d, void *ptr, struct stream *s);
/* Gives the cached free blocks back to the system (stream-ordered: waits for them). */
void device_empty_cache(struct device *d);
/* Bytes the device holds from the system for its allocator (in use and cached). */
size_t device_reserved_bytes(const struct device *d);

/* Page-locked host memory for staging copies to and from the device (plain host memory
 * on cpu and meta), tracked in category `category` of d. */
void *device_alloc_pinned(struct device *d, size_t bytes, enum mem_category category);
void device_free_pinned(struct device *d, void *ptr);

/* Copies in stream order. Host pointers may be any host memory; copies from or to
 * non-pinned host memory may be synchronous. */
void device_copy_to_device(struct stream *s, void *dst, const void *host_src, size_t bytes);
void device_copy_to_host(struct stream *s, void *host_dst, const void *src, size_t bytes);
void device_copy(struct stream *s, void *dst, const void *src, size_t bytes);
void device_memset(struct stream *s, void *dst, int byte, size_t bytes);
/* How many times the host has waited for d's streams so far: each stream_synchronize,
 * event_synchronize and device_copy_to_host (whether or not the work was done already). */
size_t device_host_waits(const struct device *d);

/* Memory accounting of this device (fsdp/memory.h). */
void device_memory_stats(const struct device *d, struct mem_stats *out);
void device_reset_peaks(struct device *d);

#endif

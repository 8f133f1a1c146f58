/* The cuda device backend: cudaMalloc'd memory, cudaStream_t and cudaEvent_t. A launch
 * runs the backend's launcher on the calling thread, which enqueues the kernel or library
 * call on the stream and returns. Built only with FSDP_CUDA (cuda_none.c otherwise). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "fsdp/error.h"

#define CUDA_CALL(call)                                                                   \
  do {                                                                                    \
    cudaError_t cuda_call_rc_ = (call);                                                   \
    if (cuda_call_rc_ != cudaSuccess)                                                     \
      fsdp_fatal("cuda: %s failed: %s", #call, cudaGetErrorString(cuda_call_rc_));       \
  } while (0)

int cuda_device_available(char *why, size_t why_size) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    snprintf(why, why_size, "%s", cudaGetErrorString(rc));
    return 0;
  }
  if (count == 0) {
    snprintf(why, why_size, "the CUDA runtime sees no device");
    return 0;
  }
  return 1;
}

/* One GPU per rank: the local rank that mpirun gives each process picks it. */
static void select_device(void) {
  int count = 0;
  CUDA_CALL(cudaGetDeviceCount(&count));
  const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int ordinal = local_rank ? atoi(local_rank) % count : 0;
  CUDA_CALL(cudaSetDevice(ordinal));
}

static void *gpu_alloc(struct device *d, size_t bytes) {
  (void)d;
  select_device();
  void *ptr = NULL;
  return cudaMalloc(&ptr, bytes) == cudaSuccess ? ptr : NULL;
}

static void gpu_free(struct device *d, void *ptr, size_t bytes) {
  (void)d;
  (void)bytes;
  CUDA_CALL(cudaFree(ptr));
}

static void *pinned_alloc(size_t bytes) {
  void *ptr = NULL;
  return cudaMallocHost(&ptr, bytes) == cudaSuccess ? ptr : NULL;
}

static void pinned_free(void *ptr) { CUDA_CALL(cudaFreeHost(ptr)); }

/* The compute ("host") stream is a stream of its own too: the legacy default stream
 * would synchronise with every other. */
static void *gpu_stream_create(struct stream *s, int host) {
  (void)s;
  (void)host;
  select_device();
  cudaStream_t stream;
  CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

static void gpu_stream_destroy(struct stream *s) {
  CUDA_CALL(cudaStreamSynchronize((cudaStream_t)s->impl));
  CUDA_CALL(cudaStreamDestroy((cudaStream_t)s->impl));
}

static void gpu_stream_launch(struct stream *s, const char *label, void (*fn)(void *), const void *arg, size_t bytes) {
  (void)s;
  (void)label;
  (void)bytes;
  fn((void *)arg);
}

static void gpu_stream_wait_event(struct stream *s, struct event *e) {
  CUDA_CALL(cudaStreamWaitEvent((cudaStream_t)s->impl, (cudaEvent_t)e->impl, 0));
}

static void gpu_stream_synchronize(struct stream *s) { CUDA_CALL(cudaStreamSynchronize((cudaStream_t)s->impl)); }

/* A GPU stream's busy time needs timing events around its work: not measured yet. */
static void gpu_stream_times(struct stream *s, struct stream_times *out, int reset) {
  (void)s;
  (void)reset;
  out->busy_ms = out->blocked_ms = 0;
}

static void *gpu_event_create(struct device *d) {
  (void)d;
  select_device();
  cudaEvent_t e;
  CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

static void gpu_event_destroy(struct event *e) { CUDA_CALL(cudaEventDestroy((cudaEvent_t)e->impl)); }

static void gpu_event_record(struct event *e, struct stream *s) {
  CUDA_CALL(cudaEventRecord((cudaEvent_t)e->impl, (cudaStream_t)s->impl));
}

static int gpu_event_query(const struct event *e) {
  cudaError_t rc = cudaEventQuery((cudaEvent_t)e->impl);
  if (rc == cudaErrorNotReady) return 0;
  CUDA_CALL(rc);
  return 1;
}

static void gpu_event_synchronize(struct event *e) { CUDA_CALL(cudaEventSynchronize((cudaEvent_t)e->impl)); }

static void gpu_copy(struct stream *s, void *dst, const void *src, size_t bytes, int to_device, int from_device) {
  enum cudaMemcpyKind kind = to_device && from_device ? cudaMemcpyDeviceToDevice
                             : to_device              ? cudaMemcpyHostToDevice
                                                      : cudaMemcpyDeviceToHost;
  CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, kind, (cudaStream_t)s->impl));
}

static void gpu_memset(struct stream *s, void *dst, int byte, size_t bytes) {
  CUDA_CALL(cudaMemsetAsync(dst, byte, bytes, (cudaStream_t)s->impl));
}

static const struct device_backend CUDA_BACKEND = {
    .name = "cuda",
    .kind = DEVICE_CUDA,
    .computes = 1,
    .raw_alloc = gpu_alloc,
    .raw_free = gpu_free,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .stream_create = gpu_stream_create,
    .stream_destroy = gpu_stream_destroy,
    .stream_launch = gpu_stream_launch,
    .stream_wait_event = gpu_stream_wait_event,
    .stream_synchronize = gpu_stream_synchronize,
    .stream_times = gpu_stream_times,
    .event_create = gpu_event_create,
    .event_destroy = gpu_event_destroy,
    .event_record = gpu_event_record,
    .event_query = gpu_event_query,
    .event_synchronize = gpu_event_synchronize,
    .copy = gpu_copy,
    .memset = gpu_memset,
};

const struct device_backend *cuda_backend(void) { return &CUDA_BACKEND; }

/* The cuda device backend: cudaMalloc'd memory, cudaStream_t and cudaEvent_t. A launch
 * runs the backend's launcher on the calling thread, which enqueues the kernel or library
 * call on the stream and returns. Built only with FSDP_CUDA (cuda_none.c otherwise). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
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

/* 1 when the NVIDIA driver's library is installed, whether it works or not. */
static int driver_installed(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return 0;
  dlclose(driver);
  return 1;
}

/* No GPU is a machine without a device or without a driver at all; any other failure (a
 * driver too old for this runtime, a broken installation) is an error, not a reason to
 * skip the GPU's tests. */
int cuda_device_available(char *why, size_t why_size) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == cudaSuccess && count > 0) return 1;
  if (rc == cudaSuccess || rc == cudaErrorNoDevice)
    snprintf(why, why_size, "the CUDA runtime sees no device");
  else if (rc == cudaErrorInsufficientDriver && !driver_installed())
    snprintf(why, why_size, "no NVIDIA driver is installed (no libcuda.so.1)");
  else
    fsdp_fatal("cuda: cudaGetDeviceCount failed: %s (a driver is installed, but this process cannot use it)",
               cudaGetErrorString(rc));
  return 0;
}

/* One GPU per rank: the local rank its launcher gives each process picks it (mpirun's,
 * or srun's where srun starts the ranks itself; an mpirun inside a Slurm job sets both). */
static void select_device(void) {
  int count = 0;
  CUDA_CALL(cudaGetDeviceCount(&count));
  const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!local_rank) local_rank = getenv("SLURM_LOCALID");
  int ordinal = local_rank ? atoi(local_rank) % count : 0;
  CUDA_CALL(cudaSetDevice(ordinal));
}

int cuda_device_capability(int *major, int *minor, size_t *smem_optin) {
  select_device();
  int ordinal = 0, bytes = 0;
  CUDA_CALL(cudaGetDevice(&ordinal));
  CUDA_CALL(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, ordinal));
  CUDA_CALL(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, ordinal));
  CUDA_CALL(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
  *smem_optin = (size_t)bytes;
  return 1;
}

/* A failed allocation that the caching allocator recovers from (by emptying its cache)
 * must not leave its error for the next launch's cudaGetLastError. */
static void *gpu_alloc(struct device *d, size_t bytes) {
  (void)d;
  select_device();
  void *ptr = NULL;
  if (cudaMalloc(&ptr, bytes) == cudaSuccess) return ptr;
  (void)cudaGetLastError();
  return NULL;
}

static void gpu_free(struct device *d, void *ptr, size_t bytes) {
  (void)d;
  (void)bytes;
  CUDA_CALL(cudaFree(ptr));
}

static void *pinned_alloc(size_t bytes) {
  void *ptr = NULL;
  if (cudaMallocHost(&ptr, bytes) == cudaSuccess) return ptr;
  (void)cudaGetLastError();
  return NULL;
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

/* A GPU stream's busy time needs timing events around its work: not measured yet, and
 * said so (NAN) rather than reported as none. */
static void gpu_stream_times(struct stream *s, struct stream_times *out, int reset) {
  (void)s;
  (void)reset;
  out->busy_ms = out->blocked_ms = NAN;
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

/* "Not ready" is an answer, not an error, but CUDA records it as the thread's last error
 * all the same: cleared, as PyTorch does, or the next kernel launch's check would take
 * it for its own failure. */
static int gpu_event_query(const struct event *e) {
  cudaError_t rc = cudaEventQuery((cudaEvent_t)e->impl);
  if (rc == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return 0;
  }
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

static void gpu_location(struct device *d, char *out, size_t size) {
  (void)d;
  select_device();
  int ordinal = 0;
  CUDA_CALL(cudaGetDevice(&ordinal));
  CUDA_CALL(cudaDeviceGetPCIBusId(out, (int)size, ordinal));
}

static void gpu_model(struct device *d, char *out, size_t size) {
  (void)d;
  select_device();
  int ordinal = 0;
  struct cudaDeviceProp prop;
  CUDA_CALL(cudaGetDevice(&ordinal));
  CUDA_CALL(cudaGetDeviceProperties(&prop, ordinal));
  snprintf(out, size, "%s", prop.name);
}

/* Stream words: mapped pinned memory, written and waited on by the driver's stream memory
 * operations, taken from the driver through the runtime so that nothing links libcuda. */
typedef CUresult (*stream_value_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
static stream_value_fn write_value, wait_value;
static pthread_once_t stream_values_once = PTHREAD_ONCE_INIT;

static stream_value_fn driver_function(const char *name) {
  enum cudaDriverEntryPointQueryResult found;
  void *fn = NULL;
  CUDA_CALL(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn) fsdp_fatal("cuda: this driver lacks %s (stream words)", name);
  return (stream_value_fn)fn;
}

static void find_stream_values(void) {
  write_value = driver_function("cuStreamWriteValue32");
  wait_value = driver_function("cuStreamWaitValue32");
}

static _Atomic uint32_t *gpu_word_alloc(struct device *d, void **impl) {
  (void)d;
  select_device();
  pthread_once(&stream_values_once, find_stream_values);
  void *word = NULL;
  CUDA_CALL(cudaHostAlloc(&word, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  CUDA_CALL(cudaHostGetDevicePointer(impl, word, 0));
  return word;
}

static void gpu_word_free(struct device *d, _Atomic uint32_t *host, void *impl) {
  (void)d;
  (void)impl;
  CUDA_CALL(cudaFreeHost((void *)host));
}

static void check_stream_value(CUresult rc, const char *call) {
  if (rc != CUDA_SUCCESS)
    fsdp_fatal("cuda: %s failed (CUresult %d): stream words need the driver's stream memory operations", call,
               (int)rc);
}

/* The default flags put a system-wide fence before the store: the stream's earlier copies
 * to host memory are visible to the thread that sees the value. */
static void gpu_stream_write_word(struct stream *s, struct stream_word *w, uint32_t value) {
  check_stream_value(write_value((CUstream)s->impl, (CUdeviceptr)(uintptr_t)w->impl, value, 0),
                     "cuStreamWriteValue32");
}

/* GEQ compares as stream_word_reached does: (int32_t)(word - value) >= 0. */
static void gpu_stream_wait_word(struct stream *s, struct stream_word *w, uint32_t value) {
  check_stream_value(wait_value((CUstream)s->impl, (CUdeviceptr)(uintptr_t)w->impl, value, CU_STREAM_WAIT_VALUE_GEQ),
                     "cuStreamWaitValue32");
}

static const struct device_backend CUDA_BACKEND = {
    .name = "cuda",
    .kind = DEVICE_CUDA,
    .computes = 1,
    .host_stream_queues = 1,
    .location = gpu_location,
    .model = gpu_model,
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
    .word_alloc = gpu_word_alloc,
    .word_free = gpu_word_free,
    .stream_write_word = gpu_stream_write_word,
    .stream_wait_word = gpu_stream_wait_word,
};

const struct device_backend *cuda_backend(void) { return &CUDA_BACKEND; }

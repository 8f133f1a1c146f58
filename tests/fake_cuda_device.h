/* A device that synchronizes the way CUDA documents it, over the cpu backend's streams,
 * for tests that must catch on a CPU what would hang on a GPU (tests/fake_cuda_device.c). */
#ifndef FSDP_TESTS_FAKE_CUDA_DEVICE_H
#define FSDP_TESTS_FAKE_CUDA_DEVICE_H

struct device;

/* Every call into it takes one process-wide lock (the driver's context lock); allocations
 * and frees (device, pinned, stream words) and each distinct kernel's first launch (its
 * module's lazy load) wait, holding that lock, until every stream of the device has run
 * all its work. Its kind is cpu: collectives on its streams take the cpu transports. */
struct device *fake_cuda_device_open(void);

#endif

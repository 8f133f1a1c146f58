/* A build without CUDA: there is no cuda backend, and device_open says so. */
#include <stdio.h>

#include "backend.h"

const struct device_backend *cuda_backend(void) { return NULL; }

int cuda_device_available(char *why, size_t why_size) {
  snprintf(why, why_size, "this fsdp was built without CUDA");
  return 0;
}

int cuda_device_capability(int *major, int *minor, size_t *smem_optin) {
  (void)major, (void)minor, (void)smem_optin;
  return 0;
}

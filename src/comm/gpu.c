/* Collectives on cuda streams (gpu.h): which transport a group takes, made at the
 * group's first collective on a cuda stream. That first launch is collective (every
 * rank launches the same collectives on a group in the same order), so the choice
 * can ask the other ranks where their GPUs are. Built only with FSDP_CUDA. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "gpu.h"

struct gpu_comm {
  struct nccl_comm *nccl;     /* one of the two */
  struct staged_comm *staged;
};

/* Where a rank's GPU is: its machine and the device's PCI bus id. */
struct gpu_place {
  char host[128];
  char bus_id[64];
};

/* 1 when two ranks of g share a GPU, which NCCL (before 2.30) refuses. */
static int gpu_shared(struct comm_group *g, int ordinal) {
  struct gpu_place mine;
  memset(&mine, 0, sizeof mine);
  if (gethostname(mine.host, sizeof mine.host - 1) != 0) fsdp_fatal("gethostname failed");
  cudaError_t rc = cudaDeviceGetPCIBusId(mine.bus_id, (int)sizeof mine.bus_id, ordinal);
  if (rc != cudaSuccess) fsdp_fatal("cuda: cudaDeviceGetPCIBusId failed: %s", cudaGetErrorString(rc));
  struct gpu_place *all = fsdp_xcalloc((size_t)g->size, sizeof *all);
  _Static_assert(sizeof mine % sizeof(int32_t) == 0, "gathered as 32-bit words");
  comm_all_gather(g, &mine, all, sizeof mine / sizeof(int32_t), COMM_I32);
  int shared = 0;
  for (int r = 0; r < g->size && !shared; r++)
    for (int q = r + 1; q < g->size && !shared; q++)
      shared = memcmp(&all[r], &all[q], sizeof mine) == 0;
  free(all);
  return shared;
}

/* FSDP_COMM_TRANSPORT, when set: "nccl" or "staged". */
static const char *forced_transport(void) {
  const char *t = getenv("FSDP_COMM_TRANSPORT");
  if (!t || !*t) return NULL;
  if (strcmp(t, "nccl") != 0 && strcmp(t, "staged") != 0)
    fsdp_fatal("FSDP_COMM_TRANSPORT must be nccl or staged, not '%s'", t);
  return t;
}

static struct gpu_comm *gpu_open(struct comm_group *g, struct stream *s) {
  int ordinal = 0;
  cudaError_t rc = cudaStreamGetDevice((cudaStream_t)stream_native_handle(s), &ordinal);
  if (rc != cudaSuccess) fsdp_fatal("cuda: cudaStreamGetDevice failed: %s", cudaGetErrorString(rc));
  /* Every rank asks, so that every rank takes part in the all-gather of the places. */
  int shared = gpu_shared(g, ordinal);
  const char *forced = forced_transport();
  int use_nccl = forced ? strcmp(forced, "nccl") == 0 : !shared;
  if (use_nccl && shared)
    fsdp_fatal("FSDP_COMM_TRANSPORT=nccl, but ranks of a group of %d share a GPU, which NCCL refuses "
               "(give each rank its own GPU, or use the staged transport)", g->size);
  struct gpu_comm *gc = fsdp_xcalloc(1, sizeof *gc);
  if (use_nccl)
    gc->nccl = nccl_open(g, ordinal);
  else
    gc->staged = staged_open(g, stream_device(s), ordinal);
  if (g->rank == 0)
    fsdp_log_info("comm: a group of %d ranks on cuda streams: %s transport%s", g->size, use_nccl ? "NCCL" : "staged",
                  forced ? " (FSDP_COMM_TRANSPORT)" : shared ? " (ranks share a GPU)" : "");
  return gc;
}

void gpu_launch(struct comm_group *g, struct stream *s, const struct collective *c) {
  if (!g->gpu) g->gpu = gpu_open(g, s);
  if (g->gpu->nccl)
    nccl_launch(g->gpu->nccl, s, c);
  else
    staged_launch(g->gpu->staged, s, c);
}

void gpu_group_free(struct comm_group *g) {
  if (g->gpu->nccl) nccl_close(g->gpu->nccl);
  if (g->gpu->staged) staged_close(g->gpu->staged);
  free(g->gpu);
  g->gpu = NULL;
}

/* Collectives on device streams (transport.h): which transport a group takes, chosen at
 * the group's first collective on a stream. That first launch is collective (every rank
 * launches the same collectives on a group in the same order), so the choice can ask
 * the other ranks where their devices are. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "transport.h"

/* Both NULL: MPI on the stream's thread (cpu streams). */
struct transport {
  struct nccl_comm *nccl;
  struct staged_comm *staged;
};

/* Where a rank's device is: its machine, and the device's place there. */
struct device_place {
  char host[128];
  char location[64];
};

/* 1 when two ranks of g share a device, which NCCL (before 2.30) refuses. */
static int device_shared(struct comm_group *g, const struct device *d) {
  struct device_place mine;
  memset(&mine, 0, sizeof mine);
  if (gethostname(mine.host, sizeof mine.host - 1) != 0) fsdp_fatal("gethostname failed");
  device_location(d, mine.location, sizeof mine.location);
  struct device_place *all = fsdp_xcalloc((size_t)g->size, sizeof *all);
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

static struct transport *transport_open(struct comm_group *g, struct stream *s) {
  struct device *d = stream_device(s);
  const char *forced = forced_transport();
  struct transport *t = fsdp_xcalloc(1, sizeof *t);
  const char *why = forced ? " (FSDP_COMM_TRANSPORT)" : "";
  if (device_kind(d) == DEVICE_CUDA) {
    /* Every rank asks, so that every rank takes part in the all-gather of the places. */
    int shared = device_shared(g, d);
    int use_nccl = forced ? strcmp(forced, "nccl") == 0 : !shared;
    if (use_nccl && shared)
      fsdp_fatal("FSDP_COMM_TRANSPORT=nccl, but ranks of a group of %d share a GPU, which NCCL refuses "
                 "(give each rank its own GPU, or use the staged transport)", g->size);
    if (use_nccl)
      t->nccl = nccl_open(g, s);
    else
      t->staged = staged_open(d);
    if (!forced && shared) why = " (ranks share a GPU)";
  } else if (forced && strcmp(forced, "nccl") == 0) {
    fsdp_fatal("FSDP_COMM_TRANSPORT=nccl: NCCL carries collectives on cuda streams, not on %s streams",
               device_name(d));
  } else if (forced) {
    t->staged = staged_open(d);
  }
  if (g->rank == 0 && (t->nccl || t->staged))
    fsdp_log_info("comm: a group of %d ranks on %s streams: %s transport%s", g->size, device_name(d),
                  t->nccl ? "NCCL" : "staged", why);
  return t;
}

void transport_launch(struct comm_group *g, struct stream *s, const struct collective *c) {
  if (!g->transport) g->transport = transport_open(g, s);
  if (g->transport->nccl)
    nccl_launch(g->transport->nccl, s, c);
  else if (g->transport->staged)
    staged_launch(g->transport->staged, s, c);
  else
    host_collective_launch(g, s, c);
}

void transport_free(struct comm_group *g) {
  if (!g->transport) return;
  if (g->transport->nccl) nccl_close(g->transport->nccl);
  if (g->transport->staged) staged_close(g->transport->staged);
  free(g->transport);
  g->transport = NULL;
}

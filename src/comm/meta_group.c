/* Meta groups (fsdp/comm.h): the ranks of a plan, their collectives charged to the meta
 * device's clock as rings over the group's links. */
#include <mpi.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "group.h"

struct comm_group *comm_meta_group(struct device *meta, int size, int rank) {
  FSDP_CHECK(size >= 1 && rank >= 0 && rank < size);
  struct comm_group *g = fsdp_xcalloc(1, sizeof *g);
  g->comm = MPI_COMM_NULL;
  g->meta = 1;
  g->size = size;
  g->rank = rank;
  g->device = meta;
  g->stride = 1;
  return g;
}

struct comm_group *meta_group_part(const struct comm_group *g, int size, int rank, int stride) {
  struct comm_group *part = comm_meta_group(g->device, size, rank);
  part->links = g->links;
  part->stride = g->stride * stride;
  return part;
}

void comm_meta_set_links(struct comm_group *g, const struct comm_links *links) {
  FSDP_CHECK(g->meta && links->ranks_per_node >= 1);
  g->links = *links;
}

double comm_meta_seconds(const struct comm_group *g, enum comm_kind kind, double bytes) {
  FSDP_CHECK(g->meta);
  const struct comm_links *l = &g->links;
  if (g->size == 1 || l->intra.bytes_per_s <= 0) return 0;
  int per_node = l->ranks_per_node, nics = l->nics_per_node ? l->nics_per_node : per_node;
  int on_node = g->stride >= per_node ? 1 : per_node / g->stride < g->size ? per_node / g->stride : g->size;
  int across = (long)g->size * g->stride > per_node;
  double bytes_per_s = l->intra.bytes_per_s, latency_s = l->intra.latency_s;
  if (across) {
    /* groups: how many of this kind a machine holds, all crossing it at once. */
    double groups = (double)per_node / on_node, spread = on_node < nics ? on_node : nics;
    double share = spread < nics / groups ? spread : nics / groups; /* of a NIC's rate */
    double nic_bytes_per_s = share * l->inter.bytes_per_s;
    bytes_per_s = nic_bytes_per_s < bytes_per_s ? nic_bytes_per_s : bytes_per_s;
    latency_s = l->inter.latency_s;
  }
  double part = kind == COMM_ALL_REDUCE ? bytes / g->size : bytes;
  double steps = (kind == COMM_ALL_REDUCE ? 2.0 : 1.0) * (g->size - 1);
  /* A step takes its part's transfer or its latency, whichever is longer: a ring sends a
   * part in segments, several in flight, so the waits on the latency overlap the segments
   * on the wire before them, and show where the transfer is the shorter. */
  double transfer = part / bytes_per_s;
  return steps * (transfer > latency_s ? transfer : latency_s);
}

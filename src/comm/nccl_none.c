/* A build without NCCL (CMake found no nccl.h and libnccl): groups whose ranks each
 * have a GPU of their own cannot take the NCCL transport, and say so. */
#include "fsdp/error.h"
#include "transport.h"

struct nccl_comm *nccl_open(struct comm_group *g, struct stream *s) {
  (void)g;
  (void)s;
  fsdp_fatal("collectives on cuda streams: this fsdp was built without NCCL (configure with -DNCCL_ROOT=DIR, "
             "the directory holding include/nccl.h and lib/libnccl.so, or set NCCL_HOME), and the staged "
             "transport is meant for ranks that share a GPU: set FSDP_COMM_TRANSPORT=staged to use it anyway");
}

void nccl_launch(struct nccl_comm *n, struct stream *s, const struct collective *c) {
  (void)n;
  (void)s;
  (void)c;
}

void nccl_close(struct nccl_comm *n) { (void)n; }

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/stream.h"
#include "fsdp/trace.h"
#include "fsdp/unit.h"

#include <stdio.h>

void fsdp_streams_init(struct fsdp_streams *s, struct device *device, struct comm_group *group,
                       struct comm_group *replicate) {
  s->device = device;
  s->compute = device_host_stream_create(device, "compute");
  s->all_gather = device_stream_create(device, "all-gather");
  s->reduce_scatter = device_stream_create(device, "reduce-scatter");
  s->all_gather_group = comm_group_dup(group, "all-gather");
  s->reduce_scatter_group = comm_group_dup(group, "reduce-scatter");
  s->replicate = NULL;
  s->replicate_group = NULL;
  if (replicate && comm_size(replicate) > 1) {
    s->replicate = device_stream_create(device, "replicate all-reduce");
    s->replicate_group = comm_group_dup(replicate, "replicate all-reduce");
  }
  s->host = NULL;
  s->blocking = 0;
}

void fsdp_streams_offload(struct fsdp_streams *s) {
  FSDP_CHECK(!s->host && device_target(s->device) == DEVICE_CUDA);
  /* A plan runs the host's work as a meta device planning for the cpu: its kernels' sizes,
   * nothing computed (the pinned "memory" is address ranges too). */
  struct device *host = device_computes(s->device) ? device_cpu() : device_open(DEVICE_META, DEVICE_CPU);
  s->host = device_host_stream_create(host, "host");
}

struct stream *fsdp_streams_home(const struct fsdp_streams *s) { return s->host ? s->host : s->compute; }

void fsdp_streams_free(struct fsdp_streams *s) {
  stream_destroy(s->all_gather);
  stream_destroy(s->reduce_scatter);
  stream_destroy(s->compute);
  comm_group_free(s->all_gather_group);
  comm_group_free(s->reduce_scatter_group);
  if (s->replicate) {
    stream_destroy(s->replicate);
    comm_group_free(s->replicate_group);
  }
  if (s->host) {
    struct device *host = stream_device(s->host);
    stream_destroy(s->host);
    device_close(host); /* the cpu device stays open */
  }
}

void fsdp_streams_wait(const struct fsdp_streams *s, struct event *e, const char *what) {
  if (!trace_enabled() || event_query(e)) {
    stream_wait_event(s->compute, e);
    return;
  }
  double begin = trace_now_us();
  stream_wait_event(s->compute, e);
  char name[TRACE_NAME_MAX];
  snprintf(name, sizeof name, "wait %s", what);
  trace_span(trace_track(stream_name(s->compute)), name, begin, trace_now_us());
}

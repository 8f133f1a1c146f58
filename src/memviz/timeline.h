/* Private to src/memviz: one step of one rank of a Chrome trace that `fsdp train
 * --trace` wrote, as its tracks (the compute thread, then each comm stream) and their
 * spans, for `fsdp traceviz` to draw. */
#ifndef FSDP_MEMVIZ_TIMELINE_H
#define FSDP_MEMVIZ_TIMELINE_H

#include <stdio.h>

/* What a span is: a kernel on a track of kernels ("compute kernels"), otherwise from the
 * first word of its name. The compute track's "wait" spans are communication the compute
 * thread stood still for: the exposed part of it. */
enum span_kind {
  SPAN_FORWARD,
  SPAN_BACKWARD,
  SPAN_OPTIMIZER,
  SPAN_WAIT,
  SPAN_ALL_GATHER,
  SPAN_REDUCE_SCATTER,
  SPAN_ALL_REDUCE,
  SPAN_KERNEL,
  SPAN_OTHER,
  SPAN_NUM_KINDS
};

struct timeline_span {
  char *name;
  enum span_kind kind;
  int track;          /* index into the timeline's tracks */
  double begin_ms;    /* from the step's start */
  double end_ms;
  int in_backward;    /* begins between the step's first backward span and its optimizer span */
};

struct timeline {
  const char *path;
  int rank;
  int step;       /* 1-based, among the steps the trace holds */
  int n_steps;
  double step_ms; /* the step's length */
  char **tracks;  /* names, in the trace's order (tid) */
  int n_tracks;
  struct timeline_span *spans;
  int n_spans;
};

const char *timeline_kind_name(enum span_kind kind);

/* Reads rank's spans of step (1-based; 0: the last step the trace holds) from the trace
 * at path. A step ends with its "optimizer" span on the compute track and begins where
 * the one before it ended (the first, at the rank's first span). Ends the job naming
 * the file and what is wrong with it. */
void timeline_load(struct timeline *t, const char *path, int rank, int step);
void timeline_free(struct timeline *t);

void timeline_write_svg(FILE *f, const struct timeline *t);

#endif

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "render.h"
#include "timeline.h"

/* A span as the file gives it: microseconds from the trace's start. */
struct raw_span {
  const char *name; /* inside the parsed document */
  int tid;
  double ts_us, dur_us;
};

struct track_name {
  int tid;
  const char *name;
};

__attribute__((format(printf, 3, 4))) _Noreturn static void fail(const char *path, long event, const char *fmt,
                                                                   ...) {
  char message[512], where[48] = "";
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  if (event >= 0) snprintf(where, sizeof where, "\"traceEvents\"[%ld]: ", event);
  fsdp_fatal("trace '%s': %s%s", path, where, message);
}

static double number_field(const char *path, long event, const cJSON *e, const char *name) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(e, name);
  if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble)) fail(path, event, "\"%s\" must be a number", name);
  return item->valuedouble;
}

static const char *string_field(const char *path, long event, const cJSON *e, const char *name) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(e, name);
  if (!cJSON_IsString(item)) fail(path, event, "\"%s\" must be a string", name);
  return item->valuestring;
}

static int int_field(const char *path, long event, const cJSON *e, const char *name) {
  double v = number_field(path, event, e, name);
  if (v != floor(v) || v < 0 || v > 1e9) fail(path, event, "\"%s\" must be a whole number >= 0, got %g", name, v);
  return (int)v;
}

const char *timeline_kind_name(enum span_kind kind) {
  static const char *const NAMES[SPAN_NUM_KINDS] = {"forward",        "backward",       "optimizer",
                                                    "wait",           "all-gather",     "reduce-scatter",
                                                    "all-reduce",     "kernel",         "other"};
  return NAMES[kind];
}

static enum span_kind kind_of(const char *name) {
  for (int k = 0; k < SPAN_KERNEL; k++) {
    size_t n = strlen(timeline_kind_name(k));
    if (strncmp(name, timeline_kind_name(k), n) == 0 && (name[n] == ' ' || name[n] == '\0')) return k;
  }
  return SPAN_OTHER;
}

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(fsdp_xmalloc(n), s, n);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int compare_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The rank's spans and its threads' names, read from the document's events. */
static struct raw_span *rank_spans(const char *path, const cJSON *events, int rank, int *n_spans,
                                   struct track_name **names, int *n_names) {
  struct raw_span *spans = NULL;
  size_t cap = 0, name_cap = 0;
  *n_spans = *n_names = 0;
  *names = NULL;
  long i = -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, events) {
    i++;
    if (!cJSON_IsObject(e)) fail(path, i, "an event must be an object");
    const char *ph = string_field(path, i, e, "ph");
    if (strcmp(ph, "X") != 0 && strcmp(ph, "M") != 0) continue;
    if (int_field(path, i, e, "pid") != rank) continue;
    const char *name = string_field(path, i, e, "name");
    int tid = int_field(path, i, e, "tid");
    if (strcmp(ph, "M") == 0) {
      if (strcmp(name, "thread_name") != 0) continue;
      const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
      if (!cJSON_IsObject(args)) fail(path, i, "a thread_name event must have \"args\"");
      *names = fsdp_xgrow(*names, &name_cap, (size_t)*n_names + 1, sizeof **names, 8);
      (*names)[(*n_names)++] = (struct track_name){tid, string_field(path, i, args, "name")};
      continue;
    }
    double ts = number_field(path, i, e, "ts"), dur = number_field(path, i, e, "dur");
    if (dur < 0) fail(path, i, "\"dur\" must be >= 0, got %g", dur);
    spans = fsdp_xgrow(spans, &cap, (size_t)*n_spans + 1, sizeof *spans, 256);
    spans[(*n_spans)++] = (struct raw_span){name, tid, ts, dur};
  }
  return spans;
}

/* The tracks are the threads that hold spans, in tid order, named by their metadata. */
static void build_tracks(struct timeline *t, const struct raw_span *spans, int n_spans,
                         const struct track_name *names, int n_names) {
  int *tids = fsdp_xmalloc((size_t)n_spans * sizeof *tids);
  for (int i = 0; i < n_spans; i++) tids[i] = spans[i].tid;
  qsort(tids, (size_t)n_spans, sizeof *tids, compare_int);
  t->tracks = fsdp_xcalloc((size_t)n_spans, sizeof *t->tracks);
  for (int i = 0; i < n_spans; i++) {
    if (i > 0 && tids[i] == tids[i - 1]) continue;
    char fallback[32];
    snprintf(fallback, sizeof fallback, "thread %d", tids[i]);
    const char *name = fallback;
    for (int k = 0; k < n_names; k++)
      if (names[k].tid == tids[i]) name = names[k].name;
    tids[t->n_tracks] = tids[i];
    t->tracks[t->n_tracks++] = copy_string(name);
  }
  for (int i = 0; i < n_spans; i++) {
    int k = 0;
    while (tids[k] != spans[i].tid) k++;
    t->spans[i].track = k;
  }
  free(tids);
}

void timeline_load(struct timeline *t, const char *path, int rank, int step) {
  memset(t, 0, sizeof *t);
  t->path = path;
  t->rank = rank;
  size_t length;
  char *text = input_file_read_all("trace", path, INPUT_JSON_MAX_BYTES, &length);
  cJSON *doc = memviz_parse_json(path, text, length);
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
  if (!cJSON_IsArray(events)) fail(path, -1, "missing the \"traceEvents\" array of a Chrome trace");

  struct track_name *names;
  int n_raw, n_names;
  struct raw_span *raw = rank_spans(path, events, rank, &n_raw, &names, &n_names);
  if (n_raw == 0) fail(path, -1, "no spans of rank %d (--rank)", rank);
  /* The ends of the optimizer spans close the steps. */
  double *ends = fsdp_xmalloc((size_t)n_raw * sizeof *ends);
  double first_us = raw[0].ts_us;
  for (int i = 0; i < n_raw; i++) {
    if (kind_of(raw[i].name) == SPAN_OPTIMIZER) ends[t->n_steps++] = raw[i].ts_us + raw[i].dur_us;
    if (raw[i].ts_us < first_us) first_us = raw[i].ts_us;
  }
  if (t->n_steps == 0) fail(path, -1, "rank %d has no \"optimizer\" span, so no whole step", rank);
  qsort(ends, (size_t)t->n_steps, sizeof *ends, compare_double);
  /* The drawing ticks a step's axis every tenth of its length, so a step lasts a finite
   * time, 0 or from the nanosecond the trace's times are rounded to (trace_file.c): finite
   * times may lie further apart than a double holds, and the tenth of a length below a
   * nanosecond may round to 0, which the ticks would never pass. */
  for (int k = 0; k < t->n_steps; k++) {
    double ms = (ends[k] - (k > 0 ? ends[k - 1] : first_us)) / 1e3;
    if (!isfinite(ms) || (ms > 0 && ms < 1e-6))
      fail(path, -1, "rank %d's step %d lasts %g ms, no time a clock measured", rank, k + 1, ms);
  }
  if (step > t->n_steps)
    fail(path, -1, "--step %d: rank %d holds %d step%s", step, rank, t->n_steps, t->n_steps == 1 ? "" : "s");
  t->step = step > 0 ? step : t->n_steps;
  double begin_us = t->step > 1 ? ends[t->step - 2] : first_us, end_us = ends[t->step - 1];
  t->step_ms = (end_us - begin_us) / 1e3;

  /* The spans that overlap the step, cut to it. */
  struct raw_span *kept = fsdp_xmalloc((size_t)n_raw * sizeof *kept);
  for (int i = 0; i < n_raw; i++)
    if (raw[i].ts_us < end_us && raw[i].ts_us + raw[i].dur_us > begin_us) kept[t->n_spans++] = raw[i];
  t->spans = fsdp_xcalloc((size_t)t->n_spans, sizeof *t->spans);
  build_tracks(t, kept, t->n_spans, names, n_names);
  /* The backward runs from its first span to the step's optimizer span. */
  double backward_us = end_us, optimizer_us = end_us;
  for (int i = 0; i < t->n_spans; i++) {
    enum span_kind kind = kind_of(kept[i].name);
    if (kind == SPAN_BACKWARD && kept[i].ts_us < backward_us) backward_us = kept[i].ts_us;
    if (kind == SPAN_OPTIMIZER && kept[i].ts_us + kept[i].dur_us == end_us) optimizer_us = kept[i].ts_us;
  }
  for (int i = 0; i < t->n_spans; i++) {
    struct timeline_span *s = &t->spans[i];
    s->name = copy_string(kept[i].name);
    s->kind = memviz_ends_with(t->tracks[s->track], " kernels") ? SPAN_KERNEL : kind_of(kept[i].name);
    s->begin_ms = (fmax(kept[i].ts_us, begin_us) - begin_us) / 1e3;
    s->end_ms = (fmin(kept[i].ts_us + kept[i].dur_us, end_us) - begin_us) / 1e3;
    s->in_backward = kept[i].ts_us >= backward_us && kept[i].ts_us < optimizer_us;
  }
  free(kept);
  free(ends);
  free(names);
  free(raw);
  cJSON_Delete(doc);
  free(text);
}

void timeline_free(struct timeline *t) {
  for (int i = 0; i < t->n_spans; i++) free(t->spans[i].name);
  for (int i = 0; i < t->n_tracks; i++) free(t->tracks[i]);
  free(t->spans);
  free(t->tracks);
  memset(t, 0, sizeof *t);
}

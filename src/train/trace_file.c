#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "run_outputs.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/output_file.h"
#include "fsdp/trace.h"

/* One rank's events as JSON text, each event as ",\n{...}": rank 0 joins the ranks'
 * texts by plain concatenation, so it never parses (or holds twice) the whole trace. */
static void append_event(struct text *t, cJSON *e) {
  char *s = cJSON_PrintUnformatted(e);
  if (!s) fsdp_fatal("--trace: out of memory printing an event");
  text_append(t, ",\n");
  text_append(t, s);
  cJSON_free(s);
  cJSON_Delete(e);
}

static cJSON *new_event(const char *ph, const char *name, int pid, int tid) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "ph", ph);
  cJSON_AddStringToObject(e, "name", name);
  cJSON_AddNumberToObject(e, "pid", pid);
  cJSON_AddNumberToObject(e, "tid", tid);
  return e;
}

/* Nanoseconds are finer than any span here; rounding to them keeps the file small and
 * within the 15 digits that cJSON prints exactly. */
static double to_ns(double us) { return round(us * 1e3) / 1e3; }

/* Tid 0 holds the process's own metadata; track k is tid k + 1. */
static int track_tid(int track) { return track + 1; }

static void append_metadata(struct text *t, const char *name, int pid, int tid, const char *key, cJSON *value) {
  cJSON *e = new_event("M", name, pid, tid);
  cJSON_AddItemToObject(cJSON_AddObjectToObject(e, "args"), key, value);
  append_event(t, e);
}

static void append_rank_events(struct text *t, int rank) {
  char process[32];
  snprintf(process, sizeof process, "rank %d", rank);
  append_metadata(t, "process_name", rank, 0, "name", cJSON_CreateString(process));
  append_metadata(t, "process_sort_index", rank, 0, "sort_index", cJSON_CreateNumber(rank));
  /* Tracks are created compute first, then the comm streams: their ids order them. */
  for (int k = 0; k < trace_num_tracks(); k++) {
    append_metadata(t, "thread_name", rank, track_tid(k), "name", cJSON_CreateString(trace_track_name(k)));
    append_metadata(t, "thread_sort_index", rank, track_tid(k), "sort_index", cJSON_CreateNumber(k));
  }
  size_t n;
  const struct trace_event *events = trace_events(&n);
  for (size_t i = 0; i < n; i++) {
    const struct trace_event *ev = &events[i];
    cJSON *e;
    if (ev->kind == TRACE_SPAN) {
      e = new_event("X", ev->name, rank, track_tid(ev->track));
      cJSON_AddStringToObject(e, "cat", trace_track_name(ev->track));
      cJSON_AddNumberToObject(e, "ts", to_ns(ev->ts_us));
      cJSON_AddNumberToObject(e, "dur", to_ns(ev->dur_us));
    } else {
      /* Counters belong to the process in Chrome's format: no tid. */
      e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "ph", "C");
      cJSON_AddStringToObject(e, "name", ev->name);
      cJSON_AddNumberToObject(e, "pid", rank);
      cJSON_AddNumberToObject(e, "ts", to_ns(ev->ts_us));
      cJSON *args = cJSON_AddObjectToObject(e, "args");
      for (int s = 0; s < ev->n_series; s++) cJSON_AddNumberToObject(args, ev->series[s], ev->values[s]);
    }
    append_event(t, e);
  }
}

void trace_file_check_writable(const char *path) { output_check_writable("--trace", path); }

void trace_file_write(const char *path, struct comm_group *group) {
  int rank = comm_rank(group);
  struct text t = {0};
  append_rank_events(&t, rank);
  size_t total = 0;
  char *all = comm_gather_bytes(group, t.data, t.len, 0, &total);
  free(t.data);
  if (rank != 0) return;
  /* Rank 0's text comes first and always holds its metadata: drop its leading comma. */
  FSDP_CHECK(total > 0 && all[0] == ',');
  static const char head[] = "{\"traceEvents\":[", tail[] = "\n],\"displayTimeUnit\":\"ms\"}\n";
  const char *pieces[] = {head, all + 1, tail};
  size_t lengths[] = {sizeof head - 1, total - 1, sizeof tail - 1};
  output_write("--trace", path, pieces, lengths, 3);
  free(all);
}

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/trace.h"

/* One rank's events as JSON text, each event as ",\n{...}": rank 0 joins the ranks'
 * texts by plain concatenation, so it never parses (or holds twice) the whole trace. */
struct text {
  char *data;
  size_t len, cap;
};

static void text_append(struct text *t, const char *s) {
  size_t n = strlen(s);
  if (t->len + n > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 1 << 16;
    while (cap < t->len + n) cap *= 2;
    t->data = realloc(t->data, cap);
    if (!t->data) fsdp_fatal("--trace: out of memory for %zu bytes of trace text", cap);
    t->cap = cap;
  }
  memcpy(t->data + t->len, s, n);
  t->len += n;
}

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

/* The file is written under this name (malloc'd), then renamed over the real one. */
static char *temp_path(const char *path) {
  size_t size = strlen(path) + sizeof ".tmp";
  char *tmp = fsdp_xmalloc(size);
  snprintf(tmp, size, "%s.tmp", path);
  return tmp;
}

void trace_file_check_writable(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) fsdp_fatal("--trace: '%s' is a directory", path);
  char *tmp = temp_path(path);
  FILE *f = fopen(tmp, "w");
  if (!f) fsdp_fatal("--trace: cannot open '%s' for writing: %s", tmp, strerror(errno));
  fclose(f);
  remove(tmp);
  free(tmp);
}

/* Everything in one expression so that errno still holds the first failure's reason. */
static int write_all(FILE *f, const char *events, size_t n) {
  static const char head[] = "{\"traceEvents\":[", tail[] = "\n],\"displayTimeUnit\":\"ms\"}\n";
  return fwrite(head, 1, sizeof head - 1, f) == sizeof head - 1 && fwrite(events, 1, n, f) == n &&
         fwrite(tail, 1, sizeof tail - 1, f) == sizeof tail - 1 && fflush(f) == 0;
}

static void write_joined(const char *path, const char *events, size_t n) {
  char *tmp = temp_path(path);
  FILE *f = fopen(tmp, "w");
  if (!f) fsdp_fatal("--trace: cannot open '%s' for writing: %s", tmp, strerror(errno));
  int ok = write_all(f, events, n);
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    saved = errno;
  }
  if (!ok) {
    remove(tmp);
    fsdp_fatal("--trace: cannot write '%s': %s", tmp, strerror(saved));
  }
  if (rename(tmp, path) != 0) {
    saved = errno;
    remove(tmp);
    fsdp_fatal("--trace: cannot rename '%s' to '%s': %s", tmp, path, strerror(saved));
  }
  free(tmp);
}

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
  write_joined(path, all + 1, total - 1);
  free(all);
}

/* `fsdp train --memory-snapshot`: every rank's recorded allocations and frees
 * (include/fsdp/memory.h) in one JSON file on rank 0, in the format that
 * src/memviz/snapshot.c reads for `fsdp memviz`. */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_outputs.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/output_file.h"

static const char *const FLAG = "--memory-snapshot";

static void append_json(struct text *t, cJSON *item) {
  char *s = cJSON_PrintUnformatted(item);
  if (!s) fsdp_fatal("%s: out of memory printing the snapshot", FLAG);
  text_append(t, s);
  cJSON_free(s);
  cJSON_Delete(item);
}

/* ",\n{rank object}": rank 0 drops the first comma after joining the ranks' texts. */
static void append_rank(struct text *t, int rank) {
  size_t start[MEM_NUM_CATEGORIES], n;
  const struct mem_event *events = mem_snapshot_events(&n, start);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddNumberToObject(r, "rank", rank);
  cJSON *at_start = cJSON_AddObjectToObject(r, "start");
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++) cJSON_AddNumberToObject(at_start, mem_category_name(c), (double)start[c]);
  cJSON *list = cJSON_AddArrayToObject(r, "events");
  for (size_t i = 0; i < n; i++) {
    cJSON *e = cJSON_CreateObject();
    /* Nanoseconds: finer than any gap between events, and within what cJSON prints exactly. */
    cJSON_AddNumberToObject(e, "time_us", round(events[i].time_us * 1e3) / 1e3);
    cJSON_AddNumberToObject(e, "bytes", (double)events[i].bytes);
    cJSON_AddStringToObject(e, "category", mem_category_name(events[i].category));
    cJSON_AddStringToObject(e, "unit", events[i].unit);
    cJSON_AddStringToObject(e, "op", events[i].op);
    cJSON_AddNumberToObject(e, "step", events[i].step);
    cJSON_AddItemToArray(list, e);
  }
  text_append(t, ",\n");
  append_json(t, r);
}

static char *header(int world_size, int first_step, int last_step) {
  cJSON *h = cJSON_CreateObject();
  cJSON_AddStringToObject(h, "format", "fsdp-memory-snapshot");
  cJSON_AddNumberToObject(h, "version", 1);
  cJSON_AddNumberToObject(h, "world_size", world_size);
  cJSON_AddItemToObject(h, "steps", cJSON_CreateIntArray((const int[]){first_step, last_step}, 2));
  cJSON *categories = cJSON_AddArrayToObject(h, "categories");
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++) cJSON_AddItemToArray(categories, cJSON_CreateString(mem_category_name(c)));
  char *s = cJSON_PrintUnformatted(h);
  cJSON_Delete(h);
  if (!s) fsdp_fatal("%s: out of memory printing the snapshot", FLAG);
  return s;
}

void memory_snapshot_check_writable(const char *path) { output_check_writable(FLAG, path); }

void memory_snapshot_write(const char *path, struct comm_group *group, int first_step, int last_step) {
  int rank = comm_rank(group);
  struct text t = {0};
  append_rank(&t, rank);
  size_t total = 0;
  char *all = comm_gather_bytes(group, t.data, t.len, 0, &total);
  text_free(&t);
  if (rank != 0) return;
  FSDP_CHECK(total > 1 && all[0] == ',');
  /* The header object, reopened to add the ranks after its last field. */
  char *head = header(comm_size(group), first_step, last_step);
  size_t head_len = strlen(head) - 1;
  static const char ranks_open[] = ",\"ranks\":[", close[] = "\n]}\n";
  const char *pieces[] = {head, ranks_open, all + 1, close};
  size_t lengths[] = {head_len, sizeof ranks_open - 1, total - 1, sizeof close - 1};
  output_write(FLAG, path, pieces, lengths, 4);
  cJSON_free(head);
  free(all);
}

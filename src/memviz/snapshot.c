#include "fsdp/memviz.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "render.h"

static const char *const FORMAT_NAME = "fsdp-memory-snapshot";
static const int FORMAT_VERSION = 1;
/* Integers beyond 2^53 do not survive JSON's doubles; byte counts never get there. */
static const double MAX_EXACT_INTEGER = 9007199254740992.0;

/* Where in the file a check is: every message starts with the path and this place,
 * e.g. "rank 1: events[7]: ". */
struct loader {
  const char *path;
  int rank_index; /* in "ranks"; -1 at the top level */
  int rank;       /* the rank's "rank"; -1 until it is read */
  long event;     /* in the rank's "events"; -1 outside them */
  int in_start;   /* in the rank's "start" */
};

__attribute__((format(printf, 2, 3))) _Noreturn static void fail(const struct loader *l, const char *fmt, ...) {
  char message[1024], rank[32] = "", event[32] = "";
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  if (l->rank >= 0) {
    snprintf(rank, sizeof rank, "rank %d: ", l->rank);
  } else if (l->rank_index >= 0) {
    snprintf(rank, sizeof rank, "\"ranks\"[%d]: ", l->rank_index);
  }
  if (l->event >= 0) snprintf(event, sizeof event, "events[%ld]: ", l->event);
  fsdp_fatal("%s: %s%s%s%s", l->path, rank, l->in_start ? "\"start\": " : "", event, message);
}

/* A short rendering of a JSON value for "got ..." in messages. */
static const char *describe(const cJSON *item, char *buf, size_t size) {
  if (cJSON_IsString(item)) {
    snprintf(buf, size, "the string \"%.40s\"", item->valuestring);
  } else if (cJSON_IsNumber(item)) {
    snprintf(buf, size, "%.15g", item->valuedouble);
  } else if (cJSON_IsBool(item)) {
    snprintf(buf, size, "%s", cJSON_IsTrue(item) ? "true" : "false");
  } else if (cJSON_IsNull(item)) {
    snprintf(buf, size, "null");
  } else {
    snprintf(buf, size, "%s", cJSON_IsArray(item) ? "an array" : "an object");
  }
  return buf;
}

static const cJSON *field(const struct loader *l, const cJSON *object, const char *name) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
  if (!item) fail(l, "missing \"%s\"", name);
  return item;
}

static const char *string_field(const struct loader *l, const cJSON *object, const char *name) {
  const cJSON *item = field(l, object, name);
  char got[64];
  if (!cJSON_IsString(item)) fail(l, "\"%s\" must be a string, got %s", name, describe(item, got, sizeof got));
  return item->valuestring;
}

static const cJSON *array_field(const struct loader *l, const cJSON *object, const char *name) {
  const cJSON *item = field(l, object, name);
  char got[64];
  if (!cJSON_IsArray(item)) fail(l, "\"%s\" must be an array, got %s", name, describe(item, got, sizeof got));
  return item;
}

static const cJSON *object_field(const struct loader *l, const cJSON *object, const char *name) {
  const cJSON *item = field(l, object, name);
  char got[64];
  if (!cJSON_IsObject(item)) fail(l, "\"%s\" must be an object, got %s", name, describe(item, got, sizeof got));
  return item;
}

static double number_field(const struct loader *l, const cJSON *object, const char *name) {
  const cJSON *item = field(l, object, name);
  char got[64];
  if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
    fail(l, "\"%s\" must be a finite number, got %s", name, describe(item, got, sizeof got));
  return item->valuedouble;
}

/* `what` names the value in messages: a field's name in quotes, or an array element. */
static int64_t integer_value(const struct loader *l, const cJSON *item, const char *what) {
  char got[64];
  if (!cJSON_IsNumber(item) || item->valuedouble != floor(item->valuedouble))
    fail(l, "%s must be an integer, got %s", what, describe(item, got, sizeof got));
  if (!(fabs(item->valuedouble) <= MAX_EXACT_INTEGER))
    fail(l, "%s is %s, beyond 2^53 (a double's exact integers)", what, describe(item, got, sizeof got));
  return (int64_t)item->valuedouble;
}

static int64_t integer_field(const struct loader *l, const cJSON *object, const char *name) {
  char what[64];
  snprintf(what, sizeof what, "\"%s\"", name);
  return integer_value(l, field(l, object, name), what);
}

/* ---- the file ---- */

/* Snapshots of long runs are large, but a gigabyte of JSON is no snapshot fsdp wrote. */
static const size_t SNAPSHOT_MAX_BYTES = (size_t)1 << 30;

static char *read_file(const char *path, size_t *length) {
  char *data = input_file_read_all("memory snapshot", path, SNAPSHOT_MAX_BYTES, length);
  if (*length == 0) fsdp_fatal("%s: is empty, not a memory snapshot", path);
  return data;
}

static void line_and_column(const char *text, const char *at, int *line, int *column) {
  *line = 1;
  *column = 1;
  for (const char *p = text; p < at; p++) {
    if (*p == '\n') {
      (*line)++;
      *column = 1;
    } else {
      (*column)++;
    }
  }
}

cJSON *memviz_parse_json(const char *path, const char *text, size_t length) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, length, &end, 0);
  int line, column;
  if (!root) {
    if (!end || end >= text + length) fsdp_fatal("%s: not valid JSON: the text ends in the middle of a value", path);
    line_and_column(text, end, &line, &column);
    /* cJSON stops at an array or object CJSON_NESTING_LIMIT deep as at a syntax error. */
    const char *what = (*end == '[' || *end == '{') && end - text >= CJSON_NESTING_LIMIT
                           ? "arrays and objects nested deeper than cJSON's limit"
                           : "syntax error";
    fsdp_fatal("%s: not valid JSON: %s at line %d, column %d (offset %zu)", path, what, line, column,
               (size_t)(end - text));
  }
  while (end < text + length && strchr(" \t\r\n", *end)) end++;
  if (end < text + length) {
    line_and_column(text, end, &line, &column);
    cJSON_Delete(root);
    fsdp_fatal("%s: not valid JSON: unexpected text after the value at line %d, column %d", path, line, column);
  }
  return root;
}

/* ---- the header ---- */

static void load_header(struct memory_snapshot *s, const struct loader *l, const cJSON *root) {
  char got[64];
  const char *format = string_field(l, root, "format");
  if (strcmp(format, FORMAT_NAME) != 0)
    fail(l, "\"format\" is \"%.40s\", not \"%s\": this is not a memory snapshot", format, FORMAT_NAME);
  int64_t version = integer_field(l, root, "version");
  if (version != FORMAT_VERSION)
    fail(l, "unsupported \"version\" %lld (this fsdp reads version %d)", (long long)version, FORMAT_VERSION);
  int64_t world_size = integer_field(l, root, "world_size");
  if (world_size < 1 || world_size > 1 << 20)
    fail(l, "\"world_size\" must be between 1 and %d, got %lld", 1 << 20, (long long)world_size);
  s->world_size = (int)world_size;

  /* The trainer writes [first, last] (the same twice for one step); a list of every
   * step recorded reads the same way. */
  const cJSON *steps = array_field(l, root, "steps");
  if (!steps->child) fail(l, "\"steps\" is empty");
  int i = 0;
  for (const cJSON *step = steps->child; step; step = step->next, i++) {
    char what[32];
    snprintf(what, sizeof what, "\"steps\"[%d]", i);
    int64_t v = integer_value(l, step, what);
    if (v < 0 || v > INT_MAX) fail(l, "%s must be a step number (0 or more), got %lld", what, (long long)v);
    if (i > 0 && v < s->last_step)
      fail(l, "\"steps\" must not decrease, but %s is %lld after %d", what, (long long)v, s->last_step);
    if (i == 0) s->first_step = (int)v;
    s->last_step = (int)v;
  }

  const cJSON *categories = array_field(l, root, "categories");
  s->n_categories = cJSON_GetArraySize(categories);
  if (s->n_categories == 0) fail(l, "\"categories\" is empty");
  s->categories = fsdp_xmalloc(sizeof *s->categories * (size_t)s->n_categories);
  i = 0;
  for (const cJSON *c = categories->child; c; c = c->next, i++) {
    if (!cJSON_IsString(c) || c->valuestring[0] == '\0')
      fail(l, "\"categories\"[%d] must be a non-empty string, got %s", i, describe(c, got, sizeof got));
    for (int j = 0; j < i; j++)
      if (strcmp(s->categories[j], c->valuestring) == 0)
        fail(l, "\"categories\" lists \"%.40s\" twice", c->valuestring);
    s->categories[i] = c->valuestring;
  }
}

static int find_category(const struct memory_snapshot *s, const char *name) {
  for (int c = 0; c < s->n_categories; c++)
    if (strcmp(s->categories[c], name) == 0) return c;
  return -1;
}

static _Noreturn void fail_unknown_category(const struct loader *l, const struct memory_snapshot *s,
                                            const char *name) {
  char known[512] = "";
  size_t n = 0;
  for (int c = 0; c < s->n_categories && n < sizeof known; c++)
    n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", c ? ", " : "", s->categories[c]);
  fail(l, "unknown category \"%.40s\" (\"categories\" lists: %s)", name, known);
}

/* ---- ranks ---- */

static void load_start(struct snapshot_rank *r, const struct memory_snapshot *s, const struct loader *l,
                       const cJSON *rank) {
  const cJSON *start = object_field(l, rank, "start");
  r->start = fsdp_xmalloc(sizeof *r->start * (size_t)s->n_categories);
  for (int c = 0; c < s->n_categories; c++) r->start[c] = -1;
  for (const cJSON *entry = start->child; entry; entry = entry->next) {
    char what[96];
    snprintf(what, sizeof what, "\"start\".\"%.40s\"", entry->string);
    int c = find_category(s, entry->string);
    if (c < 0) {
      struct loader in_start = *l;
      in_start.in_start = 1;
      fail_unknown_category(&in_start, s, entry->string);
    }
    if (r->start[c] >= 0) fail(l, "\"start\" lists \"%s\" twice", entry->string);
    int64_t bytes = integer_value(l, entry, what);
    if (bytes < 0) fail(l, "%s must not be negative, got %lld", what, (long long)bytes);
    r->start[c] = bytes;
  }
  for (int c = 0; c < s->n_categories; c++)
    if (r->start[c] < 0) fail(l, "\"start\" has no entry for category \"%s\"", s->categories[c]);
}

/* Checks each event against the one before it and replays the running bytes per category. */
static void load_events(struct snapshot_rank *r, const struct memory_snapshot *s, struct loader *l,
                        const cJSON *rank) {
  const cJSON *events = array_field(l, rank, "events");
  r->n_events = (size_t)cJSON_GetArraySize(events);
  if (r->n_events == 0) fail(l, "\"events\" is empty: nothing was recorded");
  r->events = fsdp_xmalloc(sizeof *r->events * r->n_events);
  int64_t *held = fsdp_xmalloc(sizeof *held * (size_t)s->n_categories);
  memcpy(held, r->start, sizeof *held * (size_t)s->n_categories);
  size_t i = 0;
  for (const cJSON *e = events->child; e; e = e->next, i++) {
    char got[64];
    l->event = (long)i;
    if (!cJSON_IsObject(e)) fail(l, "must be an object, got %s", describe(e, got, sizeof got));
    struct snapshot_event *ev = &r->events[i];
    ev->time_us = number_field(l, e, "time_us");
    if (ev->time_us < 0) fail(l, "\"time_us\" must not be negative, got %g", ev->time_us);
    if (i > 0 && ev->time_us < r->events[i - 1].time_us)
      fail(l, "\"time_us\" %.15g comes before the previous event's %.15g (events must be in time order)",
           ev->time_us, r->events[i - 1].time_us);
    ev->bytes = integer_field(l, e, "bytes");
    const char *category = string_field(l, e, "category");
    ev->category = find_category(s, category);
    if (ev->category < 0) fail_unknown_category(l, s, category);
    ev->unit = string_field(l, e, "unit");
    ev->op = string_field(l, e, "op");
    int64_t step = integer_field(l, e, "step");
    if (step < s->first_step || step > s->last_step)
      fail(l, "\"step\" %lld is outside \"steps\", %d to %d", (long long)step, s->first_step, s->last_step);
    if (i > 0 && step < r->events[i - 1].step)
      fail(l, "\"step\" %lld comes after step %d (steps must not go back in time)", (long long)step,
           r->events[i - 1].step);
    ev->step = (int)step;

    int64_t *bytes = &held[ev->category];
    if (ev->bytes < 0 && -ev->bytes > *bytes)
      fail(l, "frees %lld bytes of \"%s\", which holds only %lld bytes then (its running total would go negative)",
           (long long)-ev->bytes, category, (long long)*bytes);
    *bytes += ev->bytes;
    if (*bytes > (int64_t)MAX_EXACT_INTEGER) fail(l, "\"%s\" grows past 2^53 bytes", category);
  }
  free(held);
  l->event = -1;
}

static void load_ranks(struct memory_snapshot *s, struct loader *l, const cJSON *root) {
  const cJSON *ranks = array_field(l, root, "ranks");
  s->n_ranks = cJSON_GetArraySize(ranks);
  if (s->n_ranks == 0) fail(l, "\"ranks\" is empty: no rank to show");
  s->ranks = fsdp_xcalloc((size_t)s->n_ranks, sizeof *s->ranks);
  int i = 0;
  for (const cJSON *rank = ranks->child; rank; rank = rank->next, i++) {
    char got[64];
    l->rank_index = i;
    l->rank = -1;
    if (!cJSON_IsObject(rank)) fail(l, "must be an object, got %s", describe(rank, got, sizeof got));
    struct snapshot_rank *r = &s->ranks[i];
    int64_t number = integer_field(l, rank, "rank");
    if (number < 0 || number >= s->world_size)
      fail(l, "\"rank\" must be between 0 and %d (\"world_size\" is %d), got %lld", s->world_size - 1,
           s->world_size, (long long)number);
    for (int j = 0; j < i; j++)
      if (s->ranks[j].rank == number) fail(l, "rank %lld appears twice in \"ranks\"", (long long)number);
    r->rank = (int)number;
    l->rank = r->rank;
    load_start(r, s, l, rank);
    load_events(r, s, l, rank);
  }
  l->rank_index = l->rank = -1;
}

void memory_snapshot_load(struct memory_snapshot *s, const char *path) {
  memset(s, 0, sizeof *s);
  s->path = path;
  size_t length;
  char *text = read_file(path, &length);
  cJSON *root = memviz_parse_json(path, text, length);
  free(text);
  struct loader l = {.path = path, .rank_index = -1, .rank = -1, .event = -1};
  char got[64];
  if (!cJSON_IsObject(root)) fail(&l, "the top level must be a JSON object, got %s", describe(root, got, sizeof got));
  s->document = root;
  load_header(s, &l, root);
  load_ranks(s, &l, root);
}

void memory_snapshot_free(struct memory_snapshot *s) {
  for (int i = 0; i < s->n_ranks; i++) {
    free(s->ranks[i].start);
    free(s->ranks[i].events);
  }
  free(s->ranks);
  free(s->categories);
  cJSON_Delete(s->document);
  memset(s, 0, sizeof *s);
}

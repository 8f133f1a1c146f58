/* The memviz library on its own: a snapshot written here is read back, and each
 * rank's view must find the peak the events replay to (the first moment of it, when
 * a later one ties), its breakdown by category and the allocation that reached it;
 * the columns must keep the largest moment in each; and every kind of malformed
 * snapshot must be refused with a message that starts with the file's path (each in
 * a child process, since a refusal ends it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/memviz.h"
#include "temp_files.h"

enum { N_CATEGORIES = 5 };

/* One event in the trainer's layout, its numbers pasted in as written. */
#define EVENT(time, bytes, category, unit, op, step)                                                    \
  "{\"time_us\": " #time ", \"bytes\": " #bytes ", \"category\": \"" category "\", \"unit\": \"" unit \
  "\", \"op\": \"" op "\", \"step\": " #step "}"

/* Two of four ranks, listed out of order. Rank 2 peaks at 3,500 bytes when block 1's
 * gradients are allocated (event 3); event 6 reaches 3,500 again with another
 * breakdown, which must not move the peak. Rank 0 only shrinks below what it held at
 * the start, so its peak is the start. "optimizer" never holds a byte. */
static const char GOOD[] =
    "{\"format\": \"fsdp-memory-snapshot\", \"version\": 1, \"world_size\": 4, \"steps\": [3, 4],\n"
    " \"categories\": [\"params\", \"grads\", \"optimizer\", \"activations\", \"comm\"],\n"
    " \"ranks\": [\n"
    "  {\"rank\": 2,\n"
    "   \"start\": {\"params\": 1000, \"grads\": 0, \"optimizer\": 0, \"activations\": 0, \"comm\": 0},\n"
    "   \"events\": [\n"
    "    " EVENT(1.0, 500, "activations", "block 0", "forward", 3) ",\n"
    "    " EVENT(2.0, 300, "comm", "block 1", "all-gather", 3) ",\n"
    "    " EVENT(3.0, -300, "comm", "block 1", "all-gather", 3) ",\n"
    "    " EVENT(4.0, 2000, "grads", "block 1", "backward", 3) ",\n"
    "    " EVENT(5.0, -2000, "grads", "block 1", "reduce-scatter", 3) ",\n"
    "    " EVENT(6.0, 1000, "activations", "block 0", "forward", 4) ",\n"
    "    " EVENT(7.0, 1000, "grads", "block 0", "backward", 4) ",\n"
    "    " EVENT(8.0, -1500, "activations", "block 0", "backward", 4) "]},\n"
    "  {\"rank\": 0,\n"
    "   \"start\": {\"params\": 1000, \"grads\": 0, \"optimizer\": 0, \"activations\": 600, \"comm\": 0},\n"
    "   \"events\": [\n"
    "    " EVENT(0.5, -600, "activations", "block 1", "backward", 3) ",\n"
    "    " EVENT(1.5, 400, "grads", "root", "backward", 4) "]}]}\n";

static void expect_bytes(const int64_t *got, const int64_t *want, const char *what) {
  for (int c = 0; c < N_CATEGORIES; c++)
    EXPECT(got[c] == want[c], "%s: category %d holds %lld bytes, want %lld", what, c, (long long)got[c],
           (long long)want[c]);
}

static void test_header(const struct memory_snapshot *s, const char *path) {
  static const char *const categories[N_CATEGORIES] = {"params", "grads", "optimizer", "activations", "comm"};
  EXPECT(strcmp(s->path, path) == 0, "path '%s', want '%s'", s->path, path);
  EXPECT(s->world_size == 4, "world_size %d, want 4", s->world_size);
  EXPECT(s->first_step == 3 && s->last_step == 4, "steps %d to %d, want 3 to 4", s->first_step, s->last_step);
  EXPECT(s->n_categories == N_CATEGORIES, "%d categories, want %d", s->n_categories, N_CATEGORIES);
  for (int c = 0; c < s->n_categories && c < N_CATEGORIES; c++)
    EXPECT(strcmp(s->categories[c], categories[c]) == 0, "category %d is '%s', want '%s' (the file's order)", c,
           s->categories[c], categories[c]);
  EXPECT(s->n_ranks == 2, "%d ranks, want 2", s->n_ranks);
}

static void test_peak_from_an_allocation(const struct memory_snapshot *s) {
  const struct snapshot_rank *r = &s->ranks[0];
  EXPECT(r->rank == 2 && r->n_events == 8, "first rank: rank %d with %zu events, want rank 2 with 8", r->rank,
         r->n_events);
  struct rank_view v;
  memviz_view_build(&v, s, r, 2);
  EXPECT(v.peak_total == 3500, "rank 2: peak %lld bytes, want 3500", (long long)v.peak_total);
  EXPECT(v.peak_event == 3, "rank 2: the peak is reached by event %ld, want 3 (the first moment of 3500)",
         v.peak_event);
  EXPECT(v.peak_time_us == 4.0, "rank 2: peak at %g us, want 4", v.peak_time_us);
  expect_bytes(v.peak_bytes, (const int64_t[N_CATEGORIES]){1000, 2000, 0, 500, 0}, "rank 2 at the peak");
  if (v.peak_event == 3) {
    const struct snapshot_event *e = &r->events[v.peak_event];
    EXPECT(e->bytes == 2000 && strcmp(s->categories[e->category], "grads") == 0 && e->step == 3 &&
               strcmp(e->unit, "block 1") == 0 && strcmp(e->op, "backward") == 0,
           "rank 2: the peak's allocation is %lld bytes of %s, step %d, '%s' '%s'", (long long)e->bytes,
           s->categories[e->category], e->step, e->unit, e->op);
  }

  EXPECT(v.n_shown == 4 && !v.shown[2], "rank 2: %d categories shown (optimizer: %d), want 4 without optimizer",
         v.n_shown, v.shown[2]);
  EXPECT(v.n_step_starts == 2, "rank 2: %d step starts, want 2", v.n_step_starts);
  if (v.n_step_starts == 2)
    EXPECT(v.step_starts[0].step == 3 && v.step_starts[0].time_us == 1.0 && v.step_starts[1].step == 4 &&
               v.step_starts[1].time_us == 6.0,
           "rank 2: steps start at (%d, %g) and (%d, %g), want (3, 1) and (4, 6)", v.step_starts[0].step,
           v.step_starts[0].time_us, v.step_starts[1].step, v.step_starts[1].time_us);

  /* Two columns over 0..8 us: events at 1-3 us fall into the first, whose largest
   * moment is the all-gather's buffer at 2 us; the rest into the second, which starts
   * from what the first left and keeps the peak, not the tie at 7 us. */
  EXPECT(v.end_us == 8.0 && v.n_columns == 2, "rank 2: axis to %g us in %d columns, want 8 us in 2", v.end_us,
         v.n_columns);
  expect_bytes(v.column_bytes, (const int64_t[N_CATEGORIES]){1000, 0, 0, 500, 300}, "rank 2, column 0");
  expect_bytes(v.column_bytes + N_CATEGORIES, (const int64_t[N_CATEGORIES]){1000, 2000, 0, 500, 0},
               "rank 2, column 1");
  memviz_view_free(&v);
}

static void test_peak_at_the_start(const struct memory_snapshot *s) {
  const struct snapshot_rank *r = &s->ranks[1];
  EXPECT(r->rank == 0 && r->n_events == 2, "second rank: rank %d with %zu events, want rank 0 with 2", r->rank,
         r->n_events);
  struct rank_view v;
  memviz_view_build(&v, s, r, 16);
  EXPECT(v.peak_total == 1600 && v.peak_event == -1 && v.peak_time_us == 0.0,
         "rank 0: peak %lld bytes by event %ld at %g us, want 1600 at the start (-1, 0 us)", (long long)v.peak_total,
         v.peak_event, v.peak_time_us);
  expect_bytes(v.peak_bytes, (const int64_t[N_CATEGORIES]){1000, 0, 0, 600, 0}, "rank 0 at the peak");
  memviz_view_free(&v);
}

static void test_good_snapshot(void) {
  const char *path = temp_file_write("good.json", GOOD, sizeof GOOD - 1);
  struct memory_snapshot s;
  memory_snapshot_load(&s, path);
  test_header(&s, path);
  if (s.n_ranks == 2) {
    test_peak_from_an_allocation(&s);
    test_peak_at_the_start(&s);
  }
  memory_snapshot_free(&s);
}

/* Loads path in a child with stderr captured: it must exit 1 with one message that
 * starts with "fsdp: error: PATH: " and goes on with `want`. */
static void load_snapshot(const void *path) {
  struct memory_snapshot s;
  memory_snapshot_load(&s, path);
}

/* The snapshot's contents are refused as "PATH: WHY"; a file that cannot be read at all
 * as every input file is ("memory snapshot 'PATH': WHY", fsdp/input_file.h). */
static void expect_refused_as(const char *what, const char *path, const char *format, const char *want) {
  char message[4096];
  int status = run_in_child(load_snapshot, path, message, sizeof message);
  char expected[1024];
  snprintf(expected, sizeof expected, format, path, want);
  int refused = WIFEXITED(status) && WEXITSTATUS(status) == 1;
  int named = strncmp(message, expected, strlen(expected)) == 0;
  EXPECT(refused, "%s: not refused (stderr: %s)", what, message);
  EXPECT(named, "%s: message '%s', want it to start with '%s'", what, message, expected);
  if (refused && named) printf("ok   %s: %s", what, message);
}

static void expect_refused(const char *what, const char *path, const char *want) {
  expect_refused_as(what, path, "fsdp: error: %s: %s", want);
}

/* GOOD with the first `find` replaced by `replace`, written to the temporary file name. */
static const char *write_edited(const char *name, const char *find, const char *replace) {
  const char *at = strstr(GOOD, find);
  if (!at) {
    fprintf(stderr, "memviz_lib_test: %s: '%s' is not in the good snapshot\n", name, find);
    exit(2);
  }
  size_t before = (size_t)(at - GOOD), size = sizeof GOOD + strlen(replace);
  char *text = malloc(size);
  snprintf(text, size, "%.*s%s%s", (int)before, GOOD, replace, at + strlen(find));
  const char *path = temp_file_write(name, text, strlen(text));
  free(text);
  return path;
}

struct edit_case {
  const char *name, *find, *replace, *want;
};

static const struct edit_case EDITS[] = {
    {"syntax.json", "\"version\": 1,", "\"version\": 1", "not valid JSON: syntax error at line 1, column"},
    {"format.json", "fsdp-memory-snapshot", "chrome-trace",
     "\"format\" is \"chrome-trace\", not \"fsdp-memory-snapshot\""},
    {"version.json", "\"version\": 1", "\"version\": 2", "unsupported \"version\" 2 (this fsdp reads version 1)"},
    {"no_world_size.json", "\"world_size\": 4, ", "", "missing \"world_size\""},
    {"no_op.json", ", \"op\": \"all-gather\"", "", "rank 2: events[1]: missing \"op\""},
    {"negative_start.json", "\"comm\": 0}", "\"comm\": -8}", "rank 2: \"start\".\"comm\" must not be negative, got -8"},
    {"negative_total.json", "\"bytes\": -300", "\"bytes\": -301",
     "rank 2: events[2]: frees 301 bytes of \"comm\", which holds only 300 bytes then"},
    {"fractional_bytes.json", "\"bytes\": 500,", "\"bytes\": 500.5,",
     "rank 2: events[0]: \"bytes\" must be an integer, got 500.5"},
    {"string_bytes.json", "\"bytes\": 500,", "\"bytes\": \"500\",",
     "rank 2: events[0]: \"bytes\" must be an integer, got the string \"500\""},
    {"negative_time.json", "\"time_us\": 1.0,", "\"time_us\": -1.0,",
     "rank 2: events[0]: \"time_us\" must not be negative, got -1"},
    {"backwards.json", "\"time_us\": 3.0", "\"time_us\": 1.5",
     "rank 2: events[2]: \"time_us\" 1.5 comes before the previous event's 2"},
    {"category.json", "\"category\": \"comm\"", "\"category\": \"kv_cache\"",
     "rank 2: events[1]: unknown category \"kv_cache\""},
    {"step.json", "\"step\": 4", "\"step\": 5", "rank 2: events[5]: \"step\" 5 is outside \"steps\", 3 to 4"},
    {"rank.json", "\"rank\": 2", "\"rank\": 4", "\"ranks\"[0]: \"rank\" must be between 0 and 3 (\"world_size\" is 4), got 4"},
    {"twice.json", "\"rank\": 0", "\"rank\": 2", "\"ranks\"[1]: rank 2 appears twice in \"ranks\""},
};

static void test_refused(void) {
  for (size_t i = 0; i < sizeof EDITS / sizeof EDITS[0]; i++) {
    const struct edit_case *c = &EDITS[i];
    expect_refused(c->name, write_edited(c->name, c->find, c->replace), c->want);
  }
  expect_refused("truncated", temp_file_write("truncated.json", GOOD, sizeof GOOD / 2),
                 "not valid JSON: syntax error at line ");
  expect_refused("empty", temp_file_write("empty.json", "", 0), "is empty, not a memory snapshot");
  expect_refused("array", temp_file_write("array.json", "[1]\n", 4),
                 "the top level must be a JSON object, got an array");
  expect_refused_as("missing", temp_file_path("missing.json"), "fsdp: error: memory snapshot '%s': %s",
                    "No such file or directory");
}

int main(void) {
  temp_files_init("memviz_lib_test");
  test_good_snapshot();
  test_refused();
  temp_files_remove();
  return check_summary("memviz_lib_test");
}

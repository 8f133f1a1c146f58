/* trace_file_write under mpirun: each rank records spans and counters whose names,
 * times and values are functions of its rank, and rank 0 reads the written file back
 * and finds every rank's events with the right pid, tid, times and values, the
 * metadata that names processes and threads, and no temporary file beside it.
 * Usage: trace_file_test [--no-check] PATH (--no-check skips the early check of
 * PATH, so that a bad PATH reaches trace_file_write itself). */
#include <cJSON.h>
#include <dirent.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/trace.h"
#include "run_outputs.h"

static const char *const track_names[] = {"compute", "all-gather", "reduce-scatter"};
enum { N_TRACKS = 3, N_NAMED_SPANS = 5 };

/* Enough filler spans that some ranks' texts outgrow the writer's first buffer. */
static int n_filler(int rank) { return 500 * (rank + 1); }
static double base_us(int rank) { return 1000.0 * rank; }

struct span {
  char name[TRACE_NAME_MAX];
  int track;
  double ts, dur;
};

/* The named spans of a rank: block `rank`'s forward overlapped by the next block's
 * all-gather, its backward by the next block's reduce-scatter (as tools/trace_check.py
 * --expect-overlap wants), and a name that JSON must escape. */
static void named_spans(int rank, struct span *s) {
  double b = base_us(rank);
  struct span all[N_NAMED_SPANS] = {
      {"", 0, b + 10, 12.3456789}, {"", 1, b + 12, 6}, {"", 0, b + 40, 10}, {"", 2, b + 45, 10.5}, {"", 0, b + 60, 1}};
  snprintf(all[0].name, TRACE_NAME_MAX, "forward block %d", rank);
  snprintf(all[1].name, TRACE_NAME_MAX, "all-gather block %d", rank + 1);
  snprintf(all[2].name, TRACE_NAME_MAX, "backward block %d", rank);
  snprintf(all[3].name, TRACE_NAME_MAX, "reduce-scatter block %d", rank + 1);
  snprintf(all[4].name, TRACE_NAME_MAX, "say \"%d\" \\ \t", rank);
  memcpy(s, all, sizeof all);
}

/* Byte counts of 12 digits, and a fraction, come back exactly. */
static double memory_params(int rank) { return 123456789012.0 + rank; }
static double memory_grads(int rank) { return rank + 0.5; }

static const char *const memory_series[] = {"params", "grads"};
static const char *const unsharded_series[] = {"units"};

static void record(int rank) {
  trace_clock_start();
  trace_enable(1);
  int tracks[N_TRACKS];
  for (int k = 0; k < N_TRACKS; k++) tracks[k] = trace_track(track_names[k]);
  struct span s[N_NAMED_SPANS];
  named_spans(rank, s);
  for (int i = 0; i < N_NAMED_SPANS; i++) trace_span(tracks[s[i].track], s[i].name, s[i].ts, s[i].ts + s[i].dur);
  for (int i = 0; i < n_filler(rank); i++)
    trace_span(tracks[0], "optimizer", base_us(rank) + 100 + i, base_us(rank) + 100.5 + i);
  double memory[] = {memory_params(rank), memory_grads(rank)};
  trace_counter("memory", 2, memory_series, memory);
  double units = rank + 1;
  trace_counter("unsharded units", 1, unsharded_series, &units);
  trace_enable(0);
}

static const char *string_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double number_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The one event of this pid, phase and name (and tid, unless tid < 0); NULL, with a
 * failure, unless there is exactly one. */
static const cJSON *find(const cJSON *events, int pid, int tid, const char *ph, const char *name) {
  const cJSON *found = NULL, *e;
  int n = 0;
  cJSON_ArrayForEach(e, events) {
    const char *e_ph = string_of(e, "ph"), *e_name = string_of(e, "name");
    if (number_of(e, "pid") != pid || (tid >= 0 && number_of(e, "tid") != tid)) continue;
    if (!e_ph || strcmp(e_ph, ph) != 0 || !e_name || strcmp(e_name, name) != 0) continue;
    found = e;
    n++;
  }
  EXPECT(n == 1, "rank %d tid %d: %d events '%s' of phase %s, expected 1", pid, tid, n, name, ph);
  return n == 1 ? found : NULL;
}

static void expect_arg(const cJSON *e, const char *key, double want, const char *what, int rank) {
  double got = e ? number_of(cJSON_GetObjectItemCaseSensitive(e, "args"), key) : NAN;
  EXPECT(got == want, "rank %d: %s args.%s is %.17g, expected %.17g", rank, what, key, got, want);
}

static void expect_arg_string(const cJSON *e, const char *key, const char *want, int rank) {
  const char *got = e ? string_of(cJSON_GetObjectItemCaseSensitive(e, "args"), key) : NULL;
  EXPECT(got && strcmp(got, want) == 0, "rank %d: args.%s is '%s', expected '%s'", rank, key, got ? got : "(none)",
         want);
}

static void check_metadata(const cJSON *events, int rank) {
  char process[32];
  snprintf(process, sizeof process, "rank %d", rank);
  expect_arg_string(find(events, rank, 0, "M", "process_name"), "name", process, rank);
  expect_arg(find(events, rank, 0, "M", "process_sort_index"), "sort_index", rank, "process_sort_index", rank);
  for (int k = 0; k < N_TRACKS; k++) {
    expect_arg_string(find(events, rank, k + 1, "M", "thread_name"), "name", track_names[k], rank);
    expect_arg(find(events, rank, k + 1, "M", "thread_sort_index"), "sort_index", k, "thread_sort_index", rank);
  }
}

static void check_spans(const cJSON *events, int rank) {
  struct span s[N_NAMED_SPANS];
  named_spans(rank, s);
  for (int i = 0; i < N_NAMED_SPANS; i++) {
    const cJSON *e = find(events, rank, s[i].track + 1, "X", s[i].name);
    if (!e) continue;
    const char *cat = string_of(e, "cat");
    EXPECT(cat && strcmp(cat, track_names[s[i].track]) == 0, "rank %d: '%s' has cat '%s'", rank, s[i].name,
           cat ? cat : "(none)");
    /* Times are written to the nanosecond, of the recorder's end - begin. */
    double dur = round(((s[i].ts + s[i].dur) - s[i].ts) * 1e3) / 1e3;
    EXPECT(number_of(e, "ts") == s[i].ts && number_of(e, "dur") == dur,
           "rank %d: '%s' at ts %.17g dur %.17g, expected %.17g %.17g", rank, s[i].name, number_of(e, "ts"),
           number_of(e, "dur"), s[i].ts, dur);
  }
  /* Filler spans come in the order recorded, each at its own time. */
  int n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, events) {
    const char *name = string_of(e, "name");
    if (number_of(e, "pid") != rank || !name || strcmp(name, "optimizer") != 0) continue;
    EXPECT(number_of(e, "tid") == 1 && number_of(e, "ts") == base_us(rank) + 100 + n && number_of(e, "dur") == 0.5,
           "rank %d: optimizer span %d at tid %g ts %g dur %g", rank, n, number_of(e, "tid"), number_of(e, "ts"),
           number_of(e, "dur"));
    n++;
  }
  EXPECT(n == n_filler(rank), "rank %d: %d optimizer spans, expected %d", rank, n, n_filler(rank));
}

static void check_counters(const cJSON *events, int rank) {
  const cJSON *memory = find(events, rank, -1, "C", "memory");
  expect_arg(memory, "params", memory_params(rank), "memory", rank);
  expect_arg(memory, "grads", memory_grads(rank), "memory", rank);
  const cJSON *units = find(events, rank, -1, "C", "unsharded units");
  expect_arg(units, "units", rank + 1, "unsharded units", rank);
  double ts = units ? number_of(units, "ts") : NAN;
  EXPECT(ts >= 0, "rank %d: counter at ts %g", rank, ts);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fsdp_fatal("trace_file_test: cannot open '%s'", path);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  if (size < 0) fsdp_fatal("trace_file_test: cannot read '%s'", path);
  char *text = fsdp_xmalloc((size_t)size + 1);
  if (fread(text, 1, (size_t)size, f) != (size_t)size) fsdp_fatal("trace_file_test: cannot read '%s'", path);
  text[size] = '\0';
  fclose(f);
  return text;
}

/* Nothing named PATH.something is left in PATH's directory. */
static void check_no_temporary(const char *path) {
  char *dir_copy = strdup(path), *base_copy = strdup(path);
  const char *dir = dirname(dir_copy), *base = basename(base_copy);
  size_t n = strlen(base);
  DIR *d = opendir(dir);
  if (!d) fsdp_fatal("trace_file_test: cannot list '%s'", dir);
  for (struct dirent *e; (e = readdir(d));)
    EXPECT(!(strncmp(e->d_name, base, n) == 0 && e->d_name[n] == '.'), "'%s' left in '%s'", e->d_name, dir);
  closedir(d);
  free(dir_copy);
  free(base_copy);
}

static void check_file(const char *path, int world_size) {
  char *text = read_file(path);
  cJSON *root = cJSON_Parse(text);
  if (!root) fsdp_fatal("trace_file_test: '%s' is not JSON (near: %.40s)", path, cJSON_GetErrorPtr());
  const char *unit = string_of(root, "displayTimeUnit");
  EXPECT(unit && strcmp(unit, "ms") == 0, "displayTimeUnit is '%s'", unit ? unit : "(none)");
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
  if (!cJSON_IsArray(events)) fsdp_fatal("trace_file_test: '%s' has no traceEvents array", path);
  int expected = 0;
  for (int r = 0; r < world_size; r++) {
    check_metadata(events, r);
    check_spans(events, r);
    check_counters(events, r);
    expected += 2 + 2 * N_TRACKS + N_NAMED_SPANS + n_filler(r) + 2;
  }
  EXPECT(cJSON_GetArraySize(events) == expected, "%d events, expected %d", cJSON_GetArraySize(events), expected);
  check_no_temporary(path);
  cJSON_Delete(root);
  free(text);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  int early_check = !(argc == 3 && strcmp(argv[1], "--no-check") == 0);
  if (argc != 2 + !early_check) fsdp_fatal("usage: trace_file_test [--no-check] PATH");
  const char *path = argv[argc - 1];
  struct comm_group *world = comm_world();
  int rank = comm_rank(world), world_size = comm_size(world);
  if (rank == 0 && early_check) {
    trace_file_check_writable(path);
    check_no_temporary(path);
    /* A stale file of the same name is replaced whole. */
    FILE *f = fopen(path, "w");
    if (!f || fputs("stale", f) < 0 || fclose(f) != 0) fsdp_fatal("trace_file_test: cannot write '%s'", path);
  }
  record(rank);
  trace_file_write(path, world);
  if (rank == 0) check_file(path, world_size);
  trace_clear();
  if (rank == 0 && check_failures == 0)
    fsdp_log_info("trace_file_test: W=%d: every rank's spans, counters and metadata read back from '%s'",
                  world_size, path);
  comm_finalize();
  return check_failures ? 1 : 0;
}

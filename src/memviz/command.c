/* `fsdp memviz SNAPSHOT -o OUT`: a memory snapshot of `fsdp train` as a chart per
 * rank of the bytes held by category over time, with the peak taken apart. Runs
 * without MPI: it only reads a file and writes one. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/flags.h"
#include "fsdp/input_file.h"
#include "fsdp/memviz.h"
#include "fsdp/output_file.h"
#include "render.h"

enum output_kind { OUTPUT_HTML, OUTPUT_SVG };

struct memviz_options {
  const char *snapshot;
  const char *output;
  enum output_kind kind;
};

#define OPTIONS struct memviz_options
static const struct flag FLAGS[] = {
    {NULL, "--output", 0, "OUT", FLAG_NONE, FLAG_TEXT_OF(OPTIONS, output), .alias = "-o",
     .help = "OUT.html: a page for a browser (works offline); OUT.svg: the charts alone, as one SVG image"},
};
static const struct flag_parser PARSER = {
    .command = "memviz", .flags = FLAGS, .n_flags = sizeof FLAGS / sizeof FLAGS[0], .arguments = "SNAPSHOT",
    .max_arguments = 1, .usage_status = MEMVIZ_USAGE_STATUS, .usage = "memviz SNAPSHOT -o OUT",
    .intro = "Draws a memory snapshot (fsdp train --memory-snapshot FILE): for each rank, the bytes\n"
             "held by category over time, the peak of the total, and what it was made of.\n"
             "SNAPSHOT is the snapshot JSON file.\n",
    .outro = "Exits 2 on a usage error, 1 when the snapshot cannot be read or is invalid.\n"};

__attribute__((format(printf, 2, 3))) int memviz_usage_error(const char *command, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("fsdp: error: ", stderr);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, " (see fsdp %s --help)\n", command);
  va_end(args);
  return MEMVIZ_USAGE_STATUS;
}

int memviz_read_command_line(const struct flag_parser *p, void *options, int argc, char **argv, const char **input) {
  struct flag_parse given;
  flags_parse(p, options, argc, argv, &given);
  int help = given.help;
  if (given.n_arguments) *input = given.arguments[0];
  flag_parse_free(&given);
  if (help) flags_print_help(p);
  return help;
}

int memviz_ends_with(const char *text, const char *suffix) {
  size_t n = strlen(text), m = strlen(suffix);
  return n >= m && strcmp(text + n - m, suffix) == 0;
}

int memviz_output_not_input(const char *command, const char *input, const char *output) {
  if (input_file_same(input, output))
    return memviz_usage_error(command, "-o: '%s' is the file to draw, '%s': give another name", output, input);
  return -1;
}

/* Returns -1 when the options are complete, 0 when --help was printed, or the exit
 * status of a usage error. argv[0] is "memviz". */
static int parse_options(struct memviz_options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  if (memviz_read_command_line(&PARSER, o, argc, argv, &o->snapshot)) return 0;
  if (!o->snapshot) return memviz_usage_error("memviz", "missing SNAPSHOT, the memory snapshot file to draw");
  if (!o->output) return memviz_usage_error("memviz", "missing -o OUT, the .html or .svg file to write");
  if (memviz_ends_with(o->output, ".html")) {
    o->kind = OUTPUT_HTML;
  } else if (memviz_ends_with(o->output, ".svg")) {
    o->kind = OUTPUT_SVG;
  } else {
    return memviz_usage_error("memviz", "-o: '%s' must end in .html (a page) or .svg (an image)", o->output);
  }
  return memviz_output_not_input("memviz", o->snapshot, o->output);
}

/* The document is built in memory, then written to a temporary name and renamed
 * (fsdp/output_file.h): a reader never sees half a file. */
void memviz_write_document(const char *path, void (*write)(FILE *f, const void *what), const void *what) {
  char *text = NULL;
  size_t length = 0;
  FILE *f = open_memstream(&text, &length);
  if (!f) fsdp_fatal("-o: cannot build '%s' in memory: %s", path, strerror(errno));
  write(f, what);
  int failed = ferror(f);
  if (fclose(f) != 0 || failed) fsdp_fatal("-o: out of memory building '%s'", path);
  const char *pieces[] = {text};
  output_write("-o", path, pieces, &length, 1);
  free(text);
}

struct drawing {
  const struct memory_snapshot *snapshot;
  const struct rank_view *views;
};

static void write_html(FILE *f, const void *what) {
  const struct drawing *d = what;
  memviz_write_html(f, d->snapshot, d->views);
}

static void write_svg(FILE *f, const void *what) {
  const struct drawing *d = what;
  memviz_write_svg(f, d->snapshot, d->views);
}

int fsdp_memviz_main(int argc, char **argv) {
  struct memviz_options o;
  int status = parse_options(&o, argc, argv);
  if (status >= 0) return status;
  struct memory_snapshot s;
  memory_snapshot_load(&s, o.snapshot);
  struct rank_view *views = fsdp_xcalloc((size_t)s.n_ranks, sizeof *views);
  for (int i = 0; i < s.n_ranks; i++) memviz_view_build(&views[i], &s, &s.ranks[i], MEMVIZ_PLOT_WIDTH);
  struct drawing d = {&s, views};
  memviz_write_document(o.output, o.kind == OUTPUT_HTML ? write_html : write_svg, &d);
  printf("wrote %s: %d rank%s\n", o.output, s.n_ranks, s.n_ranks == 1 ? "" : "s");
  for (int i = 0; i < s.n_ranks; i++) memviz_view_free(&views[i]);
  free(views);
  memory_snapshot_free(&s);
  return 0;
}

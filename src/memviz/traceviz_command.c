/* `fsdp traceviz TRACE -o OUT.svg`: one step of a rank of a Chrome trace of `fsdp train
 * --trace` as an SVG timeline of its compute thread and comm streams. Runs without
 * MPI: it only reads a file and writes one. */
#include <stdio.h>
#include <string.h>

#include "fsdp/flags.h"
#include "fsdp/memviz.h"
#include "render.h"
#include "timeline.h"

struct traceviz_options {
  const char *trace;
  const char *output;
  int rank, step;
};

#define OPTIONS struct traceviz_options
static const struct flag FLAGS[] = {
    {NULL, "--output", 0, "OUT.svg", FLAG_NONE, FLAG_TEXT_OF(OPTIONS, output), .alias = "-o",
     .help = "the SVG image to write"},
    {NULL, "--rank", 0, "R", FLAG_DEFAULT("0"), FLAG_INT_OF(OPTIONS, rank, 0), .help = "the rank to draw"},
    {NULL, "--step", 0, "K", FLAG_NOTE("its last"), FLAG_INT_OF(OPTIONS, step, 1),
     .help = "the K-th step the trace holds, from 1"},
};
static const struct flag_parser PARSER = {
    .command = "traceviz", .flags = FLAGS, .n_flags = sizeof FLAGS / sizeof FLAGS[0], .arguments = "TRACE",
    .max_arguments = 1, .usage_status = MEMVIZ_USAGE_STATUS, .usage = "traceviz TRACE -o OUT.svg [--rank R] [--step K]",
    .intro = "Draws one training step of one rank of a trace (fsdp train --trace FILE) as a timeline:\n"
             "the compute thread and each communication stream a row, each span a bar coloured by its\n"
             "kind (forward, backward, optimizer, waiting on communication, all-gather, reduce-scatter,\n"
             "all-reduce), with each kind's count and time below. TRACE is the trace JSON file (Chrome's\n"
             "trace event format).\n",
    .outro = "Exits 2 on a usage error, 1 when the trace cannot be read or is invalid.\n"};

/* Returns -1 when the options are complete, 0 when --help was printed, or the exit
 * status of a usage error. argv[0] is "traceviz". */
static int parse_options(struct traceviz_options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  if (memviz_read_command_line(&PARSER, o, argc, argv, &o->trace)) return 0;
  if (!o->trace) return memviz_usage_error("traceviz", "missing TRACE, the trace file to draw");
  if (!o->output) return memviz_usage_error("traceviz", "missing -o OUT.svg, the image to write");
  if (!memviz_ends_with(o->output, ".svg"))
    return memviz_usage_error("traceviz", "-o: '%s' must end in .svg", o->output);
  return memviz_output_not_input("traceviz", o->trace, o->output);
}

static void write_timeline(FILE *f, const void *what) { timeline_write_svg(f, what); }

int fsdp_traceviz_main(int argc, char **argv) {
  struct traceviz_options o;
  int status = parse_options(&o, argc, argv);
  if (status >= 0) return status;
  struct timeline t;
  timeline_load(&t, o.trace, o.rank, o.step);
  memviz_write_document(o.output, write_timeline, &t);
  printf("wrote %s: rank %d, step %d of %d, %.2f ms, %d spans\n", o.output, t.rank, t.step, t.n_steps, t.step_ms,
         t.n_spans);
  timeline_free(&t);
  return 0;
}

/* `fsdp traceviz TRACE -o OUT.svg`: one step of a rank of a Chrome trace of `fsdp train
 * --trace` as an SVG timeline of its compute thread and comm streams. Runs without
 * MPI: it only reads a file and writes one. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/memviz.h"
#include "render.h"
#include "timeline.h"

struct traceviz_options {
  const char *trace;
  const char *output;
  int rank, step;
};

static void print_usage(FILE *out) {
  fputs("usage: fsdp traceviz TRACE -o OUT.svg [--rank R] [--step K]\n"
        "\n"
        "Draws one training step of one rank of a trace (fsdp train --trace FILE) as a timeline:\n"
        "the compute thread and each communication stream a row, each span a bar coloured by its\n"
        "kind (forward, backward, optimizer, waiting on communication, all-gather, reduce-scatter,\n"
        "all-reduce), with each kind's count and time below.\n"
        "\n"
        "  TRACE                   the trace JSON file (Chrome's trace event format)\n"
        "  -o, --output OUT.svg    the SVG image to write\n"
        "  --rank R                the rank to draw (default 0)\n"
        "  --step K                the K-th step the trace holds, from 1 (default: its last)\n"
        "  -h, --help              this text\n"
        "\n"
        "Exits 2 on a usage error, 1 when the trace cannot be read or is invalid.\n",
        out);
}

/* A whole number in [min, INT_MAX], or -1. */
static int parse_count(const char *text, int min) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < min || v > INT_MAX) return -1;
  return (int)v;
}

/* The flag's value: argv[i + 1] ("--flag V") or what follows '=' ("--flag=V"); NULL when
 * arg is another flag. *i moves past a separate value. */
static const char *flag_value(const char *flag, int argc, char **argv, int *i) {
  size_t n = strlen(flag);
  if (strncmp(argv[*i], flag, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != '\0') return NULL;
  return *i + 1 < argc ? argv[++*i] : "";
}

/* Returns -1 when the options are complete, 0 when --help was printed, or the exit
 * status of a usage error. argv[0] is "traceviz". */
static int parse_options(struct traceviz_options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *v;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      print_usage(stdout);
      return 0;
    }
    if ((v = flag_value("-o", argc, argv, &i)) || (v = flag_value("--output", argc, argv, &i))) {
      if (v[0] == '\0') return memviz_usage_error("traceviz", "%s: missing value", arg);
      o->output = v;
    } else if ((v = flag_value("--rank", argc, argv, &i))) {
      if ((o->rank = parse_count(v, 0)) < 0)
        return memviz_usage_error("traceviz", "--rank: '%s' is not a rank (a whole number >= 0)", v);
    } else if ((v = flag_value("--step", argc, argv, &i))) {
      if ((o->step = parse_count(v, 1)) < 0)
        return memviz_usage_error("traceviz", "--step: '%s' is not a step (a whole number >= 1)", v);
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return memviz_usage_error("traceviz", "unknown flag '%s'", arg);
    } else if (o->trace) {
      return memviz_usage_error("traceviz", "unexpected argument '%s': give one TRACE", arg);
    } else {
      o->trace = arg;
    }
  }
  if (!o->trace) return memviz_usage_error("traceviz", "missing TRACE, the trace file to draw");
  if (!o->output) return memviz_usage_error("traceviz", "missing -o OUT.svg, the image to write");
  if (!memviz_ends_with(o->output, ".svg"))
    return memviz_usage_error("traceviz", "-o: '%s' must end in .svg", o->output);
  return -1;
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

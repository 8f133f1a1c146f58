/* Private to src/memviz: drawing the views of fsdp/memviz.h. Text for people
 * (format.c), the chart itself (chart.c), the two kinds of output around it
 * (html.c, svg.c), and what fsdp memviz and fsdp traceviz (timeline.h) share: the
 * axes' steps, writing a document whole (command.c), and reading their command lines
 * (flags.c). */
#ifndef FSDP_MEMVIZ_RENDER_H
#define FSDP_MEMVIZ_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fsdp/memviz.h"

/* "1.50 GiB", "12.00 KiB", "512 B" */
void memviz_format_bytes(int64_t bytes, char *buf, size_t size);
/* "1,234,567" */
void memviz_format_count(int64_t n, char *buf, size_t size);
/* A CSS colour for the category at this index of the snapshot's list. */
void memviz_category_color(int index, char *buf, size_t size);
/* Text, escaped for XML and HTML alike. */
void memviz_write_escaped(FILE *f, const char *text);
/* "Peak 1.50 GiB (1,610,612,736 bytes) at 12.346 ms, step 2" */
void memviz_peak_headline(const struct memory_snapshot *s, const struct rank_view *v, char *buf, size_t size);
/* What was being allocated when the total reached its peak. */
void memviz_peak_cause(const struct memory_snapshot *s, const struct rank_view *v, char *buf, size_t size);

struct cJSON;
/* The text of the JSON file at path, parsed; where it is not JSON, the job ends naming
 * the line and column (snapshot.c: memviz's snapshots and traceviz's traces alike). */
struct cJSON *memviz_parse_json(const char *path, const char *text, size_t length);

/* 1, 2 or 5 times a power of ten, giving about `ticks` ticks over `range`. */
double memviz_nice_step(double range, int ticks);

/* The plot's width in pixels, hence the number of columns of a view. */
enum { MEMVIZ_PLOT_WIDTH = 860 };
int memviz_chart_width(void);
int memviz_chart_height(const struct rank_view *v);
/* The chart as one <svg> element at (0, y) of its parent: stacked areas, axes, step
 * boundaries, the peak marker and the legend. */
void memviz_write_chart(FILE *f, const struct memory_snapshot *s, const struct rank_view *v, double y);

/* A usage error's exit status: memviz and traceviz run without MPI, and say 2 as a shell
 * command does. */
enum { MEMVIZ_USAGE_STATUS = 2 };
/* "fsdp: error: ... (see fsdp COMMAND --help)" on stderr; returns MEMVIZ_USAGE_STATUS. */
int memviz_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct flag_parser;
/* Reads a command line of flags (fsdp/flags.h) into options and one input file into
 * *input (left as it is when none is given); returns 1 when --help was printed. */
int memviz_read_command_line(const struct flag_parser *p, void *options, int argc, char **argv, const char **input);
int memviz_ends_with(const char *text, const char *suffix);
/* The exit status of a usage error when output names the input file (the drawing would
 * replace what it draws), else -1. */
int memviz_output_not_input(const char *command, const char *input, const char *output);
/* Writes what write(f, what) prints to path whole, or ends the job naming -o. */
void memviz_write_document(const char *path, void (*write)(FILE *f, const void *what), const void *what);

void memviz_write_html(FILE *f, const struct memory_snapshot *s, const struct rank_view *views);
void memviz_write_svg(FILE *f, const struct memory_snapshot *s, const struct rank_view *views);

#endif

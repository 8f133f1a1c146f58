/* The parts of `fsdp memviz`: what a rank's chart shows (memviz_view.c), text for
 * people (memviz_format.c), the chart itself (memviz_chart.c), and the two kinds of
 * output around it (memviz_html.c, memviz_svg.c). */
#ifndef FSDP_CLI_MEMVIZ_H
#define FSDP_CLI_MEMVIZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memory_snapshot.h"

/* Where the events of a step begin. */
struct step_start {
  int step;
  double time_us;
};

/* One rank, reduced to what is drawn: the time axis is cut into columns, one per
 * pixel of the plot, and each column shows the moment in it with the most bytes in
 * total, so that no peak is lost however many events fall into a column. */
struct rank_view {
  const struct snapshot_rank *rank;
  double end_us; /* the time axis runs from 0 to here */
  int n_columns;
  int64_t *column_bytes; /* n_columns x n_categories */
  int *shown;            /* per category: it holds bytes at some moment */
  int n_shown;
  int64_t peak_total;
  double peak_time_us;
  int64_t *peak_bytes; /* per category, at the peak */
  long peak_event;     /* the allocation that reached the peak; -1: the peak is the memory at the start */
  struct step_start *step_starts; /* in time order */
  int n_step_starts;
};

void memviz_view_build(struct rank_view *v, const struct memory_snapshot *s, const struct snapshot_rank *r,
                       int n_columns);
void memviz_view_free(struct rank_view *v);

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

/* The plot's width in pixels, hence the number of columns of a view. */
enum { MEMVIZ_PLOT_WIDTH = 860 };
int memviz_chart_width(void);
int memviz_chart_height(const struct rank_view *v);
/* The chart as one <svg> element at (0, y) of its parent: stacked areas, axes, step
 * boundaries, the peak marker and the legend. */
void memviz_write_chart(FILE *f, const struct memory_snapshot *s, const struct rank_view *v, double y);

void memviz_write_html(FILE *f, const struct memory_snapshot *s, const struct rank_view *views);
void memviz_write_svg(FILE *f, const struct memory_snapshot *s, const struct rank_view *views);

#endif

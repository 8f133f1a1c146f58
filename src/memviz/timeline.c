/* One step of one rank as an SVG image: a row per track (compute, then each comm stream),
 * a bar per span coloured by its kind, a time axis in milliseconds, a legend, and per
 * kind the spans' count and time, the all-gathers of the backward counted apart (none
 * under grad-op, which keeps the forward's gathered parameters for the backward). */
#include <stdio.h>

#include "render.h"
#include "timeline.h"

enum {
  WIDTH = 1000,
  PLOT_LEFT = 150, /* room for the track names */
  PLOT_RIGHT = 20,
  PLOT_WIDTH = WIDTH - PLOT_LEFT - PLOT_RIGHT,
  PLOT_TOP = 56, /* below the title and the subtitle */
  ROW_HEIGHT = 36,
  BAR_HEIGHT = 24,
  AXIS_ROOM = 46, /* tick labels and the axis title */
  LEGEND_ROW_HEIGHT = 20,
  LEGEND_COLUMNS = 4,
  LEGEND_COLUMN_WIDTH = 205,
  SUMMARY_LINE_HEIGHT = 18,
};

/* Compute in the blues, greens and red of memviz's parameters, optimizer and the
 * exposed wait; each collective its own colour, on every track it appears on. */
static const char *const KIND_COLOR[SPAN_NUM_KINDS] = {"#1f5fa8", "#7fb2e5", "#2e9e4a", "#d43d3d", "#e07b00",
                                                       "#8c62b8", "#b5942a", "#3fb5b0", "#8a8a8a"};
static const char *const KIND_LABEL[SPAN_NUM_KINDS] = {
    "forward (compute)",  "backward (compute)",      "optimizer (compute)", "wait on comm (exposed)",
    "all-gather (stream)", "reduce-scatter (stream)", "all-reduce (stream)", "kernel (compute thread)",
    "other"};

struct kind_total {
  int count, in_backward;
  double ms;
};

static double x_of(const struct timeline *t, double ms) {
  return PLOT_LEFT + (t->step_ms > 0 ? ms / t->step_ms * PLOT_WIDTH : 0.0);
}

static void write_rows(FILE *f, const struct timeline *t) {
  for (int k = 0; k < t->n_tracks; k++) {
    double y = PLOT_TOP + k * ROW_HEIGHT;
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", PLOT_LEFT, y, PLOT_WIDTH,
            ROW_HEIGHT, k % 2 ? "#fff" : "#f4f4f4");
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PLOT_LEFT - 8, y + ROW_HEIGHT / 2.0 + 4);
    memviz_write_escaped(f, t->tracks[k]);
    fprintf(f, "</text>\n");
  }
}

static void write_spans(FILE *f, const struct timeline *t) {
  for (int i = 0; i < t->n_spans; i++) {
    const struct timeline_span *s = &t->spans[i];
    double x0 = x_of(t, s->begin_ms), x1 = x_of(t, s->end_ms);
    double y = PLOT_TOP + s->track * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2.0;
    /* Under a pixel a bar would vanish; a hairline keeps a short collective visible. */
    double w = x1 - x0 < 0.5 ? 0.5 : x1 - x0;
    fprintf(f, "<g class=\"span\" data-kind=\"%s\" data-phase=\"%s\" data-track=\"", timeline_kind_name(s->kind),
            s->in_backward ? "backward" : "forward");
    memviz_write_escaped(f, t->tracks[s->track]);
    /* A white edge parts neighbours of one colour, on bars wide enough to keep their fill. */
    fprintf(f, "\"><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"%s/><title>", x0, y, w,
            BAR_HEIGHT, KIND_COLOR[s->kind], w > 3 ? " stroke=\"#fff\" stroke-width=\"0.6\"" : "");
    memviz_write_escaped(f, s->name);
    fprintf(f, ": %.3f ms at %.3f ms</title></g>\n", s->end_ms - s->begin_ms, s->begin_ms);
  }
}

static void write_axis(FILE *f, const struct timeline *t, double y) {
  fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#444\"/>\n", PLOT_LEFT, y,
          PLOT_LEFT + PLOT_WIDTH, y);
  double step = t->step_ms > 0 ? memviz_nice_step(t->step_ms, 10) : 1.0;
  for (double ms = 0.0; ms <= t->step_ms * (1 + 1e-9); ms += step) {
    double x = x_of(t, ms);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
            x, PLOT_TOP, x, y + 5, x, y + 18, ms);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time from the step's start (ms)</text>\n",
          PLOT_LEFT + PLOT_WIDTH / 2.0, y + 36);
}

static int n_present(const struct kind_total *totals) {
  int n = 0;
  for (int k = 0; k < SPAN_NUM_KINDS; k++) n += totals[k].count > 0;
  return n;
}

static double write_legend(FILE *f, const struct kind_total *totals, double y) {
  int shown = 0;
  for (int k = 0; k < SPAN_NUM_KINDS; k++) {
    if (!totals[k].count) continue;
    double x = PLOT_LEFT + (shown % LEGEND_COLUMNS) * LEGEND_COLUMN_WIDTH - 60;
    double row = y + (shown / LEGEND_COLUMNS) * LEGEND_ROW_HEIGHT;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
            "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
            x, row, KIND_COLOR[k], x + 17, row + 10, KIND_LABEL[k]);
    shown++;
  }
  return y + (shown + LEGEND_COLUMNS - 1) / LEGEND_COLUMNS * LEGEND_ROW_HEIGHT;
}

static void write_summary(FILE *f, const struct timeline *t, const struct kind_total *totals, double y) {
  int line = 0;
  for (int k = 0; k < SPAN_NUM_KINDS; k++) {
    if (!totals[k].count) continue;
    const struct kind_total *s = &totals[k];
    fprintf(f, "<text class=\"total\" data-kind=\"%s\" data-count=\"%d\" data-backward=\"%d\" x=\"%d\" y=\"%.1f\">",
            timeline_kind_name(k), s->count, s->in_backward, PLOT_LEFT - 60, y + line * SUMMARY_LINE_HEIGHT);
    fprintf(f, "%s: %d span%s, %.2f ms (%.0f%% of the step)", timeline_kind_name(k), s->count,
            s->count == 1 ? "" : "s", s->ms, t->step_ms > 0 ? 100.0 * s->ms / t->step_ms : 0.0);
    if (k == SPAN_ALL_GATHER) fprintf(f, "; %d of them in the backward", s->in_backward);
    fprintf(f, "</text>\n");
    line++;
  }
}

void timeline_write_svg(FILE *f, const struct timeline *t) {
  struct kind_total totals[SPAN_NUM_KINDS] = {{0}};
  for (int i = 0; i < t->n_spans; i++) {
    struct kind_total *s = &totals[t->spans[i].kind];
    s->count++;
    s->in_backward += t->spans[i].in_backward;
    s->ms += t->spans[i].end_ms - t->spans[i].begin_ms;
  }
  double axis_y = PLOT_TOP + t->n_tracks * ROW_HEIGHT;
  double legend_y = axis_y + AXIS_ROOM + 8;
  double summary_y = legend_y + (n_present(totals) + LEGEND_COLUMNS - 1) / LEGEND_COLUMNS * LEGEND_ROW_HEIGHT + 22;
  double height = summary_y + n_present(totals) * SUMMARY_LINE_HEIGHT + 6;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n"
          "<rect width=\"%d\" height=\"%.0f\" fill=\"#fff\"/>\n",
          WIDTH, height, WIDTH, height, WIDTH, height);
  fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"16\" font-weight=\"bold\">Rank %d, step %d of %d: %.2f ms</text>\n",
          PLOT_LEFT - 60, t->rank, t->step, t->n_steps, t->step_ms);
  fprintf(f, "<text x=\"%d\" y=\"40\" fill=\"#555\">", PLOT_LEFT - 60);
  memviz_write_escaped(f, t->path);
  fprintf(f, "</text>\n");
  write_rows(f, t);
  write_axis(f, t, axis_y);
  write_spans(f, t);
  write_legend(f, totals, legend_y);
  write_summary(f, t, totals, summary_y);
  fprintf(f, "</svg>\n");
}

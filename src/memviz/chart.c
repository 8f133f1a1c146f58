#include <math.h>
#include <stdio.h>

#include "render.h"

enum {
  PLOT_LEFT = 80, /* room for the byte labels */
  PLOT_RIGHT = 20,
  PLOT_TOP = 30, /* room for the step labels */
  PLOT_HEIGHT = 300,
  PLOT_BOTTOM = PLOT_TOP + PLOT_HEIGHT,
  LEGEND_TOP = PLOT_BOTTOM + 52, /* below the time labels and the axis title */
  LEGEND_ROW_HEIGHT = 20,
  LEGEND_COLUMNS = 4,
  LEGEND_COLUMN_WIDTH = 215,
};
static const char *const AXIS_COLOR = "#444";
static const char *const GRID_COLOR = "#e4e4e4";
/* Lines and labels drawn over the areas let the pointer through to them: an area's
 * tooltip, and the page's hit test of it, see the area itself. */
static const char *const OVERLAY = "pointer-events=\"none\"";
/* A white outline under text keeps it readable where it crosses the areas. */
static const char *const HALO = "paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"3\"";

int memviz_chart_width(void) { return PLOT_LEFT + MEMVIZ_PLOT_WIDTH + PLOT_RIGHT; }

static int legend_rows(const struct rank_view *v) { return (v->n_shown + LEGEND_COLUMNS - 1) / LEGEND_COLUMNS; }

int memviz_chart_height(const struct rank_view *v) { return LEGEND_TOP + legend_rows(v) * LEGEND_ROW_HEIGHT + 4; }

double memviz_nice_step(double range, int ticks) {
  double raw = range / ticks;
  double magnitude = pow(10.0, floor(log10(raw)));
  double norm = raw / magnitude;
  return (norm <= 1.0 ? 1.0 : norm <= 2.0 ? 2.0 : norm <= 5.0 ? 5.0 : 10.0) * magnitude;
}

/* The byte axis: ticks every step_units in the largest binary unit that fits the peak. */
struct byte_axis {
  double unit_bytes, step_units, max_bytes;
  const char *unit_name;
};

static struct byte_axis byte_axis_for(int64_t peak) {
  static const char *const NAMES[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  struct byte_axis a = {1.0, 1.0, 1.0, NAMES[0]};
  for (int u = 1; u < (int)(sizeof NAMES / sizeof NAMES[0]) && (double)peak >= a.unit_bytes * 1024.0; u++) {
    a.unit_bytes *= 1024.0;
    a.unit_name = NAMES[u];
  }
  double peak_units = (double)peak / a.unit_bytes;
  if (peak_units > 0) a.step_units = memviz_nice_step(peak_units, 5);
  double top_units = ceil(peak_units / a.step_units) * a.step_units;
  a.max_bytes = (top_units > 0 ? top_units : a.step_units) * a.unit_bytes;
  return a;
}

/* Coordinates in tenths of a pixel: equal heights compare equal, so runs merge. */
static long y_tenths(const struct byte_axis *a, int64_t bytes) {
  return lround((PLOT_BOTTOM - (double)bytes / a->max_bytes * PLOT_HEIGHT) * 10.0);
}

static double column_x(const struct rank_view *v, int k) {
  return PLOT_LEFT + (double)k * MEMVIZ_PLOT_WIDTH / v->n_columns;
}

static double time_x(const struct rank_view *v, double time_us) {
  return PLOT_LEFT + time_us / v->end_us * MEMVIZ_PLOT_WIDTH;
}

/* The stacked height of categories [0, c) in column k. */
static int64_t stacked_below(const struct rank_view *v, int n_categories, int k, int c) {
  const int64_t *column = v->column_bytes + (size_t)k * (size_t)n_categories;
  int64_t sum = 0;
  for (int i = 0; i < c; i++) sum += column[i];
  return sum;
}

/* A step line along the top of the category's band, left to right, then back along
 * its bottom: a vertical move only where a column's height differs from the last. */
static void write_area_path(FILE *f, const struct rank_view *v, const struct byte_axis *a, int n_categories, int c) {
  int n = v->n_columns;
  long top_prev = y_tenths(a, stacked_below(v, n_categories, 0, c + 1));
  long bottom_prev = y_tenths(a, stacked_below(v, n_categories, n - 1, c));
  fprintf(f, "M%.1f %.1fV%.1f", column_x(v, 0), y_tenths(a, stacked_below(v, n_categories, 0, c)) / 10.0,
          top_prev / 10.0);
  for (int k = 1; k < n; k++) {
    long top = y_tenths(a, stacked_below(v, n_categories, k, c + 1));
    if (top != top_prev) fprintf(f, "H%.1fV%.1f", column_x(v, k), top / 10.0);
    top_prev = top;
  }
  fprintf(f, "H%.1fV%.1f", column_x(v, n), bottom_prev / 10.0);
  for (int k = n - 1; k > 0; k--) {
    long bottom = y_tenths(a, stacked_below(v, n_categories, k - 1, c));
    if (bottom != bottom_prev) fprintf(f, "H%.1fV%.1f", column_x(v, k), bottom / 10.0);
    bottom_prev = bottom;
  }
  fprintf(f, "H%.1fZ", column_x(v, 0));
}

/* A point inside the category's band, where it is thickest: the page hit-tests it to
 * show that the band is really painted there. Nothing when the band is thinner than a
 * pixel everywhere: a hit test could land on its edge. */
static void write_probe(FILE *f, const struct rank_view *v, const struct byte_axis *a, int n_categories, int c) {
  long thickest = 0, middle = 0;
  int column = 0;
  for (int k = 0; k < v->n_columns; k++) {
    long top = y_tenths(a, stacked_below(v, n_categories, k, c + 1));
    long bottom = y_tenths(a, stacked_below(v, n_categories, k, c));
    if (bottom - top > thickest) {
      thickest = bottom - top;
      middle = (top + bottom) / 2;
      column = k;
    }
  }
  if (thickest >= 10)
    fprintf(f, " data-probe-x=\"%.2f\" data-probe-y=\"%.1f\"", (column_x(v, column) + column_x(v, column + 1)) / 2,
            middle / 10.0);
}

static void write_areas(FILE *f, const struct memory_snapshot *s, const struct rank_view *v,
                        const struct byte_axis *a) {
  for (int c = 0; c < s->n_categories; c++) {
    if (!v->shown[c]) continue;
    char color[32];
    memviz_category_color(c, color, sizeof color);
    fprintf(f, "<path class=\"area\" data-category=\"");
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "\"");
    write_probe(f, v, a, s->n_categories, c);
    fprintf(f, " fill=\"%s\" d=\"", color);
    write_area_path(f, v, a, s->n_categories, c);
    fprintf(f, "\"><title>");
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "</title></path>\n");
  }
}

static void write_byte_axis(FILE *f, const struct byte_axis *a) {
  double top_units = a->max_bytes / a->unit_bytes;
  for (int i = 0; i * a->step_units <= top_units * (1 + 1e-9); i++) {
    double y = PLOT_BOTTOM - i * a->step_units / top_units * PLOT_HEIGHT;
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", PLOT_LEFT,
            PLOT_LEFT + MEMVIZ_PLOT_WIDTH, y, y, GRID_COLOR);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">%g %s</text>\n",
            PLOT_LEFT - 6, y, i * a->step_units, a->unit_name);
  }
}

static void write_time_axis(FILE *f, const struct rank_view *v) {
  double end_ms = v->end_us / 1e3, step_ms = memviz_nice_step(end_ms, 8);
  for (int i = 0; i * step_ms <= end_ms * (1 + 1e-9); i++) {
    double x = time_x(v, i * step_ms * 1e3);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\"/>", x, x, PLOT_BOTTOM,
            PLOT_BOTTOM + 4, AXIS_COLOR);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, PLOT_BOTTOM + 17, i * step_ms);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since recording began (ms)</text>\n",
          PLOT_LEFT + MEMVIZ_PLOT_WIDTH / 2, PLOT_BOTTOM + 36);
  fprintf(f, "<path d=\"M%d %dV%dH%d\" fill=\"none\" stroke=\"%s\" %s/>\n", PLOT_LEFT, PLOT_TOP, PLOT_BOTTOM,
          PLOT_LEFT + MEMVIZ_PLOT_WIDTH, AXIS_COLOR, OVERLAY);
}

static void write_step_boundaries(FILE *f, const struct rank_view *v) {
  fprintf(f, "<g class=\"step-starts\" %s>\n", OVERLAY);
  for (int i = 0; i < v->n_step_starts; i++) {
    double x = time_x(v, v->step_starts[i].time_us);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"4 3\"/>", x, x,
            PLOT_TOP - 14, PLOT_BOTTOM, AXIS_COLOR);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\">step %d</text>\n", x + 3, PLOT_TOP - 4, v->step_starts[i].step);
  }
  fprintf(f, "</g>\n");
}

static void write_peak_marker(FILE *f, const struct rank_view *v, const struct byte_axis *a) {
  double x = time_x(v, v->peak_time_us), y = y_tenths(a, v->peak_total) / 10.0;
  int left_half = x < PLOT_LEFT + MEMVIZ_PLOT_WIDTH / 2;
  char amount[32];
  memviz_format_bytes(v->peak_total, amount, sizeof amount);
  fprintf(f, "<g class=\"peak-marker\" %s>", OVERLAY);
  fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%d\" stroke=\"#000\" stroke-dasharray=\"2 2\"/>", x, x,
          y, PLOT_BOTTOM);
  fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" stroke=\"#000\" stroke-width=\"2\"/>", x, y);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" dominant-baseline=\"middle\" font-weight=\"bold\" %s>"
             "peak %s</text></g>\n",
          left_half ? x + 9 : x - 9, y, left_half ? "start" : "end", HALO, amount);
}

static void write_legend(FILE *f, const struct memory_snapshot *s, const struct rank_view *v) {
  int i = 0;
  for (int c = 0; c < s->n_categories; c++) {
    if (!v->shown[c]) continue;
    int x = PLOT_LEFT + (i % LEGEND_COLUMNS) * LEGEND_COLUMN_WIDTH;
    int y = LEGEND_TOP + (i / LEGEND_COLUMNS) * LEGEND_ROW_HEIGHT;
    char color[32];
    memviz_category_color(c, color, sizeof color);
    fprintf(f, "<g class=\"legend-item\" data-category=\"");
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "\"><rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", x, y,
            color, x + 18, y + 10);
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "</text></g>\n");
    i++;
  }
}

void memviz_write_chart(FILE *f, const struct memory_snapshot *s, const struct rank_view *v, double y) {
  int width = memviz_chart_width(), height = memviz_chart_height(v);
  struct byte_axis a = byte_axis_for(v->peak_total);
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-rank=\"%d\" x=\"0\" y=\"%g\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\" "
          "fill=\"#222\">\n",
          v->rank->rank, y, width, height, width, height);
  fprintf(f, "<title>rank %d: bytes held by category over time</title>\n", v->rank->rank);
  write_byte_axis(f, &a);
  write_areas(f, s, v, &a);
  write_step_boundaries(f, v);
  write_time_axis(f, v);
  write_peak_marker(f, v, &a);
  write_legend(f, s, v);
  fprintf(f, "</svg>\n");
}

#include <stdio.h>

#include "render.h"

enum {
  TITLE_HEIGHT = 40,
  RANK_TITLE_HEIGHT = 24,
  LINE_HEIGHT = 18,
  TEXT_LEFT = 80, /* lines up with the plot */
  RANK_GAP = 28,
};

/* The summary under a chart: two lines on the peak, then one per category. */
static int summary_height(const struct memory_snapshot *s) { return (2 + s->n_categories) * LINE_HEIGHT + 8; }

static int rank_height(const struct memory_snapshot *s, const struct rank_view *v) {
  return RANK_TITLE_HEIGHT + memviz_chart_height(v) + summary_height(s) + RANK_GAP;
}

static void write_text_line(FILE *f, double y, const char *attributes, const char *text) {
  fprintf(f, "<text x=\"%d\" y=\"%.1f\"%s>", TEXT_LEFT, y, attributes);
  memviz_write_escaped(f, text);
  fprintf(f, "</text>\n");
}

static void write_summary(FILE *f, const struct memory_snapshot *s, const struct rank_view *v, double y) {
  char line[512];
  memviz_peak_headline(s, v, line, sizeof line);
  fprintf(f, "<g class=\"peak\" data-peak-bytes=\"%lld\">", (long long)v->peak_total);
  write_text_line(f, y + 13, " font-weight=\"bold\"", line);
  fprintf(f, "</g>\n");
  memviz_peak_cause(s, v, line, sizeof line);
  write_text_line(f, y + LINE_HEIGHT + 13, " class=\"cause\"", line);
  for (int c = 0; c < s->n_categories; c++) {
    double row = y + (2 + c) * LINE_HEIGHT;
    char color[32], human[32], exact[32];
    memviz_category_color(c, color, sizeof color);
    memviz_format_bytes(v->peak_bytes[c], human, sizeof human);
    memviz_format_count(v->peak_bytes[c], exact, sizeof exact);
    double share = v->peak_total > 0 ? 100.0 * (double)v->peak_bytes[c] / (double)v->peak_total : 0.0;
    fprintf(f, "<g class=\"breakdown\" data-category=\"");
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "\"><rect x=\"%d\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%.1f\">",
            TEXT_LEFT, row + 3, color, TEXT_LEFT + 18, row + 13);
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f,
            "</text><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s bytes</text>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.1f%%</text></g>\n",
            TEXT_LEFT + 280, row + 13, human, TEXT_LEFT + 480, row + 13, exact, TEXT_LEFT + 550, row + 13, share);
  }
}

void memviz_write_svg(FILE *f, const struct memory_snapshot *s, const struct rank_view *views) {
  int width = memviz_chart_width(), height = TITLE_HEIGHT;
  for (int i = 0; i < s->n_ranks; i++) height += rank_height(s, &views[i]);
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n"
          "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
          width, height, width, height, width, height);
  fprintf(f, "<text x=\"%d\" y=\"26\" font-size=\"18\" font-weight=\"bold\">Memory snapshot: ", TEXT_LEFT);
  memviz_write_escaped(f, s->path);
  fprintf(f, "</text>\n");
  double y = TITLE_HEIGHT;
  for (int i = 0; i < s->n_ranks; i++) {
    const struct rank_view *v = &views[i];
    fprintf(f, "<g class=\"rank\" data-rank=\"%d\">\n", v->rank->rank);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"16\" font-weight=\"bold\">Rank %d</text>\n", TEXT_LEFT,
            y + 18, v->rank->rank);
    memviz_write_chart(f, s, v, y + RANK_TITLE_HEIGHT);
    write_summary(f, s, v, y + RANK_TITLE_HEIGHT + memviz_chart_height(v));
    fprintf(f, "</g>\n");
    y += rank_height(s, v);
  }
  fprintf(f, "</svg>\n");
}

#include <stdio.h>

#include "render.h"

static const char *const STYLE =
    "body{font-family:sans-serif;color:#222;margin:24px auto;max-width:1000px;padding:0 16px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px}"
    ".source{color:#555}"
    "svg.chart{display:block;max-width:100%;height:auto}"
    ".peak{font-weight:bold}"
    "table{border-collapse:collapse;margin-top:8px}"
    "th,td{padding:3px 12px;text-align:right;border-bottom:1px solid #e4e4e4}"
    "th:first-child,td:first-child{text-align:left}"
    ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-1px}";

/* The page measures what the browser drew and writes it into the DOM, so that a
 * headless browser's DOM dump shows whether every area really rendered: its box, its
 * fill, and whether a hit test at a point inside its band finds it there (hit tests
 * only see the viewport, hence the scrolling). */
static const char *const RENDER_CHECK =
    "(function () {\n"
    "  for (const area of document.querySelectorAll('path.area')) {\n"
    "    const box = area.getBoundingClientRect();\n"
    "    area.dataset.renderedWidth = box.width.toFixed(2);\n"
    "    area.dataset.renderedHeight = box.height.toFixed(2);\n"
    "    area.dataset.renderedFill = getComputedStyle(area).fill;\n"
    "    if (area.dataset.probeX === undefined) continue;\n"
    "    area.ownerSVGElement.scrollIntoView();\n"
    "    const probe = new DOMPoint(+area.dataset.probeX, +area.dataset.probeY).matrixTransform(area.getScreenCTM());\n"
    "    area.dataset.renderedHit = document.elementFromPoint(probe.x, probe.y) === area ? 'yes' : 'no';\n"
    "  }\n"
    "  window.scrollTo(0, 0);\n"
    "  for (const marker of document.querySelectorAll('.peak-marker circle')) {\n"
    "    const box = marker.getBoundingClientRect();\n"
    "    marker.dataset.renderedWidth = box.width.toFixed(2);\n"
    "  }\n"
    "  document.body.dataset.rendered = 'yes';\n"
    "})();\n";

static void write_header(FILE *f, const struct memory_snapshot *s) {
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Memory snapshot: ");
  memviz_write_escaped(f, s->path);
  fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>Memory snapshot</h1>\n<p class=\"source\">", STYLE);
  memviz_write_escaped(f, s->path);
  size_t events = 0;
  for (int i = 0; i < s->n_ranks; i++) events += s->ranks[i].n_events;
  fprintf(f, ": %d of %d ranks, ", s->n_ranks, s->world_size);
  if (s->first_step == s->last_step) {
    fprintf(f, "step %d", s->first_step);
  } else {
    fprintf(f, "steps %d to %d", s->first_step, s->last_step);
  }
  fprintf(f, ", %zu events. Each column of a chart shows the moment in it with the most bytes held.</p>\n", events);
}

static void write_breakdown(FILE *f, const struct memory_snapshot *s, const struct rank_view *v) {
  fprintf(f, "<table class=\"breakdown\">\n<thead><tr><th>category</th><th>at the peak</th><th>bytes</th>"
             "<th>share</th></tr></thead>\n<tbody>\n");
  for (int c = 0; c < s->n_categories; c++) {
    char color[32], human[32], exact[32];
    memviz_category_color(c, color, sizeof color);
    memviz_format_bytes(v->peak_bytes[c], human, sizeof human);
    memviz_format_count(v->peak_bytes[c], exact, sizeof exact);
    double share = v->peak_total > 0 ? 100.0 * (double)v->peak_bytes[c] / (double)v->peak_total : 0.0;
    fprintf(f, "<tr data-category=\"");
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "\"><td><span class=\"swatch\" style=\"background:%s\"></span>", color);
    memviz_write_escaped(f, s->categories[c]);
    fprintf(f, "</td><td>%s</td><td>%s</td><td>%.1f%%</td></tr>\n", human, exact, share);
  }
  fprintf(f, "</tbody>\n</table>\n");
}

static void write_rank(FILE *f, const struct memory_snapshot *s, const struct rank_view *v) {
  char line[512];
  fprintf(f, "<section class=\"rank\" data-rank=\"%d\">\n<h2>Rank %d</h2>\n", v->rank->rank, v->rank->rank);
  memviz_write_chart(f, s, v, 0);
  memviz_peak_headline(s, v, line, sizeof line);
  fprintf(f, "<p class=\"peak\" data-peak-bytes=\"%lld\">", (long long)v->peak_total);
  memviz_write_escaped(f, line);
  memviz_peak_cause(s, v, line, sizeof line);
  fprintf(f, "</p>\n<p class=\"cause\">");
  memviz_write_escaped(f, line);
  fprintf(f, "</p>\n");
  write_breakdown(f, s, v);
  fprintf(f, "</section>\n");
}

void memviz_write_html(FILE *f, const struct memory_snapshot *s, const struct rank_view *views) {
  write_header(f, s);
  for (int i = 0; i < s->n_ranks; i++) write_rank(f, s, &views[i]);
  fprintf(f, "<script>\n%s</script>\n</body>\n</html>\n", RENDER_CHECK);
}

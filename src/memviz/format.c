#include <stdio.h>
#include <string.h>

#include "render.h"

void memviz_format_bytes(int64_t bytes, char *buf, size_t size) {
  static const char *const UNITS[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(buf, size, "%lld B", (long long)bytes);
    return;
  }
  double value = (double)bytes / 1024.0;
  int u = 0;
  while (value >= 1024.0 && u + 1 < (int)(sizeof UNITS / sizeof UNITS[0])) {
    value /= 1024.0;
    u++;
  }
  snprintf(buf, size, "%.2f %s", value, UNITS[u]);
}

void memviz_format_count(int64_t n, char *buf, size_t size) {
  char digits[32];
  int len = snprintf(digits, sizeof digits, "%lld", (long long)(n < 0 ? -n : n));
  size_t out = 0;
  if (n < 0 && out + 1 < size) buf[out++] = '-';
  for (int i = 0; i < len && out + 1 < size; i++) {
    if (i > 0 && (len - i) % 3 == 0 && out + 2 < size) buf[out++] = ',';
    buf[out++] = digits[i];
  }
  buf[out] = '\0';
}

void memviz_category_color(int index, char *buf, size_t size) {
  /* Distinct at a glance and readable on white, in the order the trainer lists its
   * categories: parameters blue, gradients orange, optimizer green, activations red. */
  static const char *const PALETTE[] = {"#1f5fa8", "#7fb2e5", "#e07b00", "#f5bd6e", "#2e9e4a",
                                        "#d43d3d", "#8c62b8", "#8a8a8a", "#b5942a", "#3fb5b0"};
  int n = (int)(sizeof PALETTE / sizeof PALETTE[0]);
  if (index < n) {
    snprintf(buf, size, "%s", PALETTE[index]);
  } else {
    /* The golden angle keeps any number of further hues apart. */
    snprintf(buf, size, "hsl(%d, 55%%, 50%%)", (index * 137) % 360);
  }
}

void memviz_write_escaped(FILE *f, const char *text) {
  for (const char *p = text; *p; p++) {
    switch (*p) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      default: fputc(*p, f); break;
    }
  }
}

void memviz_peak_headline(const struct memory_snapshot *s, const struct rank_view *v, char *buf, size_t size) {
  char human[32], exact[32];
  memviz_format_bytes(v->peak_total, human, sizeof human);
  memviz_format_count(v->peak_total, exact, sizeof exact);
  if (v->peak_event < 0) {
    snprintf(buf, size, "Peak %s (%s bytes) when recording began (0 ms, step %d)", human, exact, s->first_step);
  } else {
    snprintf(buf, size, "Peak %s (%s bytes) at %.3f ms, step %d", human, exact, v->peak_time_us / 1e3,
             v->rank->events[v->peak_event].step);
  }
}

/* "block 1, backward"; either label may be empty, as for the comm threads' buffers. */
static void event_label(const struct snapshot_event *ev, char *buf, size_t size) {
  if (ev->unit[0] != '\0' && ev->op[0] != '\0') {
    snprintf(buf, size, "%s, %s", ev->unit, ev->op);
  } else if (ev->unit[0] != '\0') {
    snprintf(buf, size, "%s (no op)", ev->unit);
  } else if (ev->op[0] != '\0') {
    snprintf(buf, size, "%s (no unit)", ev->op);
  } else {
    snprintf(buf, size, "no unit or op");
  }
}

void memviz_peak_cause(const struct memory_snapshot *s, const struct rank_view *v, char *buf, size_t size) {
  if (v->peak_event < 0) {
    snprintf(buf, size, "Nothing recorded reached it: the peak is the memory held when recording began.");
    return;
  }
  const struct snapshot_event *ev = &v->rank->events[v->peak_event];
  char amount[32], label[256];
  memviz_format_bytes(ev->bytes, amount, sizeof amount);
  event_label(ev, label, sizeof label);
  snprintf(buf, size, "Allocating at the peak: %s: +%s of %s", label, amount, s->categories[ev->category]);
}

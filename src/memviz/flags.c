/* The command lines of fsdp memviz and fsdp traceviz: one input file and a few flags,
 * each flag an entry of a table that says what it sets, read by one loop. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

__attribute__((format(printf, 2, 3))) int memviz_usage_error(const char *command, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("fsdp: error: ", stderr);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, " (see fsdp %s --help)\n", command);
  va_end(args);
  return 2;
}

/* A whole number in [min, INT_MAX], or -1. */
static int parse_count(const char *text, int min) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < min || v > INT_MAX) return -1;
  return (int)v;
}

/* The name of the flag that argv[*i] is, its value in *value: argv[i + 1] ("--flag V", ""
 * when there is none; *i moves past it) or, for a long flag, what follows '=' ("--flag=V").
 * NULL when argv[*i] is not this flag. */
static const char *match(const struct memviz_flag *flag, int argc, char **argv, int *i, const char **value) {
  const char *arg = argv[*i];
  if (flag->short_name && strcmp(arg, flag->short_name) == 0) {
    *value = *i + 1 < argc ? argv[++*i] : "";
    return flag->short_name;
  }
  size_t n = strlen(flag->name);
  if (strncmp(arg, flag->name, n) != 0 || (arg[n] != '\0' && arg[n] != '=')) return NULL;
  *value = arg[n] == '=' ? arg + n + 1 : *i + 1 < argc ? argv[++*i] : "";
  return flag->name;
}

/* Returns 0 when the value was taken, or the exit status of a usage error. */
static int take(const struct memviz_command_line *line, const struct memviz_flag *flag, const char *name,
                const char *value) {
  if (flag->kind == MEMVIZ_FLAG_TEXT) {
    if (value[0] == '\0') return memviz_usage_error(line->command, "%s: missing value", name);
    *flag->text = value;
  } else if ((*flag->count = parse_count(value, flag->min)) < 0) {
    return memviz_usage_error(line->command, "%s: '%s' is not a %s (a whole number >= %d)", name, value, flag->noun,
                              flag->min);
  }
  return 0;
}

int memviz_parse_command_line(const struct memviz_command_line *line, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *name = NULL, *value;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      line->print_usage(stdout);
      return 0;
    }
    size_t f = 0;
    while (f < line->n_flags && !(name = match(&line->flags[f], argc, argv, &i, &value))) f++;
    if (name) {
      int status = take(line, &line->flags[f], name, value);
      if (status) return status;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return memviz_usage_error(line->command, "unknown flag '%s'", arg);
    } else if (*line->input) {
      return memviz_usage_error(line->command, "unexpected argument '%s': give one %s", arg, line->input_name);
    } else {
      *line->input = arg;
    }
  }
  return -1;
}

/* The table engine of every command line (fsdp/flags.h): values read by kind into the
 * field a row names, --help written from the same rows. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/flags.h"

/* ---- values ---- */

/* A bad command line or value: the job ends as fsdp_fatal ends it, or (p's usage_status,
 * a command run without MPI) with that status. p NULL: a FLAG_CUSTOM parse function's. */
__attribute__((format(printf, 2, 3))) static _Noreturn void usage_error(const struct flag_parser *p,
                                                                         const char *fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  if (!p || !p->usage_status) fsdp_fatal("%s", message);
  fprintf(stderr, "fsdp: error: %s\n", message);
  exit(p->usage_status);
}


/* strtol and strtod skip leading blanks; a value with them is a typo, not a number. */
static int starts_like_number(const char *text) { return text[0] != '\0' && !isspace((unsigned char)text[0]); }

static int parse_int(const struct flag_parser *p, const char *flag, const char *text, int least) {
  char *end;
  errno = 0;
  long v = starts_like_number(text) ? strtol(text, &end, 10) : 0;
  if (!starts_like_number(text) || *end != '\0') usage_error(p, "%s: '%s' is not an integer", flag, text);
  if (errno == ERANGE || v > INT_MAX || v < INT_MIN)
    usage_error(p, "%s: '%s' is out of range (at most %d)", flag, text, INT_MAX);
  if (v < least && least == 1) usage_error(p, "%s: must be a positive integer, got '%s'", flag, text);
  if (v < least && least == 0) usage_error(p, "%s: must be a non-negative integer, got '%s'", flag, text);
  if (v < least) usage_error(p, "%s: must be an integer of at least %d, got '%s'", flag, least, text);
  return (int)v;
}

int flag_int(const char *flag, const char *text, int least) { return parse_int(NULL, flag, text, least); }

static uint64_t parse_u64(const struct flag_parser *p, const char *flag, const char *text) {
  /* strtoull accepts "-1" and wraps it around, so only digits are let through. */
  if (!isdigit((unsigned char)text[0])) usage_error(p, "%s: must be a non-negative integer, got '%s'", flag, text);
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (*end != '\0') usage_error(p, "%s: '%s' is not an integer", flag, text);
  if (errno == ERANGE) usage_error(p, "%s: '%s' is out of range", flag, text);
  return (uint64_t)v;
}

/* A finite float in range; strtod's nan and inf spellings are refused, as is a value only
 * a double can hold. Betas and fractions live in [0, 1): 1 would freeze a moment or leave
 * nothing. */
static float parse_float(const struct flag_parser *p, const char *flag, const char *text, enum flag_range range) {
  char *end;
  errno = 0;
  double v = starts_like_number(text) ? strtod(text, &end) : 0.0;
  if (!starts_like_number(text) || *end != '\0') usage_error(p, "%s: '%s' is not a number", flag, text);
  if (errno == ERANGE) usage_error(p, "%s: '%s' is out of range", flag, text);
  if (!isfinite(v)) usage_error(p, "%s: must be a finite number, got '%s'", flag, text);
  if (!isfinite((float)v)) usage_error(p, "%s: '%s' is out of range", flag, text);
  float f = (float)v;
  /* Read as 0 it would be taken for 0 (--val-fraction 1e-300: validation off, unsaid). */
  if (v != 0.0 && f == 0.0f) usage_error(p, "%s: '%s' is too small for fp32 (it reads as 0)", flag, text);
  if (range == FLAG_POSITIVE && !(f > 0.0f)) usage_error(p, "%s: must be positive, got '%s'", flag, text);
  if (range == FLAG_NONNEGATIVE && f < 0.0f) usage_error(p, "%s: must be non-negative, got '%s'", flag, text);
  if (range == FLAG_UNIT_INTERVAL && (f < 0.0f || f >= 1.0f))
    usage_error(p, "%s: must be in [0, 1), got '%s'", flag, text);
  return f;
}

/* BYTES, or a number with KB, MB, GB (powers of 1000, as transformers counts) or KiB,
 * MiB, GiB (of 1024). */
static uint64_t parse_size(const struct flag_parser *p, const char *flag, const char *text) {
  static const struct {
    const char *suffix;
    uint64_t scale;
  } UNITS[] = {{"", 1}, {"B", 1}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000},
               {"KiB", 1u << 10}, {"MiB", 1u << 20}, {"GiB", 1u << 30}};
  char *end;
  errno = 0;
  unsigned long long v = isdigit((unsigned char)text[0]) ? strtoull(text, &end, 10) : 0;
  if (!isdigit((unsigned char)text[0]) || errno == ERANGE)
    usage_error(p, "%s: '%s' is not a size (BYTES, or a number with KB, MB, GB, KiB, MiB or GiB)", flag, text);
  for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
    if (strcmp(end, UNITS[i].suffix) == 0) {
      if (v == 0 || v > UINT64_MAX / UNITS[i].scale) usage_error(p, "%s: '%s' must be positive and in range", flag, text);
      return v * UNITS[i].scale;
    }
  usage_error(p, "%s: '%s' is not a size (BYTES, or a number with KB, MB, GB, KiB, MiB or GiB)", flag, text);
}

double flag_quantity(const char *flag, const char *text, const struct flag_unit *units, size_t n, const char *form) {
  char *end;
  double v = starts_like_number(text) ? strtod(text, &end) : 0;
  if (!starts_like_number(text) || end == text)
    usage_error(NULL, "%s: '%s' is not a number with a unit (%s)", flag, text, form);
  if (!*end) usage_error(NULL, "%s: '%s' has no unit (%s)", flag, text, form);
  for (size_t i = 0; i < n; i++)
    if (strcmp(end, units[i].suffix) == 0) {
      if (!(v > 0) || !isfinite(v * units[i].scale))
        usage_error(NULL, "%s: '%s' must be positive and finite", flag, text);
      return v * units[i].scale;
    }
  usage_error(NULL, "%s: '%s': unknown unit '%s' (%s)", flag, text, end, form);
}

int flag_name_index(const char *const *names, size_t n, const char *text) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(text, names[i]) == 0) return (int)i;
  return -1;
}

static _Noreturn void unknown_name(const struct flag_parser *p, const char *flag, const char *what,
                                   const char *const *names, size_t n, const char *text) {
  char known[256] = "";
  for (size_t i = 0; i < n; i++) {
    if (i > 0) strncat(known, ", ", sizeof known - strlen(known) - 1);
    strncat(known, names[i], sizeof known - strlen(known) - 1);
  }
  usage_error(p, "%s: unknown %s '%s' (known: %s)", flag, what, text, known);
}

_Noreturn void flag_unknown_name(const char *flag, const char *what, const char *const *names, size_t n,
                                 const char *text) {
  unknown_name(NULL, flag, what, names, n, text);
}

void flag_int_pair(const char *flag, const char *text, char sep, int least, const char *form, int *a, int *b) {
  const char *at = strchr(text, sep);
  if (!at) usage_error(NULL, "%s: expected %s, got '%s'", flag, form, text);
  char first[32];
  size_t n = (size_t)(at - text);
  if (n >= sizeof first) usage_error(NULL, "%s: '%s' is not %s", flag, text, form);
  memcpy(first, text, n);
  first[n] = '\0';
  *a = flag_int(flag, first, least);
  *b = flag_int(flag, at + 1, least);
}

static size_t count_names(const char *const *names) {
  size_t n = 0;
  while (names[n]) n++;
  return n;
}

void flag_apply(const struct flag_parser *p, void *options, const struct flag_arg *a) {
  const struct flag *f = a->flag;
  void *field = (char *)options + f->offset;
  const char *v = a->value;
  switch (f->kind) {
    case FLAG_TEXT: *(const char **)field = v; break;
    case FLAG_INT: *(int *)field = parse_int(p, f->name, v, f->min); break;
    case FLAG_U64: *(uint64_t *)field = parse_u64(p, f->name, v); break;
    case FLAG_FLOAT: *(float *)field = parse_float(p, f->name, v, (enum flag_range)f->min); break;
    case FLAG_SIZE: *(uint64_t *)field = parse_size(p, f->name, v); break;
    case FLAG_CHOICE:
    case FLAG_ENUM: {
      size_t n = count_names(f->names);
      int i = flag_name_index(f->names, n, v);
      if (i < 0) unknown_name(p, f->name, f->what, f->names, n, v);
      if (f->kind == FLAG_CHOICE)
        *(const char **)field = f->names[i];
      else
        *(int *)field = i;
      break;
    }
    case FLAG_CUSTOM: f->parse(field, f->name, v); break;
  }
}

/* ---- the command line ---- */

static int takes(const struct flag_parser *p, const struct flag *f) {
  return !p->command_bit || (f->commands & p->command_bit) != 0;
}

static const struct flag *find_flag(const struct flag_parser *p, const char *name, size_t name_len) {
  for (size_t i = 0; i < p->n_flags; i++) {
    const struct flag *f = &p->flags[i];
    if (!takes(p, f)) continue;
    if (strlen(f->name) == name_len && strncmp(f->name, name, name_len) == 0) return f;
    if (f->alias && strlen(f->alias) == name_len && strncmp(f->alias, name, name_len) == 0) return f;
  }
  return NULL;
}

static int is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

/* Reads argv into (flag, value) pairs and arguments; returns 0, or 1 when --help was asked
 * for. A value is either after '=' or the next argument; a next argument that is itself a
 * flag means the value was forgotten. "-" alone is an argument (standard input's name). */
static int collect(const struct flag_parser *p, int argc, char **argv, struct flag_parse *out) {
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (is_help(arg)) return 1;
    if (arg[0] != '-' || strcmp(arg, "-") == 0) {
      if (!p->arguments) usage_error(p, "unexpected argument '%s' (see fsdp %s --help)", arg, p->command);
      if (p->max_arguments && out->n_arguments == p->max_arguments)
        usage_error(p, "unexpected argument '%s': give one %s (see fsdp %s --help)", arg, p->arguments, p->command);
      out->arguments[out->n_arguments++] = argv[i];
      continue;
    }
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    const struct flag *flag = find_flag(p, arg, name_len);
    if (!flag) usage_error(p, "unknown flag '%.*s' (see fsdp %s --help)", (int)name_len, arg, p->command);
    const char *value;
    if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) usage_error(p, "%s: missing value", flag->name);
      value = argv[++i];
    }
    if (value[0] == '\0') usage_error(p, "%s: the value is empty", flag->name);
    out->given[out->n_given++] = (struct flag_arg){flag, value};
  }
  return 0;
}

static void check_required(const struct flag_parser *p, const struct flag_parse *r) {
  for (size_t i = 0; i < p->n_flags; i++) {
    const struct flag *f = &p->flags[i];
    if (!takes(p, f) || f->def.kind != FLAG_DEFAULT_REQUIRED) continue;
    int given = 0;
    for (int a = 0; a < r->n_given; a++) given |= r->given[a].flag == f;
    if (!given) usage_error(p, "%s is required (see fsdp %s --help)", f->name, p->command);
  }
}

static int is_first(const struct flag_parser *p, const struct flag *f) {
  return p->first && strcmp(f->name, p->first) == 0;
}

void flags_parse(const struct flag_parser *p, void *options, int argc, char **argv, struct flag_parse *out) {
  memset(out, 0, sizeof *out);
  int n = argc > 1 ? argc - 1 : 0;
  out->given = fsdp_xcalloc((size_t)n + 1, sizeof *out->given);
  out->arguments = fsdp_xcalloc((size_t)n + 1, sizeof *out->arguments);
  out->help = collect(p, n, argv + 1, out);
  if (out->help) return;
  for (size_t i = 0; i < p->n_flags; i++)
    if (takes(p, &p->flags[i]) && p->flags[i].def.kind == FLAG_DEFAULT_VALUE)
      flag_apply(p, options, &(struct flag_arg){&p->flags[i], p->flags[i].def.text});
  for (int i = 0; i < out->n_given; i++)
    if (is_first(p, out->given[i].flag)) flag_apply(p, options, &out->given[i]);
  for (int i = 0; i < out->n_given; i++)
    if (!is_first(p, out->given[i].flag)) flag_apply(p, options, &out->given[i]);
  check_required(p, out);
}

void flag_parse_free(struct flag_parse *r) {
  free(r->given);
  free(r->arguments);
  memset(r, 0, sizeof *r);
}

/* ---- --help ---- */

enum { HELP_INDENT = 2, HELP_TEXT_COLUMN = 32, HELP_WIDTH = 100 };

/* Writes word at column of a wrapped entry, first starting a new line when it would
 * pass HELP_WIDTH; returns the column after it. */
static int put_word(int column, const char *word, int len) {
  if (column > HELP_TEXT_COLUMN && column + 1 + len > HELP_WIDTH) {
    printf("\n%*s", HELP_TEXT_COLUMN, "");
    column = HELP_TEXT_COLUMN;
  } else if (column > HELP_TEXT_COLUMN) {
    column += printf(" ");
  }
  return column + printf("%.*s", len, word);
}

static int put_words(int column, const char *text) {
  for (const char *word = text + strspn(text, " "); *word; word += strspn(word, " ")) {
    int len = (int)strcspn(word, " ");
    column = put_word(column, word, len);
    word += len;
  }
  return column;
}

/* "  LEFT    TEXT TAIL": TEXT word-wrapped in a column of its own, TAIL (the default)
 * kept whole where a line holds it; a LEFT too wide for its column puts the rest on the
 * next line. */
static void print_entry(const char *left, const char *text, const char *tail) {
  int column = printf("%*s%s", HELP_INDENT, "", left);
  if (column > HELP_TEXT_COLUMN - 2) {
    printf("\n");
    column = 0;
  }
  column += printf("%*s", HELP_TEXT_COLUMN - column, "");
  column = put_words(column, text);
  if (tail && strlen(tail) <= HELP_WIDTH - HELP_TEXT_COLUMN)
    put_word(column, tail, (int)strlen(tail));
  else if (tail)
    put_words(column, tail);
  printf("\n");
}

static void print_flag(const struct flag *f) {
  char left[64], text[768], tail[256];
  snprintf(left, sizeof left, "%s%s%s %s", f->alias ? f->alias : "", f->alias ? ", " : "", f->name, f->metavar);
  snprintf(text, sizeof text, "%s%s%s", f->help, f->help_more ? " " : "", f->help_more ? f->help_more() : "");
  const char *t = tail;
  switch (f->def.kind) {
    case FLAG_DEFAULT_VALUE: snprintf(tail, sizeof tail, "(default %s)", f->def.text); break;
    case FLAG_DEFAULT_NOTE: snprintf(tail, sizeof tail, "(default: %s)", f->def.text); break;
    case FLAG_DEFAULT_REQUIRED: snprintf(tail, sizeof tail, "(required)"); break;
    case FLAG_NO_DEFAULT: t = NULL; break;
  }
  print_entry(left, text, t);
}

static void print_usage(const struct flag_parser *p) {
  if (p->usage) {
    printf("usage: fsdp %s\n", p->usage);
    return;
  }
  printf("usage: fsdp %s", p->command);
  for (size_t i = 0; i < p->n_flags; i++)
    if (takes(p, &p->flags[i]) && p->flags[i].def.kind == FLAG_DEFAULT_REQUIRED)
      printf(" %s %s", p->flags[i].name, p->flags[i].metavar);
  printf(" [options]%s%s   (flags take '--flag VALUE' or '--flag=VALUE')\n", p->arguments ? " " : "",
         p->arguments ? p->arguments : "");
}

void flags_print_help(const struct flag_parser *p) {
  print_usage(p);
  if (p->intro) printf("\n%s", p->intro);
  const char *section = "";
  for (size_t i = 0; i < p->n_flags; i++) {
    const struct flag *f = &p->flags[i];
    if (!takes(p, f)) continue;
    if (!section || !f->section || strcmp(f->section, section) != 0) {
      if (f->section)
        printf("\n%s:\n", f->section);
      else if (section)
        printf("\n");
      section = f->section;
    }
    print_flag(f);
  }
  print_entry("-h, --help", "this text", NULL);
  if (p->outro) printf("\n%s", p->outro);
}

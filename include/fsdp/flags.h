/* Command lines read through a table of flags (src/core/flags.c): a row holds a flag's
 * name, the commands that take it, what --help shows of it, and the field its value goes
 * to (offsetof into the command's options) with the kind of value it is, so that the
 * parser and --help cannot disagree. Parsing runs in three steps: collect (flag, value)
 * pairs, checking names and that each flag has a value ("--flag VALUE" or
 * "--flag=VALUE"); apply the defaults, then the flag the table says goes first, then the
 * rest in order; check the required ones. Every bad input ends the job with a message
 * that names the flag. */
#ifndef FSDP_FLAGS_H
#define FSDP_FLAGS_H

#include <stddef.h>

/* What a flag's value is, and where it goes. */
enum flag_kind {
  FLAG_TEXT,   /* any text (a path): const char * */
  FLAG_INT,    /* an int from min up: int */
  FLAG_U64,    /* a non-negative integer: uint64_t */
  FLAG_FLOAT,  /* a finite number in range (enum flag_range): float */
  FLAG_CHOICE, /* one of names: const char *, the name */
  FLAG_ENUM,   /* one of names: int, its index */
  FLAG_SIZE,   /* bytes, or a number with KB, MB, GB (10^3 ...) or KiB, MiB, GiB (2^10 ...): uint64_t */
  FLAG_CUSTOM, /* parse(field, flag, value) checks and stores it */
};
enum flag_range { FLAG_ANY, FLAG_POSITIVE, FLAG_NONNEGATIVE, FLAG_UNIT_INTERVAL /* [0, 1) */ };

/* A value default goes through the flag's own kind before the command line is read, so
 * --help cannot show a default the options do not start from. A note stands for a
 * default that is no value (none) or that the command resolves after parsing. */
enum flag_default_kind { FLAG_NO_DEFAULT, FLAG_DEFAULT_VALUE, FLAG_DEFAULT_NOTE, FLAG_DEFAULT_REQUIRED };
struct flag_default {
  enum flag_default_kind kind;
  const char *text;
};
#define FLAG_DEFAULT(value) {FLAG_DEFAULT_VALUE, value}
#define FLAG_NOTE(text) {FLAG_DEFAULT_NOTE, text}
#define FLAG_REQUIRED {FLAG_DEFAULT_REQUIRED, NULL}
#define FLAG_NONE {FLAG_NO_DEFAULT, NULL}

typedef void flag_parse_fn(void *field, const char *flag, const char *value);

struct flag {
  const char *section; /* the heading --help lists it under, or NULL */
  const char *name;    /* "--output" */
  unsigned commands;   /* the commands that take it, a bit each (struct flag_parser's command) */
  const char *metavar;
  struct flag_default def;
  enum flag_kind kind;
  size_t offset;       /* of its field in the options */
  int min;             /* FLAG_INT: the least value; FLAG_FLOAT: its enum flag_range */
  const char *const *names; /* FLAG_CHOICE, FLAG_ENUM: the values, NULL-terminated */
  const char *what;         /* FLAG_CHOICE, FLAG_ENUM: what a value is, for "unknown WHAT 'x'" */
  flag_parse_fn *parse;     /* FLAG_CUSTOM */
  const char *help;
  const char *alias;                /* another spelling ("-o"), or NULL */
  const char *(*help_more)(void);   /* more help known only at run time (the model presets), or NULL */
};

/* The value part of a row: FLAG_INT_OF(struct opts, steps, 1) and so on. */
#define FLAG_TEXT_OF(type, field) .kind = FLAG_TEXT, .offset = offsetof(type, field)
#define FLAG_INT_OF(type, field, least) .kind = FLAG_INT, .offset = offsetof(type, field), .min = (least)
#define FLAG_U64_OF(type, field) .kind = FLAG_U64, .offset = offsetof(type, field)
#define FLAG_FLOAT_OF(type, field, range) .kind = FLAG_FLOAT, .offset = offsetof(type, field), .min = (range)
#define FLAG_CHOICE_OF(type, field, noun, values) \
  .kind = FLAG_CHOICE, .offset = offsetof(type, field), .names = (values), .what = (noun)
#define FLAG_ENUM_OF(type, field, noun, values) \
  .kind = FLAG_ENUM, .offset = offsetof(type, field), .names = (values), .what = (noun)
#define FLAG_SIZE_OF(type, field) .kind = FLAG_SIZE, .offset = offsetof(type, field)
#define FLAG_CUSTOM_OF(type, field, fn) .kind = FLAG_CUSTOM, .offset = offsetof(type, field), .parse = (fn)

/* A command's table and how its command line reads. */
struct flag_parser {
  const char *command;      /* "train": messages say "see fsdp train --help" */
  const struct flag *flags;
  size_t n_flags;
  unsigned command_bit;     /* the rows whose commands hold it are this command's; 0: every row */
  const char *first;        /* a flag applied before the others whatever the order (--model), or NULL */
  const char *arguments;    /* what the arguments that are not flags are ("FILE..."), or NULL: none taken */
  int max_arguments;        /* at most this many of them; 0: any number */
  int usage_status;         /* a usage error's exit status: 0 ends the job as fsdp_fatal does (1) */
  const char *usage;        /* --help's usage line after "usage: fsdp ", or NULL: made from the table */
  const char *intro, *outro; /* --help's text before and after the flags, or NULL */
};

/* A flag given, with its value. */
struct flag_arg {
  const struct flag *flag;
  const char *value;
};

struct flag_parse {
  struct flag_arg *given; /* the flags given, in the command line's order */
  int n_given;
  char **arguments;       /* the arguments that are not flags */
  int n_arguments;
  int help;               /* --help or -h was given: nothing was parsed */
};

/* Reads argv (argv[0] is the command's name) into options, whose fields the rows' offsets
 * name: the defaults, then the flags given. out holds what was given (flag_parse_free). */
void flags_parse(const struct flag_parser *p, void *options, int argc, char **argv, struct flag_parse *out);
void flag_parse_free(struct flag_parse *r);
/* One flag's value into options, as flags_parse applies it (to a copy, to see what a flag
 * would make). */
void flag_apply(const struct flag_parser *p, void *options, const struct flag_arg *a);
/* The usage line, the intro, every row of the command by section, and the outro. */
void flags_print_help(const struct flag_parser *p);

/* For a FLAG_CUSTOM parse function: the index of text in names (n of them), or -1. */
int flag_name_index(const char *const *names, size_t n, const char *text);
/* Ends the job: "FLAG: unknown WHAT 'TEXT' (known: NAME, NAME, ...)". */
_Noreturn void flag_unknown_name(const char *flag, const char *what, const char *const *names, size_t n,
                                 const char *text);
/* Values a FLAG_CUSTOM parse function reads: as the kinds read them, ending the job with a
 * message naming flag when text is not one. */
int flag_int(const char *flag, const char *text, int least);
/* A positive number followed at once by one of n units ("900GB/s", "2us"), in the units'
 * common measure: the number times its unit's scale. form says what is expected in a
 * message ("a rate such as 50GB/s or 400Gb/s"). */
struct flag_unit {
  const char *suffix;
  double scale;
};
double flag_quantity(const char *flag, const char *text, const struct flag_unit *units, size_t n, const char *form);
/* "A<sep>B", both integers from least up ("2:4", "2,4"); form says what is expected in a
 * message ("FIRST:LAST (e.g. 2:4)"). */
void flag_int_pair(const char *flag, const char *text, char sep, int least, const char *form, int *a, int *b);

#endif

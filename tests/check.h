/* The checks of the test programs. A failed check prints where it is and what
 * failed, counts the failure and lets the test go on, so that one run reports
 * every broken case; main then exits by the count. */
#ifndef FSDP_TESTS_CHECK_H
#define FSDP_TESTS_CHECK_H

#include <stdio.h>

/* Each test program is one translation unit, so these are the program's own. */
static long check_count; /* long: a check in a loop over elements runs millions of times */
static int check_failures;
/* MPI tests set it after comm_init so that failures name their rank (-1: none);
 * asking MPI here would tie the tests that link no MPI to it. */
static int check_rank = -1;
/* What the test is on, when one check runs over several cases (NULL: none). */
static const char *check_context;

/* Counts the failure and starts its line: "FAIL file:line[ rank R][ (context)]: ". */
static inline void check_failed_(const char *file, int line) {
  check_failures++;
  fprintf(stderr, "FAIL %s:%d", file, line);
  if (check_rank >= 0) fprintf(stderr, " rank %d", check_rank);
  if (check_context) fprintf(stderr, " (%s)", check_context);
  fputs(": ", stderr);
}

/* A failure prints the expression. */
#define CHECK(cond)                           \
  do {                                        \
    check_count++;                            \
    if (!(cond)) {                            \
      check_failed_(__FILE__, __LINE__);      \
      fprintf(stderr, "%s\n", #cond);         \
    }                                         \
  } while (0)

/* A failure prints the expression and a printf-style message, which gives the values. */
#define EXPECT(cond, ...) CHECK_MESSAGE_(cond, #cond, (void)0, __VA_ARGS__)
/* EXPECT that also returns from the (void) function: for checks whose failure would
 * repeat over a whole loop, or make the checks after it meaningless. */
#define ASSERT(cond, ...) CHECK_MESSAGE_(cond, #cond, return, __VA_ARGS__)
/* For what the test finds out by itself (a memcmp, a comparison it reports in its own
 * words): one failed check, printed with the message. */
#define FAIL(...)                             \
  do {                                        \
    check_count++;                            \
    check_failed_(__FILE__, __LINE__);        \
    fprintf(stderr, __VA_ARGS__);             \
    fputc('\n', stderr);                      \
  } while (0)

/* EXPECT and ASSERT stringify cond themselves, so that it shows as written, before
 * its macros are expanded. */
#define CHECK_MESSAGE_(cond, text, then, ...) \
  do {                                        \
    check_count++;                            \
    if (!(cond)) {                            \
      check_failed_(__FILE__, __LINE__);      \
      fprintf(stderr, "%s: ", text);          \
      fprintf(stderr, __VA_ARGS__);           \
      fputc('\n', stderr);                    \
      then;                                   \
    }                                         \
  } while (0)

/* Prints "PROGRAM: N checks, M failed" and returns main's exit status. */
static inline int check_summary(const char *program) {
  printf("%s: %ld checks, %d failed\n", program, check_count, check_failures);
  return check_failures ? 1 : 0;
}

#endif

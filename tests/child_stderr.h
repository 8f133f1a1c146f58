/* Runs a call that is meant to end the process (fsdp_fatal) in a child, its stderr
 * captured: the tests of bad inputs check the exit status and the message. */
#ifndef FSDP_TESTS_CHILD_STDERR_H
#define FSDP_TESTS_CHILD_STDERR_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Calls fn(arg) in a child (returning from it exits 0) and puts the child's stderr into
 * message (size bytes, NUL-terminated, cut at size - 1); returns waitpid's status. A
 * failure to fork or pipe is a broken test run: exit 2. */
static inline int run_in_child(void (*fn)(const void *arg), const void *arg, char *message, size_t size) {
  int fds[2];
  if (pipe(fds) != 0) exit(2);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) exit(2);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    fn(arg);
    _exit(0);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t got;
  while (len + 1 < size && (got = read(fds[0], message + len, size - 1 - len)) > 0) len += (size_t)got;
  message[len] = '\0';
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  return status;
}

#endif

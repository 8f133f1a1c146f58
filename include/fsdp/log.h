/* Console logging, prefixed with the rank once the job has more than one. */
#ifndef FSDP_LOG_H
#define FSDP_LOG_H

void fsdp_log_set_rank(int rank, int world_size);
int fsdp_log_rank(void);
int fsdp_log_world_size(void);

/* Printed by rank 0 only, to stdout, or to stderr from fsdp_log_info_to_stderr on (a
 * command whose stdout is its result, such as `fsdp plan --format json`). */
void fsdp_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fsdp_log_info_to_stderr(void);

#endif

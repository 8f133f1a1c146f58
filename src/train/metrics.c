#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_outputs.h"
#include "fsdp/error.h"
#include "fsdp/log.h"

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* A last line without its newline (a run that ended writing it: a full disk, a kill) is
 * cut off, so that the lines appended after it are each one JSON object. */
static void drop_torn_line(FILE *f, const char *path) {
  int fd = fileno(f);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
  off_t end = st.st_size, keep = 0;
  char chunk[4096];
  for (off_t at = end; at > 0 && !keep;) {
    size_t n = at < (off_t)sizeof chunk ? (size_t)at : sizeof chunk;
    at -= (off_t)n;
    if (pread(fd, chunk, n, at) != (ssize_t)n) fsdp_fatal("--log: cannot read '%s': %s", path, strerror(errno));
    for (size_t i = n; i > 0 && !keep; i--)
      if (chunk[i - 1] == '\n') keep = at + (off_t)i;
    if (keep == end) return;
  }
  if (ftruncate(fd, keep) != 0) fsdp_fatal("--log: cannot cut '%s': %s", path, strerror(errno));
  fsdp_log_info("log: the last line of '%s' had no end (%lld bytes, of a run that ended writing it): cut off", path,
                (long long)(end - keep));
}

FILE *metrics_open_log(const char *path, int append) {
  if (!path) return NULL;
  FILE *f = fopen(path, append ? "a+" : "w"); /* a+: the torn line is read */
  if (!f) fsdp_fatal("--log: cannot open '%s' for writing: %s", path, strerror(errno));
  if (append) drop_torn_line(f, path);
  return f;
}

static void write_json_line(FILE *log, const char *log_path, const struct step_metrics *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "step", m->step);
  cJSON_AddNumberToObject(o, "world_size", m->world_size);
  cJSON_AddStringToObject(o, "setup", m->setup);
  cJSON_AddNumberToObject(o, "epoch", (double)m->epoch);
  cJSON_AddNumberToObject(o, "loss", m->loss);
  cJSON_AddNumberToObject(o, "grad_norm", m->grad_norm);
  cJSON_AddNumberToObject(o, "lr", m->lr);
  cJSON_AddNumberToObject(o, "step_ms", m->step_ms);
  cJSON_AddNumberToObject(o, "tokens_per_s", m->tokens_per_s);
  cJSON_AddNumberToObject(o, "data_ms", m->data_ms);
  cJSON_AddNumberToObject(o, "gflops", m->gflops);
  cJSON_AddNumberToObject(o, "tflops", m->gflops / 1e3);
  if (!isnan(m->mfu)) cJSON_AddNumberToObject(o, "mfu", m->mfu);
  if (m->threads_per_rank) cJSON_AddNumberToObject(o, "threads_per_rank", m->threads_per_rank);
  if (!isnan(m->comm_ms)) { /* the cuda streams are not timed yet */
    cJSON_AddNumberToObject(o, "comm_ms", m->comm_ms);
    cJSON_AddNumberToObject(o, "all_gather_ms", m->all_gather_ms);
    cJSON_AddNumberToObject(o, "reduce_scatter_ms", m->reduce_scatter_ms);
    cJSON_AddNumberToObject(o, "replicate_all_reduce_ms", m->replicate_ms);
    cJSON_AddNumberToObject(o, "exposed_comm_ms", m->exposed_comm_ms);
  }
  cJSON_AddNumberToObject(o, "minor_faults", (double)m->minor_faults);
  cJSON_AddNumberToObject(o, "mem_peak_bytes", (double)m->mem_peak_bytes);
  cJSON_AddNumberToObject(o, "mem_peak_bytes_rank0", (double)m->mem.total_peak);
  if (m->validated) cJSON_AddNumberToObject(o, "val_loss", m->val_loss); /* null where NaN, as loss */
  if (m->loss_scale > 0.0) {
    cJSON_AddNumberToObject(o, "loss_scale", m->loss_scale);
    cJSON_AddBoolToObject(o, "skipped", m->skipped);
  }
  cJSON *categories = cJSON_AddObjectToObject(o, "mem_peak_bytes_by_category");
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
    cJSON_AddNumberToObject(categories, mem_category_name(c), (double)m->mem.peak[c]);
  /* The host's pinned memory (--offload cpu) apart from the device's, never added to it. */
  if (m->host_mem.total_peak) {
    cJSON_AddNumberToObject(o, "mem_host_peak_bytes_rank0", (double)m->host_mem.total_peak);
    cJSON *host = cJSON_AddObjectToObject(o, "mem_host_peak_bytes_by_category");
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
      cJSON_AddNumberToObject(host, mem_category_name(c), (double)m->host_mem.peak[c]);
  }
  char *text = cJSON_PrintUnformatted(o);
  if (!text || fprintf(log, "%s\n", text) < 0 || fflush(log) != 0)
    fsdp_fatal("--log: cannot write to '%s': %s", log_path, strerror(errno));
  cJSON_free(text);
  cJSON_Delete(o);
}

void metrics_report_step(FILE *log, const char *log_path, const struct step_metrics *m) {
  char val[48] = "", scale[64] = "", host[48] = "", mfu[32] = "", rate[32], comm[64] = "comm not timed";
  if (m->validated) snprintf(val, sizeof val, " | val loss %.4f", m->val_loss);
  if (!isnan(m->mfu)) snprintf(mfu, sizeof mfu, ", MFU %.1f%%", 100.0 * m->mfu);
  /* A thousand GFLOP/s and more (a GPU's rates) read in TFLOP/s. */
  if (m->gflops >= 1e3)
    snprintf(rate, sizeof rate, "%.1f TFLOP/s", m->gflops / 1e3);
  else
    snprintf(rate, sizeof rate, "%.0f GFLOP/s", m->gflops);
  if (!isnan(m->comm_ms)) snprintf(comm, sizeof comm, "comm %.1f ms, exposed %.1f ms", m->comm_ms, m->exposed_comm_ms);
  if (m->host_mem.total_peak) snprintf(host, sizeof host, " | host (pinned) %.1f MiB", mib(m->host_mem.total_peak));
  if (m->loss_scale > 0.0) snprintf(scale, sizeof scale, " | loss scale %g%s", m->loss_scale, m->skipped ? ", skipped" : "");
  fsdp_log_info("step %5d/%d | loss %.4f | grad norm %.4f | lr %.3e | %.1f ms | %.0f tok/s | %s%s | %s | "
                "peak %.1f MiB/rank%s%s | epoch %lld%s",
                m->step, m->steps, m->loss, m->grad_norm, m->lr, m->step_ms, m->tokens_per_s, rate, mfu, comm,
                mib(m->mem_peak_bytes), host, scale, m->epoch, val);
  if (log) write_json_line(log, log_path, m);
}

void metrics_print_memory(const char *when, const struct mem_stats *s, int peak) {
  char line[512];
  int n = snprintf(line, sizeof line, "memory %s (rank 0, %s MiB):", when, peak ? "peak" : "current");
  for (int c = 0; c < MEM_NUM_CATEGORIES && n < (int)sizeof line; c++) {
    size_t bytes = peak ? s->peak[c] : s->current[c];
    if (bytes) n += snprintf(line + n, sizeof line - (size_t)n, " %s %.2f", mem_category_name(c), mib(bytes));
  }
  if (n < (int)sizeof line)
    snprintf(line + n, sizeof line - (size_t)n, " | total %.2f", mib(peak ? s->total_peak : s->total_current));
  fsdp_log_info("%s", line);
}

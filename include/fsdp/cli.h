/* The `fsdp` command: options of `fsdp train`, token data, metrics. */
#ifndef FSDP_CLI_H
#define FSDP_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fsdp/memory.h"

#include "fsdp/model.h"
#include "fsdp/runtime.h"

/* Gradient accumulation over micro-batches: reduce-scatter each one and add into the
 * sharded gradient, or keep the unsharded gradients and reduce once at the end. */
enum accum_mode { ACCUM_SHARDED, ACCUM_NO_SYNC };

struct train_options {
  const char *model;           /* preset name */
  const struct model_family *family; /* the preset's */
  struct model_config config;  /* preset, then overridden by --n-layer etc. */
  int seq_len;                 /* T */
  int batch_size;              /* sequences per rank per step (B) */
  int global_batch_size;       /* 0, or sequences per step over all ranks (must divide by W) */
  int steps;
  float lr, min_lr, weight_decay, grad_clip, beta1, beta2, eps;
  int warmup;
  uint64_t seed;
  const char *data;            /* files, globs and folders, comma-separated (src/cli/data_set.h) */
  const char *data_format;     /* auto, text, nanogpt, llmc; NULL where the command reads no data */
  const char *val_data;        /* train only: the validation shards, as --data; or NULL */
  const char *data_io;         /* train, eval: pread or mmap, how a rank reads its windows */
  int data_changed;            /* train only: --data-changed accept: resume on another data set */
  float val_fraction;          /* 0 with --val-data */
  int val_every;
  int val_batches;
  const char *log_path;
  enum sharding_strategy sharding;
  struct fsdp_wrap_policy wrap;
  struct fsdp_overlap overlap;
  const char *trace_path;
  int trace_first, trace_last; /* steps, from 1 */
  int ac_every;                /* 0 none, 1 every block, K every K-th */
  struct fsdp_mixed_precision mp;
  float loss_scale;            /* fp16: the initial dynamic loss scale; else 0 */
  int grad_accum;              /* micro-batches per step */
  enum accum_mode accum_mode;
  const char *snapshot_path;
  int snapshot_first, snapshot_last;
  int world_size;              /* plan only */
  const char *format;          /* plan only: text or json */
  const char *cuda_arch;       /* plan only: the GPU arch a cuda plan is for ("sm_86"), or NULL */
  const char *device;          /* cpu or cuda: where the model computes */
  int offload_cpu;             /* cuda only: the sharded state in pinned host memory (--offload cpu) */
  const char *init_from;       /* Hugging Face safetensors the parameters start from, or NULL */
  const char *checkpoint;      /* eval, export, sample: a training checkpoint's directory, or NULL */
  int batches;                 /* eval only: batches of batch_size windows */
  const char *output;          /* export only: the folder written */
  enum dtype export_dtype;     /* export only: of the tensors written */
  uint64_t max_file_bytes;     /* export only: the size above which the safetensors are split */
  const char *checkpoint_dir;  /* NULL: no checkpoints are written */
  int checkpoint_every;        /* steps between checkpoints; 0: only after the last step */
  int keep_last;               /* complete checkpoints kept; 0: all */
  const char *resume;          /* NULL, "auto" (newest complete in checkpoint_dir) or a checkpoint directory */
  const char *prompt;          /* sample only: text, its bytes the tokens (a byte-level model) */
  int *prompt_ids;             /* sample only: --prompt-tokens, n_prompt_ids of them (owned) */
  int n_prompt_ids;
  int max_new_tokens;          /* sample only */
  float temperature;           /* sample only: 0 is greedy */
  int top_k;                   /* sample only: 0 keeps every token */
  const char *tokenizer;       /* train, eval: a tokenizer.json that --data is text for; sample: a tokenizer.json or
                                  llm.c's GPT-2 tokenizer file; or NULL */
  float comm_timeout;          /* seconds a collective may take before the watchdog ends the job */
  int mesh_replicate, mesh_shard; /* HSDP's mesh (R, S), R·S = W; 0, 0: (1, W) */
  int ranks_per_node;          /* plan only: for the traffic within and between nodes; 0: S */
  float peak_gflops;           /* train only: a rank's peak for the MFU; 0: measured (cpu) or unknown */
};

/* train and plan take the same model, batch and sharding flags; plan adds
 * --world-size and --format and needs no --data. eval, export and sample take the model
 * flags and --init-from; eval the data and batch flags and --batches, export --output,
 * sample the prompt and the sampling flags. */
enum options_command { OPTIONS_TRAIN, OPTIONS_PLAN, OPTIONS_EVAL, OPTIONS_EXPORT, OPTIONS_SAMPLE };

/* Fills defaults, then parses argv (argv[0] is the command name, "train"); ends
 * the job with a message naming the flag on any bad input. Returns 1 when --help
 * was printed. */
int train_options_parse(enum options_command command, struct train_options *o, int argc, char **argv);
void train_options_print_help(enum options_command command);
/* --mesh resolved for world_size ranks: (1, W) when not given; ends the job, naming
 * --mesh, when R·S is not world_size. */
void train_options_mesh(const struct train_options *o, int world_size, int *replicate, int *shard);
/* B: --batch-size, or --global-batch-size / (world_size * --grad-accum), which must divide. */
int train_options_batch_per_rank(const struct train_options *o, int world_size);

/* Where tokens come from: a file of bytes, of nanoGPT's uint16, of llm.c's (a header,
 * then uint16 or uint32), or text through --tokenizer. */
enum token_format { TOKENS_TEXT, TOKENS_NANOGPT, TOKENS_LLMC, TOKENS_TOKENIZED };

struct token_data {
  void *tokens; /* n_tokens ids of `width` bytes each: the file's own width, so that a */
  int width;    /* GPT-2 corpus takes 2 bytes a token and a Llama 3 one 4 */
  size_t n_tokens;
  enum token_format format;
};

/* Token i of an array of `width`-byte ids (1, 2 or 4). */
static inline uint32_t token_at(const void *tokens, int width, size_t i) {
  return width == 1 ? ((const uint8_t *)tokens)[i]
         : width == 2 ? ((const uint16_t *)tokens)[i]
                      : ((const uint32_t *)tokens)[i];
}

/* Loads a whole token file into memory (format "auto" decides by content: an llm.c
 * magic, else the .bin suffix for nanoGPT, else text; a header shaped like llm.c's that
 * is none of its token files is refused) and checks every token id against vocab_size;
 * every problem ends the job with a message naming the file. Training and eval stream
 * their shards instead (src/cli/data_set.h). */
void token_data_load(struct token_data *d, const char *path, const char *format, int vocab_size);
/* Reads the text file at path as one document (text_data.c): the tokenizer's document
 * token, then the text's ids; the tokenizer (a tokenizer.json) must fit vocab_size. */
void token_data_tokenize(struct token_data *d, const char *path, const char *tokenizer, int vocab_size);
/* Ends the job, naming path and the position, at the first id at or above vocab_size. */
void token_data_check_vocab(const struct token_data *d, const char *path, int vocab_size);
void token_data_free(struct token_data *d);

/* What one training step reports: a console line, and a JSON line in the --log file. */
struct step_metrics {
  int step, steps;
  double loss, grad_norm, lr, step_ms, tokens_per_s;
  double data_ms;            /* this rank's time reading the step's windows (data_loader.c), within step_ms */
  double gflops, mfu;        /* the step's model FLOPs (all ranks) per second, over the peak (NAN: unknown) */
  /* comm_ms: the all-gather, reduce-scatter and (HSDP) replicate streams' busy time,
   * added up; exposed_comm_ms: the compute thread's time blocked waiting for them. */
  double comm_ms, all_gather_ms, reduce_scatter_ms, replicate_ms, exposed_comm_ms;
  double val_loss;           /* NAN when not evaluated this step */
  double loss_scale;         /* fp16: the dynamic loss scale the step ran with; else 0 */
  long minor_faults;         /* this rank's page faults in the step (getrusage) */
  int skipped;               /* fp16: the gradients overflowed and no update was made */
  long long epoch;           /* the epoch of the step's first window, from 0 (0 without data) */
  size_t mem_peak_bytes;     /* the largest peak of any rank */
  int stop_signal;           /* a signal that asked the job to stop, on any rank (0: none) */
  struct mem_stats mem;      /* this rank's, by category */
  /* This rank's host memory apart from the device's (the pinned sharded state under
   * --offload cpu); all zero when the device is the cpu itself. */
  struct mem_stats host_mem;
};

/* Opens the JSON-lines log for writing, or for appending (a resumed run); NULL path: no
 * log. A failure names the file. */
FILE *metrics_open_log(const char *path, int append);
void metrics_report_step(FILE *log, const char *log_path, const struct step_metrics *m);
/* One console line: current (or peak) bytes per category. */
void metrics_print_memory(const char *when, const struct mem_stats *s, int peak);

struct comm_group;
/* For --trace, on rank 0 before training: ends the job now, with the reason, when the
 * trace could not be written there later. */
void trace_file_check_writable(const char *path);
/* Collective over the group: every rank's recorded events (include/fsdp/trace.h) go
 * into one Chrome trace JSON file on rank 0, one process per rank and one thread per
 * track, written to a temporary name and renamed. Call it with recording off and every
 * stream idle; the events are left in place. A failure ends the job naming --trace. */
void trace_file_write(const char *path, struct comm_group *group);

/* For --memory-snapshot, on rank 0 before training, as trace_file_check_writable. */
void memory_snapshot_check_writable(const char *path);
/* Collective, as trace_file_write: every rank's recorded memory events
 * (mem_snapshot_events) of steps first..last go into one JSON file on rank 0
 * (docs/architecture.md, "Memory snapshots"), which `fsdp memviz` draws. */
void memory_snapshot_write(const char *path, struct comm_group *group, int first_step, int last_step);

int fsdp_train_main(int argc, char **argv);
int fsdp_plan_main(int argc, char **argv);
int fsdp_eval_main(int argc, char **argv);
int fsdp_export_main(int argc, char **argv);
int fsdp_sample_main(int argc, char **argv);
int fsdp_tokenize_main(int argc, char **argv);

#endif

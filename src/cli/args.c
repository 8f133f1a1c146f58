/* Options of `fsdp train` and `fsdp plan`, all from one table, FLAGS: a row holds a
 * flag's name, the commands that take it, what --help shows of it and the function
 * that parses, checks and stores its value, so that the parser and --help cannot
 * disagree. Parsing runs in three steps: collect (flag, value) pairs, checking names
 * and that each flag has a value; apply --model, so that the preset is in place before
 * any shape override whatever the flag order; apply the rest in order. Every bad input
 * ends the job with a message that names the flag. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/cuda_arch.h"
#include "fsdp/error.h"
#include "fsdp/hf.h"
#include "checkpoint.h"

/* Defaults resolved after parsing, from other flags; macros so that --help can spell them. */
#define DEFAULT_SEQ_LEN 256 /* lowered to the model's max_seq_len when that is smaller */
#define MIN_LR_DIVISOR 10   /* --min-lr defaults to --lr / 10 */
/* The first step is left out of traces by default: it pays for first touches of memory. */
#define DEFAULT_FIRST_STEP 2
#define DEFAULT_LAST_STEP 3
#define DEFAULT_LOSS_SCALE 65536 /* torch.cuda.amp.GradScaler's initial scale */
#define DEFAULT_MAX_SHARD_SIZE "5GB" /* transformers' save_pretrained's */
#define SPELLED(x) #x
#define SPELL(x) SPELLED(x)

static const char *const DATA_FORMATS[] = {"auto", "text", "nanogpt", "llmc"};
static const char *const DATA_IOS[] = {"pread", "mmap"};
static const char *const DATA_CHANGED[] = {"refuse", "accept"};
#define DEFAULT_VAL_FRACTION 0.1 /* without --val-data */
static const char *const DEVICES[] = {"cpu", "cuda"};

/* ---- values ---- */

/* strtol and strtod skip leading blanks; a value with them is a typo, not a number. */
static int starts_like_number(const char *text) { return text[0] != '\0' && !isspace((unsigned char)text[0]); }

static long parse_integer(const char *flag, const char *text) {
  char *end;
  errno = 0;
  long v = starts_like_number(text) ? strtol(text, &end, 10) : 0;
  if (!starts_like_number(text) || *end != '\0') fsdp_fatal("%s: '%s' is not an integer", flag, text);
  if (errno == ERANGE || v > INT_MAX || v < INT_MIN)
    fsdp_fatal("%s: '%s' is out of range (at most %d)", flag, text, INT_MAX);
  return v;
}

static int parse_positive_int(const char *flag, const char *text) {
  long v = parse_integer(flag, text);
  if (v <= 0) fsdp_fatal("%s: must be a positive integer, got '%s'", flag, text);
  return (int)v;
}

static int parse_nonnegative_int(const char *flag, const char *text) {
  long v = parse_integer(flag, text);
  if (v < 0) fsdp_fatal("%s: must be a non-negative integer, got '%s'", flag, text);
  return (int)v;
}

static uint64_t parse_u64(const char *flag, const char *text) {
  /* strtoull accepts "-1" and wraps it around, so only digits are let through. */
  if (!isdigit((unsigned char)text[0])) fsdp_fatal("%s: must be a non-negative integer, got '%s'", flag, text);
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (*end != '\0') fsdp_fatal("%s: '%s' is not an integer", flag, text);
  if (errno == ERANGE) fsdp_fatal("%s: '%s' is out of range", flag, text);
  return (uint64_t)v;
}

/* A finite float; strtod's nan and inf spellings are refused, as is a value only a double can hold. */
static float parse_float(const char *flag, const char *text) {
  char *end;
  errno = 0;
  double v = starts_like_number(text) ? strtod(text, &end) : 0.0;
  if (!starts_like_number(text) || *end != '\0') fsdp_fatal("%s: '%s' is not a number", flag, text);
  if (errno == ERANGE) fsdp_fatal("%s: '%s' is out of range", flag, text);
  if (!isfinite(v)) fsdp_fatal("%s: must be a finite number, got '%s'", flag, text);
  if (!isfinite((float)v)) fsdp_fatal("%s: '%s' is out of range", flag, text);
  return (float)v;
}

static float parse_positive_float(const char *flag, const char *text) {
  float v = parse_float(flag, text);
  if (!(v > 0.0f)) fsdp_fatal("%s: must be positive, got '%s'", flag, text);
  return v;
}

static float parse_nonnegative_float(const char *flag, const char *text) {
  float v = parse_float(flag, text);
  if (v < 0.0f) fsdp_fatal("%s: must be non-negative, got '%s'", flag, text);
  return v;
}

/* Betas and --val-fraction live in [0, 1): 1 would freeze a moment or leave no training data. */
static float parse_unit_interval(const char *flag, const char *text) {
  float v = parse_float(flag, text);
  if (v < 0.0f || v >= 1.0f) fsdp_fatal("%s: must be in [0, 1), got '%s'", flag, text);
  return v;
}

/* names[i] equal to text; an unknown name ends the job with a message listing the known ones. */
static const char *parse_name(const char *flag, const char *what, const char *const *names, size_t n_names,
                              const char *text) {
  char known[128] = "";
  for (size_t i = 0; i < n_names; i++) {
    if (strcmp(text, names[i]) == 0) return names[i];
    if (i > 0) strncat(known, ", ", sizeof known - strlen(known) - 1);
    strncat(known, names[i], sizeof known - strlen(known) - 1);
  }
  fsdp_fatal("%s: unknown %s '%s' (known: %s)", flag, what, text, known);
}

static enum dtype parse_dtype(const char *flag, const char *text, int allow_f16) {
  int d = dtype_parse(text);
  if (d < 0 || (d == DTYPE_F16 && !allow_f16))
    fsdp_fatal("%s: unknown dtype '%s' (known: %s)", flag, text, allow_f16 ? "fp32, bf16, fp16" : "fp32, bf16");
  return (enum dtype)d;
}

/* none, full, or every:K (K >= 1): how many blocks activation checkpointing covers. */
static int parse_ac(const char *flag, const char *text) {
  if (strcmp(text, "none") == 0) return 0;
  if (strcmp(text, "full") == 0) return 1;
  if (strncmp(text, "every:", 6) != 0) fsdp_fatal("%s: expected none, full or every:K, got '%s'", flag, text);
  char *end;
  errno = 0;
  long k = starts_like_number(text + 6) ? strtol(text + 6, &end, 10) : 0;
  if (!starts_like_number(text + 6) || *end != '\0' || errno == ERANGE || k > INT_MAX)
    fsdp_fatal("%s: '%s' is not every:K with an integer K", flag, text);
  if (k < 1) fsdp_fatal("%s: every:K needs K >= 1 (checkpoint every K-th block), got '%s'", flag, text);
  return (int)k;
}

/* size:N takes N as a count of parameters, with an optional K, M or G (10^3, 10^6, 10^9). */
static void set_wrap(struct train_options *o, const char *flag, const char *text) {
  if (strcmp(text, "block") == 0 || strcmp(text, "none") == 0) {
    o->wrap.kind = text[0] == 'b' ? WRAP_MODULE : WRAP_NONE;
    return;
  }
  if (strncmp(text, "size:", 5) != 0) fsdp_fatal("%s: expected block, none or size:N, got '%s'", flag, text);
  const char *number = text + 5;
  char *end;
  errno = 0;
  double n = starts_like_number(number) && isdigit((unsigned char)number[0]) ? strtod(number, &end) : 0.0;
  double unit = 1.0;
  if (n > 0.0 && *end != '\0' && end[1] == '\0') {
    unit = *end == 'K' ? 1e3 : *end == 'M' ? 1e6 : *end == 'G' ? 1e9 : 0.0;
    end += unit > 0.0;
  }
  if (n <= 0.0 || *end != '\0' || errno == ERANGE || n * unit < 1.0 || n * unit > 1e15)
    fsdp_fatal("%s: '%s' is not size:N with N a positive number of parameters (such as 100M)", flag, text);
  o->wrap.kind = WRAP_SIZE;
  o->wrap.min_params = (size_t)(n * unit);
}

static enum reshard_after_forward parse_reshard(const char *flag, const char *text) {
  if (strcmp(text, "auto") == 0) return RESHARD_AUTO;
  if (strcmp(text, "true") == 0) return RESHARD_ALWAYS;
  if (strcmp(text, "false") == 0) return RESHARD_NEVER;
  fsdp_fatal("%s: expected auto, true or false, got '%s'", flag, text);
}

static enum accum_mode parse_accum_mode(const char *flag, const char *text) {
  if (strcmp(text, "sharded") == 0) return ACCUM_SHARDED;
  if (strcmp(text, "no-sync") == 0) return ACCUM_NO_SYNC;
  fsdp_fatal("%s: unknown mode '%s' (known: sharded, no-sync)", flag, text);
}

/* 1: the sharded state in pinned host memory (cpu), 0: on the device (none). */
static int parse_offload(const char *flag, const char *text) {
  if (strcmp(text, "cpu") == 0) return 1;
  if (strcmp(text, "none") == 0) return 0;
  fsdp_fatal("%s: unknown offload '%s' (known: none, cpu)", flag, text);
}

static int parse_on_off(const char *flag, const char *text) {
  if (strcmp(text, "on") == 0) return 1;
  if (strcmp(text, "off") == 0) return 0;
  fsdp_fatal("%s: must be on or off, got '%s'", flag, text);
}

/* "A:B", 1 <= A <= B: the steps a profile trace covers. */
static void parse_step_range(const char *flag, const char *text, int *first, int *last) {
  const char *colon = strchr(text, ':');
  if (!colon) fsdp_fatal("%s: expected FIRST:LAST (e.g. 2:4), got '%s'", flag, text);
  char first_text[32];
  size_t n = (size_t)(colon - text);
  if (n >= sizeof first_text) fsdp_fatal("%s: '%s' is not a step range", flag, text);
  memcpy(first_text, text, n);
  first_text[n] = '\0';
  *first = parse_positive_int(flag, first_text);
  *last = parse_positive_int(flag, colon + 1);
  if (*last < *first) fsdp_fatal("%s: the last step %d comes before the first %d", flag, *last, *first);
}

/* BYTES, or a number with KB, MB, GB (powers of 1000, as transformers counts) or KiB,
 * MiB, GiB (of 1024). */
static uint64_t parse_size(const char *flag, const char *text) {
  static const struct {
    const char *suffix;
    uint64_t scale;
  } UNITS[] = {{"", 1}, {"B", 1}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000},
               {"KiB", 1u << 10}, {"MiB", 1u << 20}, {"GiB", 1u << 30}};
  char *end;
  errno = 0;
  unsigned long long v = isdigit((unsigned char)text[0]) ? strtoull(text, &end, 10) : 0;
  if (!isdigit((unsigned char)text[0]) || errno == ERANGE)
    fsdp_fatal("%s: '%s' is not a size (BYTES, or a number with KB, MB, GB, KiB, MiB or GiB)", flag, text);
  for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
    if (strcmp(end, UNITS[i].suffix) == 0) {
      if (v == 0 || v > UINT64_MAX / UNITS[i].scale) fsdp_fatal("%s: '%s' must be positive and in range", flag, text);
      return v * UNITS[i].scale;
    }
  fsdp_fatal("%s: '%s' is not a size (BYTES, or a number with KB, MB, GB, KiB, MiB or GiB)", flag, text);
}

/* "R,S": both positive. */
static void parse_mesh(const char *flag, const char *text, int *replicate, int *shard) {
  const char *comma = strchr(text, ',');
  if (!comma) fsdp_fatal("%s: expected R,S (replicas, ranks per shard group; e.g. 2,4), got '%s'", flag, text);
  char first[32];
  size_t n = (size_t)(comma - text);
  if (n >= sizeof first) fsdp_fatal("%s: '%s' is not R,S", flag, text);
  memcpy(first, text, n);
  first[n] = '\0';
  *replicate = parse_positive_int(flag, first);
  *shard = parse_positive_int(flag, comma + 1);
}

/* ---- flags: how each one is applied, in the order of the table ---- */

static enum sharding_strategy parse_sharding(const char *flag, const char *text) {
  int s = sharding_strategy_parse(text);
  if (s < 0) fsdp_fatal("%s: unknown strategy '%s' (known: full, grad-op, none)", flag, text);
  return (enum sharding_strategy)s;
}

static const char *parse_device(const char *flag, const char *text) {
  return parse_name(flag, "device", DEVICES, sizeof DEVICES / sizeof DEVICES[0], text);
}

static enum backward_prefetch parse_backward_prefetch(const char *flag, const char *text) {
  int p = backward_prefetch_parse(text);
  if (p < 0) fsdp_fatal("%s: unknown mode '%s' (known: pre, post, none)", flag, text);
  return (enum backward_prefetch)p;
}

static int parse_blocking(const char *flag, const char *text) { return !parse_on_off(flag, text); }

static enum dtype parse_param_dtype(const char *flag, const char *text) { return parse_dtype(flag, text, 1); }
static enum dtype parse_reduce_dtype(const char *flag, const char *text) { return parse_dtype(flag, text, 0); }

static const char *parse_data_format(const char *flag, const char *text) {
  return parse_name(flag, "format", DATA_FORMATS, sizeof DATA_FORMATS / sizeof DATA_FORMATS[0], text);
}

static const char *parse_plan_format(const char *flag, const char *text) {
  if (strcmp(text, "text") != 0 && strcmp(text, "json") != 0)
    fsdp_fatal("%s: must be text or json, got '%s'", flag, text);
  return text;
}

/* Files are checked where they are opened: the data by every rank, outputs by rank 0. */
static const char *parse_path(const char *flag, const char *text) {
  (void)flag;
  return text;
}

/* Parses value, ends the job with a message naming flag when it is bad, and stores it in o. */
typedef void apply_fn(struct train_options *o, const char *flag, const char *value);

/* An apply_fn that stores parse(flag, value) in o->field. */
#define SETTER(name, field, parse) \
  static void name(struct train_options *o, const char *flag, const char *v) { o->field = parse(flag, v); }

SETTER(set_world_size, world_size, parse_positive_int)
SETTER(set_format, format, parse_plan_format)

/* An arch of fsdp/cuda_arch.h's table: those the kernels are built for. */
static void set_cuda_arch(struct train_options *o, const char *flag, const char *v) {
  const struct cuda_arch *arch = cuda_arch_find(v);
  if (!arch) fsdp_fatal("%s: unknown GPU arch '%s' (known: %s)", flag, v, cuda_arch_names());
  o->cuda_arch = arch->name;
}

static void set_model(struct train_options *o, const char *flag, const char *v) {
  const struct model_preset *preset = model_preset_find(v);
  if (!preset) fsdp_fatal("%s: unknown model '%s' (known: %s)", flag, v, model_preset_names());
  o->family = preset->family;
  o->config = preset->config;
  o->model = v;
}
SETTER(set_n_layer, config.n_layer, parse_positive_int)
SETTER(set_n_head, config.n_head, parse_positive_int)
SETTER(set_n_kv_head, config.n_kv_head, parse_positive_int)
SETTER(set_ffn_hidden, config.ffn_hidden, parse_positive_int)
SETTER(set_n_embd, config.n_embd, parse_positive_int)
SETTER(set_vocab_size, config.vocab_size, parse_positive_int)
SETTER(set_block_size, config.max_seq_len, parse_positive_int)
SETTER(set_sharding, sharding, parse_sharding)
SETTER(set_reshard, wrap.reshard_after_forward, parse_reshard)
SETTER(set_device, device, parse_device)

SETTER(set_prefetch, overlap.prefetch, parse_nonnegative_int)
SETTER(set_backward_prefetch, overlap.backward_prefetch, parse_backward_prefetch)
SETTER(set_max_unsharded, overlap.max_unsharded, parse_positive_int)
SETTER(set_overlap, overlap.blocking, parse_blocking)

SETTER(set_comm_timeout, comm_timeout, parse_positive_float)
static void set_mesh(struct train_options *o, const char *flag, const char *v) {
  parse_mesh(flag, v, &o->mesh_replicate, &o->mesh_shard);
}
SETTER(set_ranks_per_node, ranks_per_node, parse_positive_int)

SETTER(set_ac, ac_every, parse_ac)
SETTER(set_param_dtype, mp.param_dtype, parse_param_dtype)
SETTER(set_reduce_dtype, mp.reduce_dtype, parse_reduce_dtype)
SETTER(set_loss_scale, loss_scale, parse_positive_float)
SETTER(set_grad_accum, grad_accum, parse_positive_int)
SETTER(set_accum_mode, accum_mode, parse_accum_mode)
SETTER(set_offload, offload_cpu, parse_offload)

SETTER(set_seq_len, seq_len, parse_positive_int)
SETTER(set_batch_size, batch_size, parse_positive_int)
SETTER(set_global_batch_size, global_batch_size, parse_nonnegative_int)
SETTER(set_steps, steps, parse_positive_int)
SETTER(set_seed, seed, parse_u64)

SETTER(set_lr, lr, parse_positive_float)
SETTER(set_min_lr, min_lr, parse_nonnegative_float)
SETTER(set_warmup, warmup, parse_nonnegative_int)
SETTER(set_weight_decay, weight_decay, parse_nonnegative_float)
SETTER(set_grad_clip, grad_clip, parse_nonnegative_float)
SETTER(set_beta1, beta1, parse_unit_interval)
SETTER(set_beta2, beta2, parse_unit_interval)
SETTER(set_eps, eps, parse_positive_float)

/* One --data: a second would silently replace the first; several shards go in one, comma-separated. */
static void set_data(struct train_options *o, const char *flag, const char *v) {
  const char **field = strcmp(flag, "--data") == 0 ? &o->data : &o->val_data;
  if (*field)
    fsdp_fatal("%s is given twice ('%s', then '%s'): give several files, globs or folders in one %s, separated by "
               "commas",
               flag, *field, v, flag);
  *field = v;
}
SETTER(set_data_format, data_format, parse_data_format)
static void set_data_io(struct train_options *o, const char *flag, const char *v) {
  o->data_io = parse_name(flag, "way", DATA_IOS, sizeof DATA_IOS / sizeof DATA_IOS[0], v);
}
static void set_data_changed(struct train_options *o, const char *flag, const char *v) {
  o->data_changed = strcmp(parse_name(flag, "choice", DATA_CHANGED, 2, v), "accept") == 0;
}
SETTER(set_val_fraction, val_fraction, parse_unit_interval)
SETTER(set_val_every, val_every, parse_nonnegative_int)
SETTER(set_val_batches, val_batches, parse_positive_int)

SETTER(set_log, log_path, parse_path)
SETTER(set_peak_gflops, peak_gflops, parse_positive_float)

SETTER(set_init_from, init_from, parse_path)
SETTER(set_checkpoint, checkpoint, parse_path)
SETTER(set_batches, batches, parse_positive_int)
SETTER(set_output, output, parse_path)
SETTER(set_export_dtype, export_dtype, parse_reduce_dtype)
SETTER(set_max_shard_size, max_file_bytes, parse_size)
SETTER(set_trace, trace_path, parse_path)
SETTER(set_prompt, prompt, parse_path)
SETTER(set_max_new_tokens, max_new_tokens, parse_positive_int)
SETTER(set_temperature, temperature, parse_nonnegative_float)
SETTER(set_top_k, top_k, parse_nonnegative_int)
SETTER(set_tokenizer, tokenizer, parse_path)
/* "1,2,3": token ids, each checked against the vocabulary where the model is known. */
static void set_prompt_tokens(struct train_options *o, const char *flag, const char *v) {
  free(o->prompt_ids);
  o->prompt_ids = fsdp_xcalloc(strlen(v) / 2 + 1, sizeof *o->prompt_ids);
  o->n_prompt_ids = 0;
  for (const char *p = v;; p++) {
    size_t len = strcspn(p, ",");
    char id[16];
    if (len == 0 || len >= sizeof id) fsdp_fatal("%s: '%s' is not a comma-separated list of token ids", flag, v);
    memcpy(id, p, len);
    id[len] = '\0';
    o->prompt_ids[o->n_prompt_ids++] = parse_nonnegative_int(flag, id);
    p += len;
    if (*p == '\0') break;
  }
}
static void set_trace_steps(struct train_options *o, const char *flag, const char *v) {
  parse_step_range(flag, v, &o->trace_first, &o->trace_last);
}
SETTER(set_memory_snapshot, snapshot_path, parse_path)
static void set_snapshot_steps(struct train_options *o, const char *flag, const char *v) {
  parse_step_range(flag, v, &o->snapshot_first, &o->snapshot_last);
}

SETTER(set_checkpoint_dir, checkpoint_dir, parse_path)
SETTER(set_checkpoint_every, checkpoint_every, parse_nonnegative_int)
SETTER(set_keep_last, keep_last, parse_nonnegative_int)
SETTER(set_resume, resume, parse_path)

/* ---- the table ---- */

enum {
  TRAIN = 1 << OPTIONS_TRAIN,
  PLAN = 1 << OPTIONS_PLAN,
  EVAL = 1 << OPTIONS_EVAL,
  EXPORT = 1 << OPTIONS_EXPORT,
  SAMPLE = 1 << OPTIONS_SAMPLE,
  BOTH = TRAIN | PLAN,
  MODELS = TRAIN | PLAN | EVAL | EXPORT | SAMPLE /* every command that builds a model */
};

/* A value default goes through the flag's own function before the command line is
 * read, so --help cannot show a default the options do not start from. A note stands
 * for a default that is no value (none) or that is resolved after parsing, from other
 * flags (resolve_and_check). */
enum default_kind { DEFAULT_VALUE, DEFAULT_NOTE, DEFAULT_REQUIRED };
struct flag_default {
  enum default_kind kind;
  const char *text;
};
#define DEFAULT(value) {DEFAULT_VALUE, value}
#define NOTE(text) {DEFAULT_NOTE, text}
#define REQUIRED {DEFAULT_REQUIRED, NULL}

struct flag {
  const char *section; /* the heading --help lists it under */
  const char *name;
  unsigned commands; /* TRAIN, PLAN or BOTH */
  const char *metavar;
  struct flag_default def;
  apply_fn *apply;
  const char *help;
};

static const char PLAN_ONLY[] = "plan", MODEL[] = "model", OVERLAP[] = "overlap of communication with compute",
                  COMM[] = "communication", MEMORY[] = "memory", SCHEDULE[] = "batch and schedule",
                  OPTIMIZER[] = "optimizer (AdamW; the learning rate warms up to --lr, then decays to --min-lr)",
                  DATA[] = "data", OUTPUT[] = "output", EVAL_ONLY[] = "evaluation", EXPORT_ONLY[] = "export",
                  CHECKPOINTS[] = "checkpoints (docs/architecture.md)", SAMPLE_ONLY[] = "sampling";
#define STEP_RANGE_DEFAULT SPELL(DEFAULT_FIRST_STEP) ":" SPELL(DEFAULT_LAST_STEP) ", or the last step if fewer"

static const struct flag FLAGS[] = {
    {PLAN_ONLY, "--world-size", PLAN, "W", REQUIRED, set_world_size, "ranks the plan is for"},
    {PLAN_ONLY, "--format", PLAN, "text|json", DEFAULT("text"), set_format, "how the plan is printed"},
    {PLAN_ONLY, "--ranks-per-node", PLAN, "N", NOTE("S of --mesh"), set_ranks_per_node,
     "consecutive ranks on one machine, for the bytes sent within and between machines"},
    {PLAN_ONLY, "--cuda-arch", PLAN, "sm_XY", NOTE("this machine's GPU, else " CUDA_ARCH_DEFAULT), set_cuda_arch,
     "--device cuda: the GPU architecture the plan is for (one the kernels are built for, such as sm_80, sm_86, "
     "sm_89, sm_90, sm_100, sm_120); the plan names it, the shared memory a block may have there and the "
     "attention kernels' tiling in it"},

    {MODEL, "--model", MODELS, "NAME", DEFAULT("shakespeare-char"), set_model, "preset:"},
    {MODEL, "--n-layer", MODELS, "N", NOTE("from the preset"), set_n_layer, "transformer blocks"},
    {MODEL, "--n-head", MODELS, "N", NOTE("from the preset"), set_n_head, "attention heads"},
    {MODEL, "--n-kv-head", MODELS, "N", NOTE("from the preset"), set_n_kv_head,
     "heads of keys and values (grouped-query attention; Llama only)"},
    {MODEL, "--ffn-hidden", MODELS, "N", NOTE("from the preset"), set_ffn_hidden, "SwiGLU width (Llama only)"},
    {MODEL, "--n-embd", MODELS, "N", NOTE("from the preset"), set_n_embd, "embedding width"},
    {MODEL, "--vocab-size", MODELS, "N", NOTE("from the preset"), set_vocab_size,
     "vocabulary size; every token id must be below it"},
    {MODEL, "--block-size", MODELS, "N", NOTE("from the preset"), set_block_size,
     "the model's max_seq_len: rows of GPT-2's position embedding, of Llama's RoPE table"},
    {MODEL, "--sharding", MODELS, "full|grad-op|none", DEFAULT("full"), set_sharding,
     "full (ZeRO-3), grad-op (ZeRO-2) or none (DDP)"},
    {MODEL, "--wrap", BOTH, "block|size:N|none", DEFAULT("block"), set_wrap,
     "which modules share a unit: each block, the embedding, the final norm and the output projection a unit of "
     "its own (block); consecutive modules until a unit holds N parameters (size:N, N such as 50M); or one unit "
     "(none). A tied output projection shares the embedding's unit"},
    {MODEL, "--reshard-after-forward", BOTH, "auto|true|false", DEFAULT("auto"), set_reshard,
     "full sharding: free a unit's gathered parameters after its forward; auto does so for all but the last unit "
     "of the forward, whose backward comes next"},
    {MODEL, "--device", MODELS, "cpu|cuda", DEFAULT("cpu"), set_device, "where the model computes"},
    {MODEL, "--init-from", TRAIN | EVAL | EXPORT | SAMPLE, "PATH", NOTE("a fresh initialisation from --seed"),
     set_init_from,
     "parameters from Hugging Face safetensors: a .safetensors file, a model.safetensors.index.json, or a folder "
     "holding either; the config.json beside them sets the model, and a model flag given too must agree with it"},
    {MODEL, "--checkpoint", EVAL | EXPORT | SAMPLE, "DIR", NOTE("none"), set_checkpoint,
     "parameters from a training checkpoint (DIR/step-NNNNNNNN of --checkpoint-dir), written at any world size "
     "and sharding; its metadata.json sets the model"},

    /* The runtime's own defaults, FSDP_OVERLAP_DEFAULT, which cli_options_test holds these to. */
    {OVERLAP, "--prefetch", BOTH, "N", DEFAULT("1"), set_prefetch,
     "units ahead whose all-gather runs during a forward"},
    {OVERLAP, "--backward-prefetch", BOTH, "pre|post|none", DEFAULT("pre"), set_backward_prefetch,
     "gather the next unit of the backward before (pre) or after (post) a unit's gradient computation, or not "
     "ahead at all (none)"},
    {OVERLAP, "--max-unsharded", BOTH, "N", DEFAULT("2"), set_max_unsharded,
     "units gathered at once under full sharding (a unit's own gather is never held back)"},
    {OVERLAP, "--overlap", BOTH, "on|off", DEFAULT("on"), set_overlap,
     "off: wait for every collective as soon as it is launched"},

    {COMM, "--mesh", BOTH, "R,S", NOTE("1,W"), set_mesh,
     "HSDP: shard within groups of S consecutive ranks (a node's) and replicate across R of them (R S = W): "
     "gradients are reduce-scattered within a group, then all-reduced across the replicas"},
    {COMM, "--comm-timeout", TRAIN, "SECONDS", DEFAULT("600"), set_comm_timeout,
     "a collective not finished after this long ends the job, naming the rank, the unit and the collective (a "
     "stopped, dead or unreachable rank)"},

    {MEMORY, "--ac", BOTH, "none|full|every:K", DEFAULT("none"), set_ac,
     "activation checkpointing of all blocks, or of every K-th one (blocks K-1, 2K-1, ...): a checkpointed block "
     "keeps only its input, and its backward recomputes its forward"},
    {MEMORY, "--param-dtype", BOTH | EVAL, "fp32|bf16|fp16", DEFAULT("fp32"), set_param_dtype,
     "dtype of the gathered parameters (the all-gather moves it) and of the unsharded gradients; master weights "
     "and AdamW stay fp32"},
    {MEMORY, "--reduce-dtype", BOTH, "fp32|bf16", DEFAULT("fp32"), set_reduce_dtype,
     "dtype of the gradient reduce-scatter"},
    {MEMORY, "--loss-scale", BOTH, "X", NOTE(SPELL(DEFAULT_LOSS_SCALE) " with fp16"), set_loss_scale,
     "fp16 only: initial dynamic loss scale; a step whose gradients overflow is skipped and the scale halved, and "
     "it doubles after 2000 good steps"},
    {MEMORY, "--grad-accum", BOTH, "K", DEFAULT("1"), set_grad_accum,
     "micro-batches of --batch-size per optimizer step"},
    {MEMORY, "--accum-mode", BOTH, "sharded|no-sync", DEFAULT("sharded"), set_accum_mode,
     "sharded: reduce-scatter every micro-batch and add into the sharded gradient (less memory, K times the "
     "traffic); no-sync: keep unsharded gradients over the micro-batches and reduce once"},
    {MEMORY, "--offload", BOTH, "none|cpu", DEFAULT("none"), set_offload,
     "--device cuda only: cpu keeps the sharded parameters, gradients and AdamW state in pinned host memory "
     "(copied to the GPU for each all-gather, back after each reduce-scatter) and runs AdamW on the CPU"},

    {SCHEDULE, "--seq-len", BOTH | EVAL, "T", NOTE(SPELL(DEFAULT_SEQ_LEN) ", or the model's max_seq_len if smaller"),
     set_seq_len, "tokens per sequence"},
    {SCHEDULE, "--batch-size", BOTH | EVAL, "B", DEFAULT("8"), set_batch_size, "sequences per rank per micro-batch"},
    {SCHEDULE, "--global-batch-size", BOTH, "G", NOTE("unset"), set_global_batch_size,
     "sequences per step over all ranks and micro-batches: B = G / (W K)"},
    {SCHEDULE, "--steps", BOTH, "N", DEFAULT("50"), set_steps, "optimizer steps"},
    {SCHEDULE, "--seed", MODELS & ~SAMPLE, "N", DEFAULT("1337"), set_seed,
     "seed of the initial weights and of the batches"},

    {OPTIMIZER, "--lr", BOTH, "X", DEFAULT("6e-4"), set_lr, "peak learning rate"},
    {OPTIMIZER, "--min-lr", BOTH, "X", NOTE("--lr / " SPELL(MIN_LR_DIVISOR)), set_min_lr,
     "learning rate at the end of the decay"},
    {OPTIMIZER, "--warmup", BOTH, "N", DEFAULT("10"), set_warmup, "warmup steps"},
    {OPTIMIZER, "--weight-decay", BOTH, "X", DEFAULT("0.1"), set_weight_decay, "decoupled weight decay"},
    {OPTIMIZER, "--grad-clip", BOTH, "X", DEFAULT("1"), set_grad_clip,
     "clip the global gradient norm to X; 0 disables"},
    {OPTIMIZER, "--beta1", BOTH, "X", DEFAULT("0.9"), set_beta1, "decay of the gradients' running mean, in [0, 1)"},
    {OPTIMIZER, "--beta2", BOTH, "X", DEFAULT("0.95"), set_beta2,
     "decay of the squared gradients' running mean, in [0, 1)"},
    {OPTIMIZER, "--eps", BOTH, "X", DEFAULT("1e-8"), set_eps, "added to the update's denominator"},

    {DATA, "--data", TRAIN | EVAL, "FILES", REQUIRED, set_data,
     "token files (or text with --tokenizer): a file, a quoted glob ('fineweb_train_*.bin'), a folder (its .bin "
     "files), or several of these separated by commas; globs and folders sorted by name. Shards are streamed: a "
     "rank reads the windows its batches need"},
    {DATA, "--data", PLAN, "FILES", NOTE("none"), set_data,
     "accepted as train takes it; not read (a rank reads its windows as its batches need them, in no memory the "
     "plan counts)"},
    {DATA, "--val-data", TRAIN, "FILES", NOTE("none: the tail --val-fraction of --data"), set_data,
     "validation shards, as --data takes them (llm.c's 'fineweb_val_*.bin'); --val-fraction is then 0"},
    {DATA, "--data-format", BOTH | EVAL, "auto|text|nanogpt|llmc", DEFAULT("auto"), set_data_format,
     "text: bytes; nanogpt: uint16 .bin; llmc: llm.c .bin (GPT-2's uint16 or Llama 3's uint32 ids, by its magic); "
     "auto tells them apart, refusing a header it cannot prove"},
    {DATA, "--tokenizer", TRAIN | EVAL, "FILE", NOTE("none"), set_tokenizer,
     "a Hugging Face tokenizer.json: --data is text, tokenized at load as one document (the ids fsdp tokenize "
     "would write)"},
    {DATA, "--data-io", TRAIN | EVAL, "pread|mmap", DEFAULT("pread"), set_data_io,
     "how a rank reads a window: pread it, or copy it from the shard mapped read-only (docs/architecture.md, "
     "\"Data\")"},
    {DATA, "--val-fraction", BOTH, "X", NOTE(SPELL(DEFAULT_VAL_FRACTION) ", 0 with --val-data"), set_val_fraction,
     "last fraction of --data's tokens (its shards one after another) kept for validation, in [0, 1)"},
    {DATA, "--val-every", BOTH, "N", DEFAULT("0"), set_val_every, "validate every N steps (and after the last); 0 never"},
    {DATA, "--val-batches", BOTH, "N", DEFAULT("4"), set_val_batches,
     "global batches per validation: the first N of the validation windows in order, the same every time"},

    {EVAL_ONLY, "--batches", EVAL, "N", NOTE("every window of --data"), set_batches,
     "batches of --batch-size windows of --seq-len tokens, read in order from the start of --data (window i of a "
     "shard: its tokens i T to i T + T - 1, each predicting the next); the ranks share them"},
    {EXPORT_ONLY, "--output", EXPORT, "DIR", REQUIRED, set_output,
     "the folder to write (made if missing): model.safetensors, or its parts and their index, and config.json; "
     "-o DIR also works"},
    {EXPORT_ONLY, "--dtype", EXPORT, "fp32|bf16", DEFAULT("fp32"), set_export_dtype, "of the tensors written"},
    {EXPORT_ONLY, "--max-shard-size", EXPORT, "SIZE", DEFAULT(DEFAULT_MAX_SHARD_SIZE), set_max_shard_size,
     "above this many bytes, the tensors go into several files of at most this much (one larger tensor alone), "
     "and an index; BYTES, or with KB, MB, GB, KiB, MiB, GiB"},

    {SAMPLE_ONLY, "--prompt", SAMPLE, "TEXT", NOTE("none"), set_prompt,
     "the prompt as text: encoded by a --tokenizer tokenizer.json, else its bytes the tokens (a byte-level model, "
     "vocab at most 256)"},
    {SAMPLE_ONLY, "--prompt-tokens", SAMPLE, "ID,ID,...", NOTE("none"), set_prompt_tokens,
     "the prompt as token ids (one of --prompt and --prompt-tokens is required)"},
    {SAMPLE_ONLY, "--seed", SAMPLE, "N", DEFAULT("1337"), set_seed,
     "seed of the draws (the same seed, the same tokens), and of a fresh model's weights"},
    {SAMPLE_ONLY, "--max-new-tokens", SAMPLE, "N", DEFAULT("64"), set_max_new_tokens,
     "tokens to generate; fewer where the model's max_seq_len comes first"},
    {SAMPLE_ONLY, "--temperature", SAMPLE, "X", DEFAULT("1"), set_temperature,
     "divides the logits before the softmax; 0 is greedy (the largest logit, ties to the lowest id)"},
    {SAMPLE_ONLY, "--top-k", SAMPLE, "K", DEFAULT("0"), set_top_k,
     "draw among the K largest logits only (ties to the lower ids); 0 keeps them all"},
    {SAMPLE_ONLY, "--tokenizer", SAMPLE, "FILE", NOTE("none: ids, or bytes for a byte-level model"), set_tokenizer,
     "a Hugging Face tokenizer.json (--prompt is text, encoded after the document token; the new tokens are "
     "printed as text, up to an end-of-text token), or llm.c's GPT-2 tokenizer file (gpt2_tokenizer.bin: printed "
     "as text)"},

    {OUTPUT, "--log", BOTH, "FILE", NOTE("none"), set_log, "metrics, one JSON object per step"},
    {OUTPUT, "--peak-gflops", TRAIN, "X", NOTE("cpu: measured once and cached; cuda: the card's bf16 peak"),
     set_peak_gflops, "a rank's peak GFLOP/s, which the MFU of each step is measured against"},
    {OUTPUT, "--trace", BOTH, "FILE", NOTE("none"), set_trace,
     "Chrome trace JSON of --trace-steps (ui.perfetto.dev, chrome://tracing)"},
    {OUTPUT, "--trace-steps", BOTH, "A:B", NOTE(STEP_RANGE_DEFAULT), set_trace_steps, "the steps the trace covers"},
    {OUTPUT, "--memory-snapshot", BOTH, "FILE", NOTE("none"), set_memory_snapshot,
     "every allocation and free of --snapshot-steps, for fsdp memviz"},
    {OUTPUT, "--snapshot-steps", BOTH, "A:B", NOTE(STEP_RANGE_DEFAULT), set_snapshot_steps,
     "the steps the snapshot covers"},

    {CHECKPOINTS, "--checkpoint-dir", TRAIN, "DIR", NOTE("none"), set_checkpoint_dir,
     "write sharded checkpoints to DIR/step-NNNNNNNN/ (one file per rank and metadata.json), in the background"},
    {CHECKPOINTS, "--checkpoint-every", TRAIN, "N", DEFAULT("0"), set_checkpoint_every,
     "write one every N steps and after the last step; 0: after the last step only"},
    {CHECKPOINTS, "--keep-last", TRAIN, "K", DEFAULT("0"), set_keep_last,
     "keep the newest K complete checkpoints, removing older ones; 0: keep all"},
    {CHECKPOINTS, "--resume", TRAIN, "auto|DIR", NOTE("none"), set_resume,
     "continue from a checkpoint directory, or (auto) from the newest complete one in --checkpoint-dir, "
     "starting fresh when there is none; the flags that shape training must be the checkpoint's"},
    {CHECKPOINTS, "--data-changed", TRAIN, "refuse|accept", DEFAULT("refuse"), set_data_changed,
     "resuming with another --data than the checkpoint's (its shards' names and token counts): refuse, or accept "
     "and go on from the checkpoint's epoch and its place in it"},
};
enum { N_FLAGS = sizeof FLAGS / sizeof FLAGS[0] };

/* ---- parsing ---- */

static const char *command_name(enum options_command command) {
  static const char *const NAMES[] = {[OPTIONS_TRAIN] = "train", [OPTIONS_PLAN] = "plan", [OPTIONS_EVAL] = "eval",
                                      [OPTIONS_EXPORT] = "export", [OPTIONS_SAMPLE] = "sample"};
  return NAMES[command];
}

static int takes(const struct flag *f, enum options_command command) { return (f->commands & (1u << command)) != 0; }

/* --model goes first: the preset replaces the whole shape, shape flags included. */
static int is_model(const struct flag *f) { return f->apply == set_model; }

struct flag_arg {
  const struct flag *flag;
  const char *value;
};

static void apply(struct train_options *o, struct flag_arg a) { a.flag->apply(o, a.flag->name, a.value); }

static void set_defaults(enum options_command command, struct train_options *o) {
  memset(o, 0, sizeof *o);
  o->min_lr = -1.0f; /* 0 is a valid --min-lr, so "not given" needs a value of its own */
  o->val_fraction = -1.0f;
  for (size_t i = 0; i < N_FLAGS; i++)
    if (takes(&FLAGS[i], command) && FLAGS[i].def.kind == DEFAULT_VALUE)
      apply(o, (struct flag_arg){&FLAGS[i], FLAGS[i].def.text});
}

static const struct flag *find_flag(enum options_command command, const char *name, size_t name_len) {
  for (size_t i = 0; i < N_FLAGS; i++)
    if (takes(&FLAGS[i], command) && strlen(FLAGS[i].name) == name_len && strncmp(FLAGS[i].name, name, name_len) == 0)
      return &FLAGS[i];
  return NULL;
}

static int is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

/* Reads argv into (flag, value) pairs; returns how many, or -1 when --help was asked for.
 * A value is either after '=' or the next argument; a next argument that is itself a
 * flag means the value was forgotten. */
static int collect_flags(enum options_command command, int argc, char **argv, struct flag_arg *out) {
  const char *name = command_name(command);
  int n = 0;
  for (int i = 0; i < argc; i++) {
    /* -o is the usual spelling of an output, as in fsdp memviz. */
    const char *arg = strcmp(argv[i], "-o") == 0 && command == OPTIONS_EXPORT ? "--output" : argv[i];
    if (is_help(arg)) return -1;
    if (arg[0] == '-' && arg[1] != '-') fsdp_fatal("unknown flag '%s' (see fsdp %s --help)", arg, name);
    if (arg[0] != '-') fsdp_fatal("unexpected argument '%s' (see fsdp %s --help)", arg, name);
    const char *eq = strchr(arg, '=');
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    const struct flag *flag = find_flag(command, arg, name_len);
    if (!flag) fsdp_fatal("unknown flag '%.*s' (see fsdp %s --help)", (int)name_len, arg, name);
    const char *value;
    if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) fsdp_fatal("%s: missing value", flag->name);
      value = argv[++i];
    }
    if (value[0] == '\0') fsdp_fatal("%s: missing value", flag->name);
    out[n++] = (struct flag_arg){flag, value};
  }
  return n;
}

static void check_required(enum options_command command, const struct flag_arg *args, int n) {
  for (size_t i = 0; i < N_FLAGS; i++) {
    if (!takes(&FLAGS[i], command) || FLAGS[i].def.kind != DEFAULT_REQUIRED) continue;
    int given = 0;
    for (int a = 0; a < n; a++) given |= args[a].flag == &FLAGS[i];
    if (!given) fsdp_fatal("%s is required (see fsdp %s --help)", FLAGS[i].name, command_name(command));
  }
}

/* Defaults that depend on other flags, then the checks that involve several flags. */
/* The first and last step of a range left unset: steps 2 and 3, or the last step if fewer. */
static void resolve_step_range(const char *flag, int steps, int *first, int *last) {
  if (*first == 0) {
    *first = DEFAULT_FIRST_STEP < steps ? DEFAULT_FIRST_STEP : steps;
    *last = DEFAULT_LAST_STEP < steps ? DEFAULT_LAST_STEP : steps;
  } else if (*last > steps) {
    fsdp_fatal("%s: step %d is past the last step %d (--steps)", flag, *last, steps);
  }
}

/* A flag that sets the model's family or shape: what --init-from's config.json sets. */
static int sets_model(const struct flag *f) {
  return f->section == MODEL && f->apply != set_sharding && f->apply != set_device && f->apply != set_init_from &&
         f->apply != set_checkpoint;
}

/* The family and shape a source of weights holds (a config.json, a checkpoint's
 * metadata) become the model's. Model flags given as well must agree with them: with
 * --model, the model the flags make (the preset, then each shape flag, as training
 * resolves them) must be the source's, so that the very flags a run was trained with are
 * accepted; without it, each shape flag must leave the source's model as it is. */
static void take_model_from(struct train_options *o, const struct flag_arg *args, int n, const char *flag,
                            const char *source, const struct model_family *family, const struct model_config *config,
                            const char *where) {
  int preset_given = 0;
  char given[512] = "";
  for (int i = 0; i < n; i++) {
    if (!sets_model(args[i].flag)) continue;
    preset_given |= is_model(args[i].flag);
    size_t used = strlen(given);
    snprintf(given + used, sizeof given - used, "%s%s %s", used ? " " : "", args[i].flag->name, args[i].value);
  }
  if (preset_given) {
    if (o->family != family)
      fsdp_fatal("--model %s: a %s model, but %s %s holds a %s one (%s)", o->model, o->family->name, flag, source,
                 family->name, where);
    const char *difference = model_config_difference(&o->config, config);
    if (difference) fsdp_fatal("%s disagrees with %s's %s: %s", given, flag, where, difference);
  }
  for (int i = 0; i < n && !preset_given; i++) {
    if (!sets_model(args[i].flag)) continue;
    struct train_options probe = *o;
    probe.family = family;
    probe.config = *config;
    apply(&probe, args[i]);
    const char *difference = model_config_difference(&probe.config, config);
    if (difference)
      fsdp_fatal("%s %s disagrees with %s's %s: %s", args[i].flag->name, args[i].value, flag, where, difference);
  }
  o->family = family;
  o->config = *config;
  o->model = source;
}

/* --init-from with a config.json sets the model; without one (a bare .safetensors file),
 * the model flags say what the file holds. --checkpoint always sets it. */
static void apply_model_source(struct train_options *o, const struct flag_arg *args, int n) {
  if (o->init_from && o->checkpoint) fsdp_fatal("--checkpoint and --init-from: give one source of weights, not both");
  struct model_config config;
  if (o->checkpoint) {
    const struct model_family *family = ckpt_model_read(o->checkpoint, &config);
    take_model_from(o, args, n, "--checkpoint", o->checkpoint, family, &config, "metadata.json");
    return;
  }
  if (!o->init_from) return;
  char *config_path;
  const struct model_family *family = hf_config_load(o->init_from, &config, &config_path);
  if (!family) return;
  take_model_from(o, args, n, "--init-from", o->init_from, family, &config, config_path);
  free(config_path);
}

static void resolve_and_check(struct train_options *o) {
  const char *problem = o->family->config_problem(&o->config);
  if (problem) fsdp_fatal("model '%s': %s", o->model, problem);
  if (o->seq_len == 0)
    o->seq_len = DEFAULT_SEQ_LEN < o->config.max_seq_len ? DEFAULT_SEQ_LEN : o->config.max_seq_len;
  if (o->seq_len > o->config.max_seq_len)
    fsdp_fatal("--seq-len: %d exceeds the model's max_seq_len %d (raise it with --block-size)", o->seq_len,
               o->config.max_seq_len);
  if (o->min_lr < 0.0f) o->min_lr = o->lr / MIN_LR_DIVISOR;
  if (o->val_data && o->val_fraction > 0.0f)
    fsdp_fatal("--val-fraction %g and --val-data: validation comes from one of them", o->val_fraction);
  if (o->val_fraction < 0.0f) o->val_fraction = o->val_data ? 0.0f : (float)DEFAULT_VAL_FRACTION;
  if (o->min_lr > o->lr) fsdp_fatal("--min-lr: %g exceeds --lr %g", o->min_lr, o->lr);
  resolve_step_range("--trace-steps", o->steps, &o->trace_first, &o->trace_last);
  resolve_step_range("--snapshot-steps", o->steps, &o->snapshot_first, &o->snapshot_last);
  if (o->mp.reduce_dtype != DTYPE_F32 && o->sharding == SHARD_NONE)
    fsdp_fatal("--reduce-dtype %s: not supported with --sharding none, whose all-reduce is fp32",
               dtype_name(o->mp.reduce_dtype));
  if (o->wrap.reshard_after_forward != RESHARD_AUTO && o->sharding != SHARD_FULL)
    fsdp_fatal("--reshard-after-forward: only for --sharding full (%s never reshards after forward)",
               sharding_strategy_name(o->sharding));
  if (o->loss_scale > 0.0f && o->mp.param_dtype != DTYPE_F16)
    fsdp_fatal("--loss-scale: only for --param-dtype fp16 (bf16 and fp32 need no loss scaling)");
  if (o->mp.param_dtype == DTYPE_F16 && o->loss_scale == 0.0f) o->loss_scale = DEFAULT_LOSS_SCALE;
  if (o->tokenizer && o->data_format && strcmp(o->data_format, "auto") != 0 && strcmp(o->data_format, "text") != 0)
    fsdp_fatal("--data-format %s: with --tokenizer, --data is text to tokenize", o->data_format);
  if (!o->checkpoint_dir && o->checkpoint_every) fsdp_fatal("--checkpoint-every: needs --checkpoint-dir");
  if (!o->checkpoint_dir && o->keep_last) fsdp_fatal("--keep-last: needs --checkpoint-dir");
  if (o->resume && strcmp(o->resume, "auto") == 0 && !o->checkpoint_dir)
    fsdp_fatal("--resume auto: needs --checkpoint-dir, where it looks for the newest checkpoint");
  if (o->cuda_arch && strcmp(o->device, "cuda") != 0)
    fsdp_fatal("--cuda-arch %s: only with --device cuda (a plan for --device %s runs no GPU kernel)", o->cuda_arch,
               o->device);
  if (o->offload_cpu && strcmp(o->device, "cuda") != 0)
    fsdp_fatal("--offload cpu: only with --device cuda (on --device %s the sharded state is in host memory "
               "already)",
               o->device);
  if (o->mesh_replicate > 1 && o->sharding == SHARD_NONE)
    fsdp_fatal("--mesh %d,%d: --sharding none replicates over every rank already (a mesh needs full or grad-op)",
               o->mesh_replicate, o->mesh_shard);
  if (o->world_size) {
    int replicate, shard;
    train_options_mesh(o, o->world_size, &replicate, &shard);
    if (o->ranks_per_node && o->world_size % o->ranks_per_node != 0)
      fsdp_fatal("--ranks-per-node %d does not divide --world-size %d", o->ranks_per_node, o->world_size);
  }
}

void train_options_mesh(const struct train_options *o, int world_size, int *replicate, int *shard) {
  *replicate = o->mesh_replicate ? o->mesh_replicate : 1;
  *shard = o->mesh_shard ? o->mesh_shard : world_size;
  long long ranks = (long long)*replicate * *shard;
  if (ranks != world_size)
    fsdp_fatal("--mesh %d,%d: %d x %d = %lld ranks, but the job has %d", *replicate, *shard, *replicate, *shard,
               ranks, world_size);
}

int train_options_batch_per_rank(const struct train_options *o, int world_size) {
  if (!o->global_batch_size) return o->batch_size;
  int parts = world_size * o->grad_accum;
  if (o->global_batch_size % parts != 0)
    fsdp_fatal("--global-batch-size %d is not divisible by the world size %d times --grad-accum %d",
               o->global_batch_size, world_size, o->grad_accum);
  return o->global_batch_size / parts;
}

/* argv[0] is the command name ("train"), as in main's argv, so that the same argv
 * can go through MPI_Init first. */
int train_options_parse(enum options_command command, struct train_options *o, int argc, char **argv) {
  set_defaults(command, o);
  int n_args = argc > 1 ? argc - 1 : 0;
  struct flag_arg *args = fsdp_xmalloc(sizeof *args * (size_t)(n_args > 0 ? n_args : 1));
  int n = collect_flags(command, n_args, argv + 1, args);
  if (n < 0) {
    free(args);
    train_options_print_help(command);
    return 1;
  }
  for (int i = 0; i < n; i++)
    if (is_model(args[i].flag)) apply(o, args[i]);
  for (int i = 0; i < n; i++)
    if (!is_model(args[i].flag)) apply(o, args[i]);
  check_required(command, args, n);
  apply_model_source(o, args, n);
  free(args);
  resolve_and_check(o);
  return 0;
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

/* "  LEFT    TEXT TAIL": TEXT word-wrapped in a column of its own, TAIL (the default)
 * kept whole; a LEFT too wide for its column puts the rest on the next line. */
static void print_entry(const char *left, const char *text, const char *tail) {
  int column = printf("%*s%s", HELP_INDENT, "", left);
  if (column > HELP_TEXT_COLUMN - 2) {
    printf("\n");
    column = 0;
  }
  column += printf("%*s", HELP_TEXT_COLUMN - column, "");
  for (const char *word = text + strspn(text, " "); *word; word += strspn(word, " ")) {
    int len = (int)strcspn(word, " ");
    column = put_word(column, word, len);
    word += len;
  }
  if (tail) put_word(column, tail, (int)strlen(tail));
  printf("\n");
}

static void print_flag(const struct flag *f) {
  char left[64], text[512], tail[128];
  snprintf(left, sizeof left, "%s %s", f->name, f->metavar);
  /* The presets are the registry's, known here only at run time. */
  snprintf(text, sizeof text, "%s %s", f->help, is_model(f) ? model_preset_names() : "");
  switch (f->def.kind) {
    case DEFAULT_VALUE: snprintf(tail, sizeof tail, "(default %s)", f->def.text); break;
    case DEFAULT_NOTE: snprintf(tail, sizeof tail, "(default: %s)", f->def.text); break;
    case DEFAULT_REQUIRED: snprintf(tail, sizeof tail, "(required)"); break;
  }
  print_entry(left, text, tail);
}

static void print_usage(enum options_command command) {
  printf("usage: fsdp %s", command_name(command));
  for (size_t i = 0; i < N_FLAGS; i++)
    if (takes(&FLAGS[i], command) && FLAGS[i].def.kind == DEFAULT_REQUIRED)
      printf(" %s %s", FLAGS[i].name, FLAGS[i].metavar);
  printf(" [options]   (flags take '--flag VALUE' or '--flag=VALUE')\n");
  if (command == OPTIONS_PLAN)
    printf("\nPrints, without allocating the model, the bytes per rank by category at the peak of a\n"
           "training step and the bytes each rank sends and receives per step.\n");
  if (command == OPTIONS_EVAL)
    printf("\nPrints the mean cross-entropy over the windows as one JSON line, {\"loss\": ...}.\n");
  if (command == OPTIONS_SAMPLE)
    printf("\nGenerates from the prompt with a KV cache on one rank and prints the new tokens: as text for a\n"
           "byte-level model or with --tokenizer, else their ids.\n");
  if (command == OPTIONS_EXPORT)
    printf("\nWrites the model's parameters as Hugging Face safetensors, with transformers' names and\n"
           "layouts, and its config.json, for transformers' from_pretrained.\n");
}

void train_options_print_help(enum options_command command) {
  print_usage(command);
  const char *section = NULL;
  for (size_t i = 0; i < N_FLAGS; i++) {
    if (!takes(&FLAGS[i], command)) continue;
    if (FLAGS[i].section != section) printf("\n%s:\n", section = FLAGS[i].section);
    print_flag(&FLAGS[i]);
  }
  print_entry("-h, --help", "this text", NULL);
}

/* Options of `fsdp train`. Parsing runs in three steps: collect (flag, value)
 * pairs, checking names and that each flag has a value; apply --model, so that
 * the preset is in place before any shape override whatever the flag order;
 * apply the rest in order. Every bad input ends the job with a message that
 * names the flag. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/error.h"

static const char *const DEFAULT_MODEL = "shakespeare-char";
static const int DEFAULT_SEQ_LEN = 256; /* lowered to the model's max_seq_len when that is smaller */
static const int DEFAULT_BATCH_SIZE = 8;
static const int DEFAULT_STEPS = 50;
static const float DEFAULT_LR = 6e-4f;
static const float MIN_LR_DIVISOR = 10.0f; /* --min-lr defaults to --lr / 10 */
static const int DEFAULT_WARMUP = 10;
static const float DEFAULT_WEIGHT_DECAY = 0.1f;
static const float DEFAULT_GRAD_CLIP = 1.0f;
static const float DEFAULT_BETA1 = 0.9f, DEFAULT_BETA2 = 0.95f, DEFAULT_EPS = 1e-8f;
static const uint64_t DEFAULT_SEED = 1337;
static const char *const DEFAULT_DATA_FORMAT = "auto";
static const float DEFAULT_VAL_FRACTION = 0.1f;
static const int DEFAULT_VAL_EVERY = 0;
static const int DEFAULT_VAL_BATCHES = 4;
/* The first step is left out of traces by default: it pays for first touches of memory. */
static const int DEFAULT_TRACE_FIRST = 2, DEFAULT_TRACE_LAST = 3;

/* torch.cuda.amp.GradScaler's initial scale. */
static const float DEFAULT_LOSS_SCALE = 65536.0f;

static const char *const DATA_FORMATS[] = {"auto", "text", "nanogpt", "llmc"};

enum flag_id {
  F_MODEL, F_N_LAYER, F_N_HEAD, F_N_EMBD, F_VOCAB_SIZE, F_BLOCK_SIZE, F_SEQ_LEN,
  F_BATCH_SIZE, F_GLOBAL_BATCH_SIZE, F_STEPS,
  F_LR, F_MIN_LR, F_WARMUP, F_WEIGHT_DECAY, F_GRAD_CLIP, F_BETA1, F_BETA2, F_EPS, F_SEED,
  F_DATA, F_DATA_FORMAT, F_VAL_FRACTION, F_VAL_EVERY, F_VAL_BATCHES,
  F_LOG, F_SHARDING, F_PREFETCH, F_BACKWARD_PREFETCH, F_MAX_UNSHARDED, F_OVERLAP, F_TRACE, F_TRACE_STEPS,
  F_AC, F_PARAM_DTYPE, F_REDUCE_DTYPE, F_LOSS_SCALE, F_GRAD_ACCUM, F_ACCUM_MODE, F_MEMORY_SNAPSHOT,
  F_SNAPSHOT_STEPS, F_WORLD_SIZE, F_FORMAT,
  F_NUM_FLAGS
};

static const char *const FLAG_NAMES[F_NUM_FLAGS] = {
  [F_MODEL] = "--model", [F_N_LAYER] = "--n-layer", [F_N_HEAD] = "--n-head", [F_N_EMBD] = "--n-embd",
  [F_VOCAB_SIZE] = "--vocab-size", [F_BLOCK_SIZE] = "--block-size", [F_SEQ_LEN] = "--seq-len",
  [F_BATCH_SIZE] = "--batch-size", [F_GLOBAL_BATCH_SIZE] = "--global-batch-size", [F_STEPS] = "--steps",
  [F_LR] = "--lr", [F_MIN_LR] = "--min-lr", [F_WARMUP] = "--warmup", [F_WEIGHT_DECAY] = "--weight-decay",
  [F_GRAD_CLIP] = "--grad-clip", [F_BETA1] = "--beta1", [F_BETA2] = "--beta2", [F_EPS] = "--eps",
  [F_SEED] = "--seed", [F_DATA] = "--data", [F_DATA_FORMAT] = "--data-format",
  [F_VAL_FRACTION] = "--val-fraction", [F_VAL_EVERY] = "--val-every", [F_VAL_BATCHES] = "--val-batches",
  [F_LOG] = "--log", [F_SHARDING] = "--sharding", [F_PREFETCH] = "--prefetch",
  [F_BACKWARD_PREFETCH] = "--backward-prefetch", [F_MAX_UNSHARDED] = "--max-unsharded", [F_OVERLAP] = "--overlap",
  [F_TRACE] = "--trace", [F_TRACE_STEPS] = "--trace-steps", [F_AC] = "--ac", [F_PARAM_DTYPE] = "--param-dtype",
  [F_REDUCE_DTYPE] = "--reduce-dtype", [F_LOSS_SCALE] = "--loss-scale", [F_GRAD_ACCUM] = "--grad-accum",
  [F_ACCUM_MODE] = "--accum-mode", [F_MEMORY_SNAPSHOT] = "--memory-snapshot", [F_SNAPSHOT_STEPS] = "--snapshot-steps",
  [F_WORLD_SIZE] = "--world-size", [F_FORMAT] = "--format",
};

/* Flags of one command only; the rest are shared by train and plan. */
static int flag_allowed(enum options_command command, enum flag_id id) {
  if (id == F_WORLD_SIZE || id == F_FORMAT) return command == OPTIONS_PLAN;
  return 1;
}

struct flag_arg {
  enum flag_id id;
  const char *value;
};

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

static const char *parse_data_format(const char *text) {
  for (size_t i = 0; i < sizeof DATA_FORMATS / sizeof DATA_FORMATS[0]; i++)
    if (strcmp(text, DATA_FORMATS[i]) == 0) return DATA_FORMATS[i];
  fsdp_fatal("--data-format: unknown format '%s' (known: auto, text, nanogpt, llmc)", text);
}

static enum sharding_strategy parse_sharding(const char *text) {
  int s = sharding_strategy_parse(text);
  if (s < 0) fsdp_fatal("--sharding: unknown strategy '%s' (known: full, grad-op, none)", text);
  return (enum sharding_strategy)s;
}

static enum backward_prefetch parse_backward_prefetch(const char *text) {
  int p = backward_prefetch_parse(text);
  if (p < 0) fsdp_fatal("--backward-prefetch: unknown mode '%s' (known: pre, post, none)", text);
  return (enum backward_prefetch)p;
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

static enum accum_mode parse_accum_mode(const char *flag, const char *text) {
  if (strcmp(text, "sharded") == 0) return ACCUM_SHARDED;
  if (strcmp(text, "no-sync") == 0) return ACCUM_NO_SYNC;
  fsdp_fatal("%s: unknown mode '%s' (known: sharded, no-sync)", flag, text);
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

static void apply_model(struct train_options *o, const char *name) {
  if (!gpt2_config_preset(name, &o->gpt2))
    fsdp_fatal("--model: unknown model '%s' (known: %s)", name, gpt2_preset_names());
  o->model = name;
}

/* ---- flags ---- */

static void set_defaults(struct train_options *o) {
  memset(o, 0, sizeof *o);
  apply_model(o, DEFAULT_MODEL);
  o->seq_len = 0; /* resolved once the model's max_seq_len is final */
  o->batch_size = DEFAULT_BATCH_SIZE;
  o->steps = DEFAULT_STEPS;
  o->lr = DEFAULT_LR;
  o->min_lr = -1.0f; /* resolved from --lr unless given */
  o->warmup = DEFAULT_WARMUP;
  o->weight_decay = DEFAULT_WEIGHT_DECAY;
  o->grad_clip = DEFAULT_GRAD_CLIP;
  o->beta1 = DEFAULT_BETA1;
  o->beta2 = DEFAULT_BETA2;
  o->eps = DEFAULT_EPS;
  o->seed = DEFAULT_SEED;
  o->data_format = DEFAULT_DATA_FORMAT;
  o->device = "cpu";
  o->val_fraction = DEFAULT_VAL_FRACTION;
  o->val_every = DEFAULT_VAL_EVERY;
  o->val_batches = DEFAULT_VAL_BATCHES;
  o->sharding = SHARD_FULL;
  o->overlap = FSDP_OVERLAP_DEFAULT;
  o->trace_first = 0; /* resolved once --steps is final */
  o->snapshot_first = 0;
  o->loss_scale = 0.0f; /* resolved once --param-dtype is final */
  o->grad_accum = 1;
  o->accum_mode = ACCUM_SHARDED;
  o->format = "text";
}

static int find_flag(const char *name, size_t name_len) {
  for (int id = 0; id < F_NUM_FLAGS; id++)
    if (strlen(FLAG_NAMES[id]) == name_len && strncmp(FLAG_NAMES[id], name, name_len) == 0) return id;
  return -1;
}

static int is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

/* Reads argv into (flag, value) pairs; returns how many, or -1 when --help was asked for.
 * A value is either after '=' or the next argument; a next argument that is itself a
 * flag means the value was forgotten. */
static int collect_flags(enum options_command command, int argc, char **argv, struct flag_arg *out) {
  const char *name = command == OPTIONS_PLAN ? "plan" : "train";
  int n = 0;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (is_help(arg)) return -1;
    if (arg[0] == '-' && arg[1] != '-') fsdp_fatal("unknown flag '%s' (see fsdp %s --help)", arg, name);
    if (arg[0] != '-') fsdp_fatal("unexpected argument '%s' (see fsdp %s --help)", arg, name);
    const char *eq = strchr(arg, '=');
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    int id = find_flag(arg, name_len);
    if (id < 0 || !flag_allowed(command, (enum flag_id)id))
      fsdp_fatal("unknown flag '%.*s' (see fsdp %s --help)", (int)name_len, arg, name);
    const char *value;
    if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) fsdp_fatal("%s: missing value", FLAG_NAMES[id]);
      value = argv[++i];
    }
    if (value[0] == '\0') fsdp_fatal("%s: missing value", FLAG_NAMES[id]);
    out[n++] = (struct flag_arg){(enum flag_id)id, value};
  }
  return n;
}

static void apply_flag(struct train_options *o, enum flag_id id, const char *v) {
  const char *flag = FLAG_NAMES[id];
  switch (id) {
    case F_MODEL: break; /* applied before every other flag */
    case F_N_LAYER: o->gpt2.n_layer = parse_positive_int(flag, v); break;
    case F_N_HEAD: o->gpt2.n_head = parse_positive_int(flag, v); break;
    case F_N_EMBD: o->gpt2.n_embd = parse_positive_int(flag, v); break;
    case F_VOCAB_SIZE: o->gpt2.vocab_size = parse_positive_int(flag, v); break;
    case F_BLOCK_SIZE: o->gpt2.max_seq_len = parse_positive_int(flag, v); break;
    case F_SEQ_LEN: o->seq_len = parse_positive_int(flag, v); break;
    case F_BATCH_SIZE: o->batch_size = parse_positive_int(flag, v); break;
    case F_GLOBAL_BATCH_SIZE: o->global_batch_size = parse_nonnegative_int(flag, v); break;
    case F_STEPS: o->steps = parse_positive_int(flag, v); break;
    case F_LR: o->lr = parse_positive_float(flag, v); break;
    case F_MIN_LR: o->min_lr = parse_nonnegative_float(flag, v); break;
    case F_WARMUP: o->warmup = parse_nonnegative_int(flag, v); break;
    case F_WEIGHT_DECAY: o->weight_decay = parse_nonnegative_float(flag, v); break;
    case F_GRAD_CLIP: o->grad_clip = parse_nonnegative_float(flag, v); break;
    case F_BETA1: o->beta1 = parse_unit_interval(flag, v); break;
    case F_BETA2: o->beta2 = parse_unit_interval(flag, v); break;
    case F_EPS: o->eps = parse_positive_float(flag, v); break;
    case F_SEED: o->seed = parse_u64(flag, v); break;
    case F_DATA: o->data = v; break;
    case F_DATA_FORMAT: o->data_format = parse_data_format(v); break;
    case F_VAL_FRACTION: o->val_fraction = parse_unit_interval(flag, v); break;
    case F_VAL_EVERY: o->val_every = parse_nonnegative_int(flag, v); break;
    case F_VAL_BATCHES: o->val_batches = parse_positive_int(flag, v); break;
    case F_LOG: o->log_path = v; break;
    case F_SHARDING: o->sharding = parse_sharding(v); break;
    case F_PREFETCH: o->overlap.prefetch = parse_nonnegative_int(flag, v); break;
    case F_BACKWARD_PREFETCH: o->overlap.backward_prefetch = parse_backward_prefetch(v); break;
    case F_MAX_UNSHARDED: o->overlap.max_unsharded = parse_positive_int(flag, v); break;
    case F_OVERLAP: o->overlap.blocking = !parse_on_off(flag, v); break;
    case F_TRACE: o->trace_path = v; break;
    case F_TRACE_STEPS: parse_step_range(flag, v, &o->trace_first, &o->trace_last); break;
    case F_AC: o->ac_every = parse_ac(flag, v); break;
    case F_PARAM_DTYPE: o->mp.param_dtype = parse_dtype(flag, v, 1); break;
    case F_REDUCE_DTYPE: o->mp.reduce_dtype = parse_dtype(flag, v, 0); break;
    case F_LOSS_SCALE: o->loss_scale = parse_positive_float(flag, v); break;
    case F_GRAD_ACCUM: o->grad_accum = parse_positive_int(flag, v); break;
    case F_ACCUM_MODE: o->accum_mode = parse_accum_mode(flag, v); break;
    case F_MEMORY_SNAPSHOT: o->snapshot_path = v; break;
    case F_SNAPSHOT_STEPS: parse_step_range(flag, v, &o->snapshot_first, &o->snapshot_last); break;
    case F_WORLD_SIZE: o->world_size = parse_positive_int(flag, v); break;
    case F_FORMAT:
      if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0) fsdp_fatal("%s: must be text or json, got '%s'", flag, v);
      o->format = v;
      break;
    case F_NUM_FLAGS: FSDP_CHECK(!"not a flag"); break;
  }
}

/* Defaults that depend on other flags, then the checks that involve several flags. */
/* The first and last step of a range left unset: steps 2 and 3, or the last step if fewer. */
static void resolve_step_range(const char *flag, int steps, int *first, int *last) {
  if (*first == 0) {
    *first = DEFAULT_TRACE_FIRST < steps ? DEFAULT_TRACE_FIRST : steps;
    *last = DEFAULT_TRACE_LAST < steps ? DEFAULT_TRACE_LAST : steps;
  } else if (*last > steps) {
    fsdp_fatal("%s: step %d is past the last step %d (--steps)", flag, *last, steps);
  }
}

static void resolve_and_check(enum options_command command, struct train_options *o) {
  if (command == OPTIONS_TRAIN && !o->data) fsdp_fatal("--data is required (see fsdp train --help)");
  if (command == OPTIONS_PLAN && !o->world_size) fsdp_fatal("--world-size is required (see fsdp plan --help)");
  const char *problem = gpt2_config_problem(&o->gpt2);
  if (problem) fsdp_fatal("model '%s': %s", o->model, problem);
  if (o->seq_len == 0)
    o->seq_len = DEFAULT_SEQ_LEN < o->gpt2.max_seq_len ? DEFAULT_SEQ_LEN : o->gpt2.max_seq_len;
  if (o->seq_len > o->gpt2.max_seq_len)
    fsdp_fatal("--seq-len: %d exceeds the model's max_seq_len %d (raise it with --block-size)", o->seq_len,
               o->gpt2.max_seq_len);
  if (o->min_lr < 0.0f) o->min_lr = o->lr / MIN_LR_DIVISOR;
  if (o->min_lr > o->lr) fsdp_fatal("--min-lr: %g exceeds --lr %g", o->min_lr, o->lr);
  resolve_step_range("--trace-steps", o->steps, &o->trace_first, &o->trace_last);
  resolve_step_range("--snapshot-steps", o->steps, &o->snapshot_first, &o->snapshot_last);
  if (o->mp.reduce_dtype != DTYPE_F32 && o->sharding == SHARD_NONE)
    fsdp_fatal("--reduce-dtype %s: not supported with --sharding none, whose all-reduce is fp32",
               dtype_name(o->mp.reduce_dtype));
  if (o->loss_scale > 0.0f && o->mp.param_dtype != DTYPE_F16)
    fsdp_fatal("--loss-scale: only for --param-dtype fp16 (bf16 and fp32 need no loss scaling)");
  if (o->mp.param_dtype == DTYPE_F16 && o->loss_scale == 0.0f) o->loss_scale = DEFAULT_LOSS_SCALE;
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
  set_defaults(o);
  int n_args = argc > 1 ? argc - 1 : 0;
  struct flag_arg *args = fsdp_xmalloc(sizeof *args * (size_t)(n_args > 0 ? n_args : 1));
  int n = collect_flags(command, n_args, argv + 1, args);
  if (n < 0) {
    free(args);
    train_options_print_help(command);
    return 1;
  }
  for (int i = 0; i < n; i++)
    if (args[i].id == F_MODEL) apply_model(o, args[i].value);
  for (int i = 0; i < n; i++) apply_flag(o, args[i].id, args[i].value);
  free(args);
  resolve_and_check(command, o);
  return 0;
}

void train_options_print_help(enum options_command command) {
  if (command == OPTIONS_PLAN) {
    printf("usage: fsdp plan --world-size W [train options]   (no --data needed)\n\n");
    printf("Prints, without allocating the model, the bytes per rank by category at the peak of a\n"
           "training step and the bytes each rank sends and receives per step.\n\n");
    printf("  --world-size W          ranks the plan is for (required)\n");
    printf("  --format text|json      (default text)\n\n");
  } else {
    printf("usage: fsdp train --data FILE [options]   (flags take '--flag VALUE' or '--flag=VALUE')\n\n");
  }
  printf("model:\n");
  printf("  --model NAME            preset: %s (default %s)\n", gpt2_preset_names(), DEFAULT_MODEL);
  printf("  --n-layer N             transformer blocks (default: from the preset)\n");
  printf("  --n-head N              attention heads (default: from the preset)\n");
  printf("  --n-embd N              embedding width (default: from the preset)\n");
  printf("  --vocab-size N          vocabulary size; every token id must be below it (default: from the preset)\n");
  printf("  --block-size N          the model's max_seq_len, rows of the position embedding (default: from the preset)\n");
  printf("  --sharding S            full (ZeRO-3), grad-op (ZeRO-2) or none (DDP) (default full)\n");
  printf("\noverlap of communication with compute:\n");
  printf("  --prefetch N            units ahead whose all-gather runs during a forward (default %d)\n",
         FSDP_OVERLAP_DEFAULT.prefetch);
  printf("  --backward-prefetch M   gather the next unit of the backward before (pre) or after (post) a unit's\n"
         "                          gradient computation, or not ahead at all (none) (default %s)\n",
         backward_prefetch_name(FSDP_OVERLAP_DEFAULT.backward_prefetch));
  printf("  --max-unsharded N       units (the root aside) gathered at once under full sharding (default %d)\n",
         FSDP_OVERLAP_DEFAULT.max_unsharded);
  printf("  --overlap on|off        off: wait for every collective as soon as it is launched (default on)\n");
  printf("\nmemory:\n");
  printf("  --ac none|full|every:K  activation checkpointing of all blocks, or of every K-th one (blocks K-1,\n"
         "                          2K-1, ...): a checkpointed block keeps only its input, and its backward\n"
         "                          recomputes its forward (default none)\n");
  printf("  --param-dtype D         fp32, bf16 or fp16: dtype of the gathered parameters (the all-gather moves\n"
         "                          it) and of the unsharded gradients; master weights and AdamW stay fp32\n"
         "                          (default fp32)\n");
  printf("  --reduce-dtype D        fp32 or bf16: dtype of the gradient reduce-scatter (default fp32)\n");
  printf("  --loss-scale X          fp16: initial dynamic loss scale; a step whose gradients overflow is\n"
         "                          skipped and the scale halved, and it doubles after 2000 good steps\n"
         "                          (default %g)\n", DEFAULT_LOSS_SCALE);
  printf("  --grad-accum K          micro-batches of --batch-size per optimizer step (default 1)\n");
  printf("  --accum-mode M          sharded: reduce-scatter every micro-batch and add into the sharded\n"
         "                          gradient (less memory, K times the traffic); no-sync: keep unsharded\n"
         "                          gradients over the micro-batches and reduce once (default sharded)\n");
  printf("\nbatch and schedule:\n");
  printf("  --seq-len T             tokens per sequence (default %d, or the model's max_seq_len if smaller)\n",
         DEFAULT_SEQ_LEN);
  printf("  --batch-size B          sequences per rank per micro-batch (default %d)\n", DEFAULT_BATCH_SIZE);
  printf("  --global-batch-size G   sequences per step over all ranks and micro-batches: B = G / (W K)\n"
         "                          (default: unset)\n");
  printf("  --steps N               optimizer steps (default %d)\n", DEFAULT_STEPS);
  printf("  --seed N                seed of the initial weights and of the batches (default %llu)\n",
         (unsigned long long)DEFAULT_SEED);
  printf("\noptimizer (AdamW; the learning rate warms up to --lr, then decays to --min-lr):\n");
  printf("  --lr X                  peak learning rate (default %g)\n", DEFAULT_LR);
  printf("  --min-lr X              learning rate at the end of the decay (default: --lr / %g)\n", MIN_LR_DIVISOR);
  printf("  --warmup N              warmup steps (default %d)\n", DEFAULT_WARMUP);
  printf("  --weight-decay X        decoupled weight decay (default %g)\n", DEFAULT_WEIGHT_DECAY);
  printf("  --grad-clip X           clip the global gradient norm to X; 0 disables (default %g)\n",
         DEFAULT_GRAD_CLIP);
  printf("  --beta1 X               (default %g)\n", DEFAULT_BETA1);
  printf("  --beta2 X               (default %g)\n", DEFAULT_BETA2);
  printf("  --eps X                 (default %g)\n", DEFAULT_EPS);
  printf("\ndata:\n");
  printf("  --data FILE             token file (%s)\n",
         command == OPTIONS_PLAN ? "optional: the plan counts its tokens' memory" : "required");
  printf("  --data-format F         auto, text (bytes), nanogpt (uint16 .bin) or llmc (llm.c .bin) (default %s)\n",
         DEFAULT_DATA_FORMAT);
  printf("  --val-fraction X        last fraction of the tokens kept for validation, in [0, 1) (default %g)\n",
         DEFAULT_VAL_FRACTION);
  printf("  --val-every N           validate every N steps; 0 never (default %d)\n", DEFAULT_VAL_EVERY);
  printf("  --val-batches N         batches per validation (default %d)\n", DEFAULT_VAL_BATCHES);
  printf("\noutput:\n");
  printf("  --log FILE              metrics, one JSON object per step (default: none)\n");
  printf("  --trace FILE            Chrome trace JSON of --trace-steps (ui.perfetto.dev, chrome://tracing)\n");
  printf("  --trace-steps A:B       the steps the trace covers (default %d:%d, or the last step if fewer)\n",
         DEFAULT_TRACE_FIRST, DEFAULT_TRACE_LAST);
  printf("  --memory-snapshot FILE  every allocation and free of --snapshot-steps, for fsdp memviz\n");
  printf("  --snapshot-steps A:B    the steps the snapshot covers (default %d:%d, or the last step if fewer)\n",
         DEFAULT_TRACE_FIRST, DEFAULT_TRACE_LAST);
  printf("  -h, --help              this text\n");
}

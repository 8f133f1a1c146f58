/* Options of the commands that build a model (train, plan, eval, export, sample), all from
 * one table, FLAGS, read by the flag engine (fsdp/flags.h): a row holds a flag's name, the
 * commands that take it, what --help shows of it, and the field its value goes to with the
 * kind of value it is. --model is applied first, so that the preset is in place before any
 * shape override whatever the flag order. Then the model's source (--checkpoint,
 * --init-from) and the defaults that depend on other flags are resolved, and the checks
 * that involve several flags made. Every bad input ends the job with a message that names
 * the flag. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/cli.h"
#include "fsdp/cuda_arch.h"
#include "fsdp/error.h"
#include "fsdp/flags.h"
#include "fsdp/gpt2.h"
#include "fsdp/hf.h"
#include "fsdp/nn.h"
#include "fsdp/train.h"

/* Defaults resolved after parsing, from other flags; macros so that --help can spell them. */
#define DEFAULT_SEQ_LEN 256 /* lowered to the model's max_seq_len when that is smaller */
#define MIN_LR_DIVISOR 10   /* --min-lr defaults to --lr / 10 */
/* The first step is left out of traces by default: it pays for first touches of memory. */
#define DEFAULT_FIRST_STEP 2
#define DEFAULT_LAST_STEP 3
#define DEFAULT_LOSS_SCALE 65536 /* torch.cuda.amp.GradScaler's initial scale */
#define DEFAULT_MAX_SHARD_SIZE "5GB" /* transformers' save_pretrained's */
#define DEFAULT_VAL_FRACTION 0.1 /* without --val-data */
#define SPELLED(x) #x
#define SPELL(x) SPELLED(x)

/* The names a value may take; FLAG_ENUM's by the value each stands for. */
static const char *const DATA_FORMATS[] = {"auto", "text", "nanogpt", "llmc", NULL};
static const char *const DATA_IOS[] = {"pread", "mmap", NULL};
static const char *const DATA_CHANGED[] = {"refuse", "accept", NULL};
static const char *const DEVICES[] = {"cpu", "cuda", NULL};
static const char *const PLAN_FORMATS[] = {"text", "json", NULL};
static const char *const PARAM_DTYPES[] = {[DTYPE_F32] = "fp32", [DTYPE_BF16] = "bf16", [DTYPE_F16] = "fp16", NULL};
static const char *const REDUCE_DTYPES[] = {[DTYPE_F32] = "fp32", [DTYPE_BF16] = "bf16", NULL};
static const char *const OFFLOAD[] = {"none", "cpu", NULL};     /* offload_cpu 0, 1 */
static const char *const OVERLAP_ON_OFF[] = {"on", "off", NULL}; /* overlap.blocking 0, 1 */

/* ---- the values the engine's kinds do not cover ---- */

static void parse_model(void *field, const char *flag, const char *v) {
  struct model_spec *m = field;
  const struct model_preset *preset = model_preset_find(v);
  if (!preset) fsdp_fatal("%s: unknown model '%s' (known: %s)", flag, v, model_preset_names());
  m->family = preset->family;
  m->config = preset->config;
  m->name = v;
}

/* An arch of fsdp/cuda_arch.h's table: those the kernels are built for. */
static void parse_cuda_arch(void *field, const char *flag, const char *v) {
  const struct cuda_arch *arch = cuda_arch_find(v);
  if (!arch) fsdp_fatal("%s: unknown GPU arch '%s' (known: %s)", flag, v, cuda_arch_names());
  *(const char **)field = arch->name;
}

static void parse_repeated(void *field, const char *flag, const char *v) {
  struct repeated_flag *r = field;
  if (r->n == (int)(sizeof r->given / sizeof r->given[0])) fsdp_fatal("%s: given more than %d times", flag, r->n);
  r->given[r->n++] = v;
}

/* none, full, or every:K (K >= 1): how many blocks activation checkpointing covers. */
static void parse_ac(void *field, const char *flag, const char *text) {
  static const char *const WHOLE[] = {"none", "full"}; /* every 0th block (none), every block */
  int *every = field;
  int whole = flag_name_index(WHOLE, 2, text);
  if (whole >= 0) {
    *every = whole;
    return;
  }
  if (strncmp(text, "every:", 6) != 0) fsdp_fatal("%s: expected none, full or every:K, got '%s'", flag, text);
  const char *k_text = text + 6;
  char *end;
  errno = 0;
  int number = k_text[0] != '\0' && !isspace((unsigned char)k_text[0]); /* strtol would skip blanks */
  long k = number ? strtol(k_text, &end, 10) : 0;
  if (!number || *end != '\0' || errno == ERANGE || k > INT_MAX)
    fsdp_fatal("%s: '%s' is not every:K with an integer K", flag, text);
  if (k < 1) fsdp_fatal("%s: every:K needs K >= 1 (checkpoint every K-th block), got '%s'", flag, text);
  *every = (int)k;
}

/* block, none, or size:N, N a count of parameters with an optional K, M or G (10^3, 10^6, 10^9). */
static void parse_wrap(void *field, const char *flag, const char *text) {
  static const char *const KINDS[] = {[WRAP_MODULE] = "block", [WRAP_NONE] = "none"};
  struct fsdp_wrap_policy *w = field;
  if (strcmp(text, KINDS[WRAP_MODULE]) == 0 || strcmp(text, KINDS[WRAP_NONE]) == 0) {
    w->kind = strcmp(text, KINDS[WRAP_MODULE]) == 0 ? WRAP_MODULE : WRAP_NONE;
    return;
  }
  if (strncmp(text, "size:", 5) != 0) fsdp_fatal("%s: expected block, none or size:N, got '%s'", flag, text);
  const char *number = text + 5;
  char *end;
  errno = 0;
  double n = isdigit((unsigned char)number[0]) ? strtod(number, &end) : 0.0;
  double unit = 1.0;
  if (n > 0.0 && *end != '\0' && end[1] == '\0') {
    unit = *end == 'K' ? 1e3 : *end == 'M' ? 1e6 : *end == 'G' ? 1e9 : 0.0;
    end += unit > 0.0;
  }
  if (n <= 0.0 || *end != '\0' || errno == ERANGE || n * unit < 1.0 || n * unit > 1e15)
    fsdp_fatal("%s: '%s' is not size:N with N a positive number of parameters (such as 100M)", flag, text);
  w->kind = WRAP_SIZE;
  w->min_params = (size_t)(n * unit);
}

/* "R,S": both positive. */
static void parse_mesh(void *field, const char *flag, const char *text) {
  struct mesh_shape *m = field;
  flag_int_pair(flag, text, ',', 1, "R,S (replicas, ranks per shard group; e.g. 2,4)", &m->replicate, &m->shard);
}

/* "A:B", 1 <= A <= B: the steps a trace or snapshot covers. */
static void parse_step_range(void *field, const char *flag, const char *text) {
  struct step_range *r = field;
  flag_int_pair(flag, text, ':', 1, "FIRST:LAST (e.g. 2:4)", &r->first, &r->last);
  if (r->last < r->first) fsdp_fatal("%s: the last step %d comes before the first %d", flag, r->last, r->first);
}

/* One --data: a second would silently replace the first; several shards go in one, comma-separated. */
static void parse_data(void *field, const char *flag, const char *v) {
  const char **files = field;
  if (*files)
    fsdp_fatal("%s is given twice ('%s', then '%s'): give several files, globs or folders in one %s, separated by "
               "commas",
               flag, *files, v, flag);
  *files = v;
}

/* "1,2,3": token ids, each checked against the vocabulary where the model is known. */
static void parse_token_ids(void *field, const char *flag, const char *v) {
  struct token_ids *t = field;
  free(t->ids);
  t->ids = fsdp_xcalloc(strlen(v) / 2 + 1, sizeof *t->ids);
  t->n = 0;
  for (const char *p = v;; p++) {
    size_t len = strcspn(p, ",");
    char id[16];
    if (len == 0 || len >= sizeof id) fsdp_fatal("%s: '%s' is not a comma-separated list of token ids", flag, v);
    memcpy(id, p, len);
    id[len] = '\0';
    t->ids[t->n++] = flag_int(flag, id, 0);
    p += len;
    if (*p == '\0') break;
  }
}

/* ---- the table ---- */

enum {
  TRAIN = 1 << COMMAND_TRAIN,
  PLAN = 1 << COMMAND_PLAN,
  EVAL = 1 << COMMAND_EVAL,
  EXPORT = 1 << COMMAND_EXPORT,
  SAMPLE = 1 << COMMAND_SAMPLE,
  BOTH = TRAIN | PLAN,
  MODELS = TRAIN | PLAN | EVAL | EXPORT | SAMPLE /* every command that builds a model */
};

#define OPTIONS struct command_options
#define TEXT(field) FLAG_TEXT_OF(OPTIONS, field)
#define POSITIVE(field) FLAG_INT_OF(OPTIONS, field, 1)
#define NONNEGATIVE(field) FLAG_INT_OF(OPTIONS, field, 0)
#define FLOAT(field, range) FLAG_FLOAT_OF(OPTIONS, field, range)
#define CHOICE(field, noun, names) FLAG_CHOICE_OF(OPTIONS, field, noun, names)
#define ENUM(field, noun, names) FLAG_ENUM_OF(OPTIONS, field, noun, names)
#define CUSTOM(field, parse) FLAG_CUSTOM_OF(OPTIONS, field, parse)

static const char PLAN_ONLY[] = "plan", MODEL[] = "model", OVERLAP[] = "overlap of communication with compute",
                  COMM[] = "communication", MEMORY[] = "memory", SCHEDULE[] = "batch and schedule",
                  OPTIMIZER[] = "optimizer (AdamW; the learning rate warms up to --lr, then decays to --min-lr)",
                  DATA[] = "data", OUTPUT[] = "output", EVAL_ONLY[] = "evaluation", EXPORT_ONLY[] = "export",
                  CHECKPOINTS[] = "checkpoints (docs/architecture.md)", SAMPLE_ONLY[] = "sampling";
#define STEP_RANGE_DEFAULT SPELL(DEFAULT_FIRST_STEP) ":" SPELL(DEFAULT_LAST_STEP) ", or the last step if fewer"

static const struct flag FLAGS[] = {
    {PLAN_ONLY, "--world-size", PLAN, "W", FLAG_NOTE("required, but with --sweep"), POSITIVE(world_size),
     .help = "ranks the plan is for"},
    {PLAN_ONLY, "--format", PLAN, "text|json", FLAG_DEFAULT("text"), CHOICE(format, "format", PLAN_FORMATS),
     .help = "how the plan is printed"},
    {PLAN_ONLY, "--ranks-per-node", PLAN, "N", FLAG_NOTE("8 on cuda (W when fewer), else S of --mesh"),
     POSITIVE(ranks_per_node),
     .help = "consecutive ranks on one machine: the bytes sent within and between machines, and the links the "
             "rings run over"},
    {PLAN_ONLY, "--nics-per-node", PLAN, "N", FLAG_NOTE("one a GPU on cuda, 1 on the cpu"), POSITIVE(nics_per_node),
     .help = "a machine's NICs between machines, each of --link inter's rate, which the rings crossing it share"},
    {PLAN_ONLY, "--gpu", PLAN, "NAME[,memory=SIZE][,hbm=RATE][,host=RATE]",
     FLAG_NOTE("this machine's GPU where the table knows it, else h100-sxm"), TEXT(gpu),
     .help = "--device cuda: the GPU the step is timed on, a preset (a100-sxm, a100-pcie, h100-sxm, h100-pcie, "
             "h100-nvl, h200, b200, l40s: the datasheet's dense bf16 peak, HBM bandwidth and memory, and its "
             "platform's links), with figures that change the preset's"},
    {PLAN_ONLY, "--link", PLAN, "intra=LINK|inter=LINK", FLAG_NOTE("the GPU's platform's; on the cpu loopback and "
     "ethernet-25g"), CUSTOM(links, parse_repeated),
     .help = "a link of the rings, within a machine (intra) or between machines (inter): a preset (nvlink3, nvlink4, "
             "nvlink5, pcie4, pcie5, ib-hdr200, ib-ndr400, roce-200, roce-400, ethernet-25g, ethernet-100g, "
             "loopback) or RATE[,LATENCY] one rank sends one way, such as 50GB/s,5us or 400Gb/s; given once for "
             "each"},
    {PLAN_ONLY, "--efficiency", PLAN, "CLASS=FRACTION,...", FLAG_NOTE("the GPU's: matmul 0.75 (Ampere, Ada) or 0.6 "
     "(Hopper, Blackwell), attention 0.5 or 0.35, memory 0.8, link 0.8; on the cpu 1, 0.5, 1, 1 of the probes"),
     TEXT(efficiency),
     .help = "the share of the peak each class of work reaches: matmul (the products), attention (its products), "
             "memory (the ops that stream their operands, of the bandwidth), link (the rings, of the line rate)"},
    {PLAN_ONLY, "--calibrate", PLAN, "LOG", FLAG_NOTE("none"), CUSTOM(calibrate, parse_repeated),
     .help = "a `fsdp train --log` of this configuration (at any world size): the compute and the links are "
             "fitted to what its steps took (on one machine: the links within it; across machines: a ring step's "
             "latency between them); given again, each log in turn"},
    {PLAN_ONLY, "--sweep", PLAN, "W1:W2|W,W,...", FLAG_NOTE("none: one plan at --world-size"), TEXT(sweep),
     .help = "plan the job at each world size (W1:W2: the powers of two from W1 to W2) over the sharding "
             "strategies, HSDP's shard sizes, --batch-size and twice it, activation checkpointing off and on, and "
             "on cuda offload off and on; a table ranked by tokens/s among those that fit --memory-limit"},
    {PLAN_ONLY, "--memory-limit", PLAN, "SIZE", FLAG_NOTE("the GPU's memory; none on the cpu"),
     FLAG_SIZE_OF(OPTIONS, memory_limit), .help = "--sweep: the device memory a rank may use"},
    {PLAN_ONLY, "--sweep-svg", PLAN, "FILE", FLAG_NOTE("none"), TEXT(sweep_svg),
     .help = "--sweep: a picture of the best step time and its exposed communication against the world size"},
    {PLAN_ONLY, "--cuda-arch", PLAN, "sm_XY", FLAG_NOTE("this machine's GPU, else " CUDA_ARCH_DEFAULT),
     CUSTOM(cuda_arch, parse_cuda_arch),
     .help = "--device cuda: the GPU architecture the plan is for (one the kernels are built for, such as sm_80, "
             "sm_86, sm_89, sm_90, sm_100, sm_120); the plan names it, the shared memory a block may have there and "
             "the attention kernels' tiling in it"},

    {MODEL, "--model", MODELS, "NAME", FLAG_DEFAULT("shakespeare-char"), CUSTOM(run.model, parse_model),
     .help = "preset:", .help_more = model_preset_names},
    {MODEL, "--n-layer", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.n_layer),
     .help = "transformer blocks"},
    {MODEL, "--n-head", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.n_head),
     .help = "attention heads"},
    {MODEL, "--n-kv-head", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.n_kv_head),
     .help = "heads of keys and values (grouped-query attention; Llama only)"},
    {MODEL, "--ffn-hidden", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.ffn_hidden),
     .help = "SwiGLU width (Llama only)"},
    {MODEL, "--n-embd", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.n_embd),
     .help = "embedding width"},
    {MODEL, "--vocab-size", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.vocab_size),
     .help = "vocabulary size; every token id must be below it"},
    {MODEL, "--block-size", MODELS, "N", FLAG_NOTE("from the preset"), POSITIVE(run.model.config.max_seq_len),
     .help = "the model's max_seq_len: rows of GPT-2's position embedding, of Llama's RoPE table"},
    {MODEL, "--sharding", MODELS, "full|grad-op|none", FLAG_DEFAULT("full"),
     ENUM(run.model.sharding, "strategy", SHARDING_STRATEGY_NAMES),
     .help = "full (ZeRO-3), grad-op (ZeRO-2) or none (DDP)"},
    {MODEL, "--wrap", BOTH, "block|size:N|none", FLAG_DEFAULT("block"), CUSTOM(run.wrap, parse_wrap),
     .help = "which modules share a unit: each block, the embedding, the final norm and the output projection a "
             "unit of its own (block); consecutive modules until a unit holds N parameters (size:N, N such as 50M); "
             "or one unit (none). A tied output projection shares the embedding's unit"},
    {MODEL, "--reshard-after-forward", BOTH, "auto|true|false", FLAG_DEFAULT("auto"),
     ENUM(run.wrap.reshard_after_forward, "value", RESHARD_AFTER_FORWARD_NAMES),
     .help = "full sharding: free a unit's gathered parameters after its forward; auto does so for all but the last "
             "unit of the forward, whose backward comes next"},
    {MODEL, "--device", MODELS, "cpu|cuda", FLAG_DEFAULT("cpu"), CHOICE(run.model.device, "device", DEVICES),
     .help = "where the model computes"},
    {MODEL, "--init-from", TRAIN | EVAL | EXPORT | SAMPLE, "PATH", FLAG_NOTE("a fresh initialisation from --seed"),
     TEXT(run.model.init_from),
     .help = "parameters from Hugging Face safetensors: a .safetensors file, a model.safetensors.index.json, or a "
             "folder holding either; the config.json beside them sets the model, and a model flag given too must "
             "agree with it"},
    {MODEL, "--checkpoint", EVAL | EXPORT | SAMPLE, "DIR", FLAG_NOTE("none"), TEXT(run.model.checkpoint),
     .help = "parameters from a training checkpoint (DIR/step-NNNNNNNN of --checkpoint-dir), written at any world "
             "size and sharding; its metadata.json sets the model"},

    /* The runtime's own defaults, FSDP_OVERLAP_DEFAULT, which cli_options_test holds these to. */
    {OVERLAP, "--prefetch", BOTH, "N", FLAG_DEFAULT("1"), NONNEGATIVE(run.overlap.prefetch),
     .help = "units ahead whose all-gather runs during a forward"},
    {OVERLAP, "--backward-prefetch", BOTH, "pre|post|none", FLAG_DEFAULT("pre"),
     ENUM(run.overlap.backward_prefetch, "mode", BACKWARD_PREFETCH_NAMES),
     .help = "gather the next unit of the backward before (pre) or after (post) a unit's gradient computation, or "
             "not ahead at all (none)"},
    {OVERLAP, "--max-unsharded", BOTH, "N", FLAG_DEFAULT("2"), POSITIVE(run.overlap.max_unsharded),
     .help = "units gathered at once under full sharding (a unit's own gather is never held back)"},
    {OVERLAP, "--overlap", BOTH, "on|off", FLAG_DEFAULT("on"), ENUM(run.overlap.blocking, "value", OVERLAP_ON_OFF),
     .help = "off: wait for every collective as soon as it is launched"},

    {COMM, "--mesh", BOTH, "R,S", FLAG_NOTE("1,W"), CUSTOM(run.mesh, parse_mesh),
     .help = "HSDP: shard within groups of S consecutive ranks (a node's) and replicate across R of them (R S = W): "
             "gradients are reduce-scattered within a group, then all-reduced across the replicas"},
    {COMM, "--comm-timeout", TRAIN, "SECONDS", FLAG_DEFAULT("600"), FLOAT(run.comm_timeout, FLAG_POSITIVE),
     .help = "a collective not finished after this long ends the job, naming the rank, the unit and the collective "
             "(a stopped, dead or unreachable rank); MPI's start-up comes before the flags are read: "
             "mpirun -x FSDP_COMM_TIMEOUT=SECONDS bounds it too"},

    {MEMORY, "--ac", BOTH, "none|full|every:K", FLAG_DEFAULT("none"), CUSTOM(run.ac_every, parse_ac),
     .help = "activation checkpointing of all blocks, or of every K-th one (blocks K-1, 2K-1, ...): a checkpointed "
             "block keeps only its input, and its backward recomputes its forward"},
    {MEMORY, "--param-dtype", BOTH | EVAL, "fp32|bf16|fp16", FLAG_DEFAULT("fp32"),
     ENUM(run.mp.param_dtype, "dtype", PARAM_DTYPES),
     .help = "dtype of the gathered parameters (the all-gather moves it) and of the unsharded gradients; master "
             "weights and AdamW stay fp32"},
    {MEMORY, "--reduce-dtype", BOTH, "fp32|bf16", FLAG_DEFAULT("fp32"), ENUM(run.mp.reduce_dtype, "dtype", REDUCE_DTYPES),
     .help = "dtype of the gradient reduce-scatter"},
    {MEMORY, "--loss-scale", BOTH, "X", FLAG_NOTE(SPELL(DEFAULT_LOSS_SCALE) " with fp16"),
     FLOAT(run.loss_scale, FLAG_POSITIVE),
     .help = "fp16 only: initial dynamic loss scale; a step whose gradients overflow is skipped and the scale "
             "halved, and it doubles after 2000 good steps"},
    {MEMORY, "--grad-accum", BOTH, "K", FLAG_DEFAULT("1"), POSITIVE(run.grad_accum),
     .help = "micro-batches of --batch-size per optimizer step"},
    {MEMORY, "--accum-mode", BOTH, "sharded|no-sync", FLAG_DEFAULT("sharded"),
     ENUM(run.accum_mode, "mode", ACCUM_MODE_NAMES),
     .help = "sharded: reduce-scatter every micro-batch and add into the sharded gradient (less memory, K times the "
             "traffic); no-sync: keep unsharded gradients over the micro-batches and reduce once"},
    {MEMORY, "--offload", BOTH, "none|cpu", FLAG_DEFAULT("none"), ENUM(run.offload_cpu, "offload", OFFLOAD),
     .help = "--device cuda only: cpu keeps the sharded parameters, gradients and AdamW state in pinned host memory "
             "(copied to the GPU for each all-gather, back after each reduce-scatter) and runs AdamW on the CPU"},

    {SCHEDULE, "--seq-len", BOTH | EVAL, "T", FLAG_NOTE(SPELL(DEFAULT_SEQ_LEN) ", or the model's max_seq_len if smaller"),
     POSITIVE(run.seq_len), .help = "tokens per sequence"},
    {SCHEDULE, "--batch-size", BOTH | EVAL, "B", FLAG_DEFAULT("8"), POSITIVE(run.batch_size),
     .help = "sequences per rank per micro-batch"},
    {SCHEDULE, "--global-batch-size", BOTH, "G", FLAG_NOTE("unset"), POSITIVE(run.global_batch_size),
     .help = "sequences per step over all ranks and micro-batches: B = G / (W K)"},
    {SCHEDULE, "--steps", BOTH, "N", FLAG_DEFAULT("50"), POSITIVE(run.steps), .help = "optimizer steps"},
    {SCHEDULE, "--seed", MODELS & ~SAMPLE, "N", FLAG_DEFAULT("1337"), FLAG_U64_OF(OPTIONS, run.seed),
     .help = "seed of the initial weights and of the batches"},

    {OPTIMIZER, "--lr", BOTH, "X", FLAG_DEFAULT("6e-4"), FLOAT(run.lr, FLAG_POSITIVE), .help = "peak learning rate"},
    {OPTIMIZER, "--min-lr", BOTH, "X", FLAG_NOTE("--lr / " SPELL(MIN_LR_DIVISOR)), FLOAT(run.min_lr, FLAG_NONNEGATIVE),
     .help = "learning rate at the end of the decay"},
    {OPTIMIZER, "--warmup", BOTH, "N", FLAG_DEFAULT("10"), NONNEGATIVE(run.warmup), .help = "warmup steps"},
    {OPTIMIZER, "--weight-decay", BOTH, "X", FLAG_DEFAULT("0.1"), FLOAT(run.weight_decay, FLAG_NONNEGATIVE),
     .help = "decoupled weight decay"},
    {OPTIMIZER, "--grad-clip", BOTH, "X", FLAG_DEFAULT("1"), FLOAT(run.grad_clip, FLAG_NONNEGATIVE),
     .help = "clip the global gradient norm to X; 0 disables"},
    {OPTIMIZER, "--beta1", BOTH, "X", FLAG_DEFAULT("0.9"), FLOAT(run.beta1, FLAG_UNIT_INTERVAL),
     .help = "decay of the gradients' running mean, in [0, 1)"},
    {OPTIMIZER, "--beta2", BOTH, "X", FLAG_DEFAULT("0.95"), FLOAT(run.beta2, FLAG_UNIT_INTERVAL),
     .help = "decay of the squared gradients' running mean, in [0, 1)"},
    {OPTIMIZER, "--eps", BOTH, "X", FLAG_DEFAULT("1e-8"), FLOAT(run.eps, FLAG_POSITIVE),
     .help = "added to the update's denominator"},

    {DATA, "--data", TRAIN | EVAL, "FILES", FLAG_REQUIRED, CUSTOM(run.data.files, parse_data),
     .help = "token files (or text with --tokenizer): a file, a quoted glob ('fineweb_train_*.bin'), a folder (its "
             ".bin files), or several of these separated by commas; globs and folders sorted by name. Shards are "
             "streamed: a rank reads the windows its batches need"},
    {DATA, "--data", PLAN, "FILES", FLAG_NOTE("none"), CUSTOM(run.data.files, parse_data),
     .help = "accepted as train takes it; not read (a rank reads its windows as its batches need them, in no memory "
             "the plan counts)"},
    {DATA, "--val-data", TRAIN, "FILES", FLAG_NOTE("none: the tail --val-fraction of --data"),
     CUSTOM(run.data.val_files, parse_data),
     .help = "validation shards, as --data takes them (llm.c's 'fineweb_val_*.bin'); --val-fraction is then 0"},
    {DATA, "--data-format", BOTH | EVAL, "auto|text|nanogpt|llmc", FLAG_DEFAULT("auto"),
     CHOICE(run.data.format, "format", DATA_FORMATS),
     .help = "text: bytes; nanogpt: uint16 .bin; llmc: llm.c .bin (GPT-2's uint16 or Llama 3's uint32 ids, by its "
             "magic); auto tells them apart, refusing a header it cannot prove"},
    {DATA, "--tokenizer", TRAIN | EVAL, "FILE", FLAG_NOTE("none"), TEXT(run.data.tokenizer),
     .help = "a Hugging Face tokenizer.json: --data is text, tokenized at load as one document (the ids fsdp "
             "tokenize would write)"},
    {DATA, "--data-io", TRAIN | EVAL, "pread|mmap", FLAG_DEFAULT("pread"), CHOICE(run.data.io, "way", DATA_IOS),
     .help = "how a rank reads a window: pread it, or copy it from the shard mapped read-only "
             "(docs/architecture.md, \"Data\")"},
    {DATA, "--val-fraction", BOTH, "X", FLAG_NOTE(SPELL(DEFAULT_VAL_FRACTION) ", 0 with --val-data"),
     FLOAT(run.data.val_fraction, FLAG_UNIT_INTERVAL),
     .help = "last fraction of --data's tokens (its shards one after another) kept for validation, in [0, 1)"},
    {DATA, "--val-every", BOTH, "N", FLAG_DEFAULT("0"), NONNEGATIVE(run.data.val_every),
     .help = "validate every N steps (and after the last); 0 never"},
    {DATA, "--val-batches", BOTH, "N", FLAG_DEFAULT("4"), POSITIVE(run.data.val_batches),
     .help = "global batches per validation: the first N of the validation windows in order, the same every time"},

    {EVAL_ONLY, "--batches", EVAL, "N", FLAG_NOTE("every window of --data"), POSITIVE(batches),
     .help = "batches of --batch-size windows of --seq-len tokens, read in order from the start of --data (window "
             "i of a shard: its tokens i T to i T + T - 1, each predicting the next); the ranks share them"},
    {EXPORT_ONLY, "--output", EXPORT, "DIR", FLAG_REQUIRED, TEXT(output), .alias = "-o",
     .help = "the folder to write (made if missing): model.safetensors, or its parts and their index, and "
             "config.json"},
    {EXPORT_ONLY, "--dtype", EXPORT, "fp32|bf16", FLAG_DEFAULT("fp32"), ENUM(export_dtype, "dtype", REDUCE_DTYPES),
     .help = "of the tensors written"},
    {EXPORT_ONLY, "--max-shard-size", EXPORT, "SIZE", FLAG_DEFAULT(DEFAULT_MAX_SHARD_SIZE),
     FLAG_SIZE_OF(OPTIONS, max_file_bytes),
     .help = "above this many bytes, the tensors go into several files of at most this much (one larger tensor "
             "alone), and an index; BYTES, or with KB, MB, GB, KiB, MiB, GiB"},

    {SAMPLE_ONLY, "--prompt", SAMPLE, "TEXT", FLAG_NOTE("none"), TEXT(prompt),
     .help = "the prompt as text: encoded by a --tokenizer tokenizer.json, else its bytes the tokens (a byte-level "
             "model, vocab at most 256)"},
    {SAMPLE_ONLY, "--prompt-tokens", SAMPLE, "ID,ID,...", FLAG_NOTE("none"), CUSTOM(prompt_tokens, parse_token_ids),
     .help = "the prompt as token ids (one of --prompt and --prompt-tokens is required)"},
    {SAMPLE_ONLY, "--seed", SAMPLE, "N", FLAG_DEFAULT("1337"), FLAG_U64_OF(OPTIONS, run.seed),
     .help = "seed of the draws (the same seed, the same tokens), and of a fresh model's weights"},
    {SAMPLE_ONLY, "--max-new-tokens", SAMPLE, "N", FLAG_DEFAULT("64"), POSITIVE(max_new_tokens),
     .help = "tokens to generate; fewer where the model's max_seq_len comes first"},
    {SAMPLE_ONLY, "--temperature", SAMPLE, "X", FLAG_DEFAULT("1"), FLOAT(temperature, FLAG_NONNEGATIVE),
     .help = "divides the logits before the softmax; 0 is greedy (the largest logit, ties to the lowest id)"},
    {SAMPLE_ONLY, "--top-k", SAMPLE, "K", FLAG_DEFAULT("0"), NONNEGATIVE(top_k),
     .help = "draw among the K largest logits only (ties to the lower ids); 0 keeps them all"},
    {SAMPLE_ONLY, "--tokenizer", SAMPLE, "FILE", FLAG_NOTE("none: ids, or bytes for a byte-level model"),
     TEXT(tokenizer),
     .help = "a Hugging Face tokenizer.json (--prompt is text, encoded after the document token; the new tokens are "
             "printed as text, up to an end-of-text token), or llm.c's GPT-2 tokenizer file (gpt2_tokenizer.bin: "
             "printed as text)"},

    {OUTPUT, "--log", TRAIN, "FILE", FLAG_NOTE("none"), TEXT(run.log_path), .help = "metrics, one JSON object per step"},
    {OUTPUT, "--peak-gflops", TRAIN, "X", FLAG_NOTE("cpu: measured once and cached; cuda: the card's bf16 peak"),
     FLOAT(run.peak_gflops, FLAG_POSITIVE), .help = "a rank's peak GFLOP/s, which the MFU of each step is measured against"},
    {OUTPUT, "--trace", TRAIN, "FILE", FLAG_NOTE("none"), TEXT(run.trace_path),
     .help = "Chrome trace JSON of --trace-steps (ui.perfetto.dev, chrome://tracing)"},
    {OUTPUT, "--trace-steps", TRAIN, "A:B", FLAG_NOTE(STEP_RANGE_DEFAULT), CUSTOM(run.trace_steps, parse_step_range),
     .help = "the steps the trace covers"},
    {OUTPUT, "--memory-snapshot", TRAIN, "FILE", FLAG_NOTE("none"), TEXT(run.snapshot_path),
     .help = "every allocation and free of --snapshot-steps, for fsdp memviz"},
    {OUTPUT, "--snapshot-steps", TRAIN, "A:B", FLAG_NOTE(STEP_RANGE_DEFAULT),
     CUSTOM(run.snapshot_steps, parse_step_range), .help = "the steps the snapshot covers"},

    {CHECKPOINTS, "--checkpoint-dir", TRAIN, "DIR", FLAG_NOTE("none"), TEXT(run.checkpoint_dir),
     .help = "write sharded checkpoints to DIR/step-NNNNNNNN/ (one file per rank and metadata.json), in the "
             "background"},
    {CHECKPOINTS, "--checkpoint-every", TRAIN, "N", FLAG_DEFAULT("0"), NONNEGATIVE(run.checkpoint_every),
     .help = "write one every N steps and after the last step; 0: after the last step only"},
    {CHECKPOINTS, "--keep-last", TRAIN, "K", FLAG_DEFAULT("0"), NONNEGATIVE(run.keep_last),
     .help = "keep the newest K complete checkpoints, removing older ones; 0: keep all"},
    {CHECKPOINTS, "--resume", TRAIN, "auto|DIR", FLAG_NOTE("none"), TEXT(run.resume),
     .help = "continue from a checkpoint directory, or (auto) from the newest complete one in --checkpoint-dir, "
             "starting fresh when there is none; the flags that shape training must be the checkpoint's"},
    {CHECKPOINTS, "--data-changed", TRAIN, "refuse|accept", FLAG_DEFAULT("refuse"),
     ENUM(run.data_changed, "choice", DATA_CHANGED),
     .help = "resuming with another --data than the checkpoint's (its shards' names and token counts): refuse, or "
             "accept and go on from the checkpoint's epoch and its place in it"},
};

/* ---- parsing ---- */

static const char *const COMMAND_NAMES[] = {[COMMAND_TRAIN] = "train", [COMMAND_PLAN] = "plan",
                                            [COMMAND_EVAL] = "eval", [COMMAND_EXPORT] = "export",
                                            [COMMAND_SAMPLE] = "sample"};
static const char *const INTROS[] = {
    [COMMAND_PLAN] = "Prints, without allocating the model, the bytes per rank by category at the peak of a\n"
                     "training step and the bytes each rank sends and receives per step.\n",
    [COMMAND_EVAL] = "Prints the mean cross-entropy over the windows as one JSON line, {\"loss\": ...}.\n",
    [COMMAND_EXPORT] = "Writes the model's parameters as Hugging Face safetensors, with transformers' names and\n"
                       "layouts, and its config.json, for transformers' from_pretrained.\n",
    [COMMAND_SAMPLE] = "Generates from the prompt with a KV cache on one rank and prints the new tokens: as text for a\n"
                       "byte-level model or with --tokenizer, else their ids.\n",
};

static struct flag_parser parser(enum command command) {
  return (struct flag_parser){.command = COMMAND_NAMES[command], .flags = FLAGS,
                              .n_flags = sizeof FLAGS / sizeof FLAGS[0], .command_bit = 1u << command,
                              .first = "--model", .intro = INTROS[command]};
}

static int is_model(const struct flag *f) { return f->kind == FLAG_CUSTOM && f->parse == parse_model; }

/* A flag that sets the model's family or shape: what --init-from's config.json sets. */
static int sets_model(const struct flag *f) {
  size_t config = offsetof(OPTIONS, run.model.config);
  return is_model(f) || (f->offset >= config && f->offset < config + sizeof(struct model_config));
}

/* The family and shape a source of weights holds (a config.json, a checkpoint's
 * metadata) become the model's. Model flags given as well must agree with them: with
 * --model, the model the flags make (the preset, then each shape flag, as training
 * resolves them) must be the source's, so that the very flags a run was trained with are
 * accepted; without it, each shape flag must leave the source's model as it is. */
static void take_model_from(const struct flag_parser *p, struct command_options *o, const struct flag_parse *given,
                            const char *flag, const char *source, const struct model_family *family,
                            const struct model_config *config, const char *where) {
  struct model_spec *m = &o->run.model;
  int preset_given = 0;
  char list[512] = "";
  for (int i = 0; i < given->n_given; i++) {
    const struct flag_arg *a = &given->given[i];
    if (!sets_model(a->flag)) continue;
    preset_given |= is_model(a->flag);
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s %s", used ? " " : "", a->flag->name, a->value);
  }
  if (preset_given) {
    if (m->family != family)
      fsdp_fatal("--model %s: a %s model, but %s %s holds a %s one (%s)", m->name, m->family->name, flag, source,
                 family->name, where);
    const char *difference = model_config_difference(&m->config, config);
    if (difference) fsdp_fatal("%s disagrees with %s's %s: %s", list, flag, where, difference);
  }
  for (int i = 0; i < given->n_given && !preset_given; i++) {
    const struct flag_arg *a = &given->given[i];
    if (!sets_model(a->flag)) continue;
    struct command_options probe = *o;
    probe.run.model.family = family;
    probe.run.model.config = *config;
    flag_apply(p, &probe, a);
    const char *difference = model_config_difference(&probe.run.model.config, config);
    if (difference) fsdp_fatal("%s %s disagrees with %s's %s: %s", a->flag->name, a->value, flag, where, difference);
  }
  m->family = family;
  m->config = *config;
  m->name = source;
}

/* --init-from with a config.json sets the model; without one (a bare .safetensors file),
 * the model flags say what the file holds. --checkpoint always sets it. */
static void apply_model_source(const struct flag_parser *p, struct command_options *o,
                               const struct flag_parse *given) {
  const struct model_spec *m = &o->run.model;
  if (m->init_from && m->checkpoint)
    fsdp_fatal("--checkpoint and --init-from: give one source of weights, not both");
  struct model_config config;
  if (m->checkpoint) {
    const struct model_family *family = checkpoint_model_read(m->checkpoint, &config);
    take_model_from(p, o, given, "--checkpoint", m->checkpoint, family, &config, "metadata.json");
    return;
  }
  if (!m->init_from) return;
  char *config_path;
  const struct model_family *family = hf_config_load(m->init_from, &config, &config_path);
  if (!family) return;
  take_model_from(p, o, given, "--init-from", m->init_from, family, &config, config_path);
  free(config_path);
}

/* The first and last step of a range left unset: steps 2 and 3, or the last step if fewer. */
static void resolve_step_range(const char *flag, int steps, struct step_range *r) {
  if (r->first == 0) {
    r->first = DEFAULT_FIRST_STEP < steps ? DEFAULT_FIRST_STEP : steps;
    r->last = DEFAULT_LAST_STEP < steps ? DEFAULT_LAST_STEP : steps;
  } else if (r->last > steps) {
    fsdp_fatal("%s: step %d is past the last step %d (--steps)", flag, r->last, steps);
  }
}

/* Defaults that depend on other flags, then the checks that involve several flags. */
static void resolve_and_check(struct command_options *options) {
  struct train_config *o = &options->run;
  struct model_spec *m = &o->model;
  struct data_spec *d = &o->data;
  const char *problem = m->family->config_problem(&m->config);
  if (problem) fsdp_fatal("model '%s': %s", m->name, problem);
  if (o->seq_len == 0) o->seq_len = DEFAULT_SEQ_LEN < m->config.max_seq_len ? DEFAULT_SEQ_LEN : m->config.max_seq_len;
  if (o->seq_len > m->config.max_seq_len)
    fsdp_fatal("--seq-len: %d exceeds the model's max_seq_len %d (raise it with --block-size)", o->seq_len,
               m->config.max_seq_len);
  if (o->ac_every > m->config.n_layer)
    fsdp_fatal("--ac every:%d: the model has %d blocks, so none would be checkpointed (every:%d checkpoints the "
               "last; none turns it off)",
               o->ac_every, m->config.n_layer, m->config.n_layer);
  if (o->min_lr < 0.0f) o->min_lr = o->lr / MIN_LR_DIVISOR;
  if (d->val_files && d->val_fraction > 0.0f)
    fsdp_fatal("--val-fraction %g and --val-data: validation comes from one of them", d->val_fraction);
  if (d->val_fraction < 0.0f) d->val_fraction = d->val_files ? 0.0f : (float)DEFAULT_VAL_FRACTION;
  if (o->min_lr > o->lr) fsdp_fatal("--min-lr: %g exceeds --lr %g", o->min_lr, o->lr);
  resolve_step_range("--trace-steps", o->steps, &o->trace_steps);
  resolve_step_range("--snapshot-steps", o->steps, &o->snapshot_steps);
  if (o->mp.reduce_dtype != DTYPE_F32 && m->sharding == SHARD_NONE)
    fsdp_fatal("--reduce-dtype %s: not supported with --sharding none, whose all-reduce is fp32",
               dtype_name(o->mp.reduce_dtype));
  if (o->wrap.reshard_after_forward != RESHARD_AUTO && m->sharding != SHARD_FULL)
    fsdp_fatal("--reshard-after-forward: only for --sharding full (%s never reshards after forward)",
               sharding_strategy_name(m->sharding));
  if (o->loss_scale > 0.0f && o->mp.param_dtype != DTYPE_F16)
    fsdp_fatal("--loss-scale: only for --param-dtype fp16 (bf16 and fp32 need no loss scaling)");
  if (o->mp.param_dtype == DTYPE_F16 && o->loss_scale == 0.0f) o->loss_scale = DEFAULT_LOSS_SCALE;
  if (d->tokenizer && d->format && strcmp(d->format, "auto") != 0 && strcmp(d->format, "text") != 0)
    fsdp_fatal("--data-format %s: with --tokenizer, --data is text to tokenize", d->format);
  if (!o->checkpoint_dir && o->checkpoint_every) fsdp_fatal("--checkpoint-every: needs --checkpoint-dir");
  if (!o->checkpoint_dir && o->keep_last) fsdp_fatal("--keep-last: needs --checkpoint-dir");
  if (o->resume && strcmp(o->resume, "auto") == 0 && !o->checkpoint_dir)
    fsdp_fatal("--resume auto: needs --checkpoint-dir, where it looks for the newest checkpoint");
  if (options->gpu && strcmp(m->device, "cuda") != 0)
    fsdp_fatal("--gpu %s: only with --device cuda (a plan for --device %s runs on this machine's cpu, probed)",
               options->gpu, m->device);
  if ((options->sweep_svg || options->memory_limit) && !options->sweep)
    fsdp_fatal("%s: only with --sweep", options->sweep_svg ? "--sweep-svg" : "--memory-limit");
  if (options->cuda_arch && strcmp(m->device, "cuda") != 0)
    fsdp_fatal("--cuda-arch %s: only with --device cuda (a plan for --device %s runs no GPU kernel)",
               options->cuda_arch, m->device);
  if (o->offload_cpu && strcmp(m->device, "cuda") != 0)
    fsdp_fatal("--offload cpu: only with --device cuda (on --device %s the sharded state is in host memory "
               "already)",
               m->device);
  if (o->mesh.replicate > 1 && m->sharding == SHARD_NONE)
    fsdp_fatal("--mesh %d,%d: --sharding none replicates over every rank already (a mesh needs full or grad-op)",
               o->mesh.replicate, o->mesh.shard);
  if (options->world_size) {
    int replicate, shard;
    train_config_mesh(o, options->world_size, &replicate, &shard);
    if (options->ranks_per_node && options->world_size % options->ranks_per_node != 0)
      fsdp_fatal("--ranks-per-node %d does not divide --world-size %d", options->ranks_per_node, options->world_size);
  }
}

/* GPT-2 has a key and value head for each query head and an MLP 4 --n-embd wide: Llama's
 * --n-kv-head and --ffn-hidden do not shape it (taken, they broke its KV cache), and its
 * kv heads follow --n-head. */
/* Whether flag is among those given. */
static int was_given(const struct flag_parse *given, const char *flag) {
  for (int i = 0; i < given->n_given; i++)
    if (strcmp(given->given[i].flag->name, flag) == 0) return 1;
  return 0;
}

static void check_gpt2_shape(struct command_options *o, const struct flag_parse *given) {
  struct model_spec *m = &o->run.model;
  if (m->family != &GPT2_FAMILY) return;
  static const char *const LLAMA_ONLY[] = {"--n-kv-head", "--ffn-hidden"};
  for (int i = 0; i < 2; i++)
    if (was_given(given, LLAMA_ONLY[i]))
      fsdp_fatal("%s: Llama 3 only; --model %s is GPT-2, whose attention has --n-head heads of keys and values and "
                 "whose MLP is 4 x --n-embd wide",
                 LLAMA_ONLY[i], m->name);
  m->config.n_kv_head = m->config.n_head;
}

/* A step runs its micro-batches one after another: more than this many is no run's
 * (2^31 of them planned for minutes and printed nothing). */
enum { MAX_GRAD_ACCUM = 1 << 16 };

/* Flags given out of reach (--grad-accum, --comm-timeout), or that other flags would make void:
 * --global-batch-size sets each rank's batch (G / (W --grad-accum)), so a --batch-size
 * beside it was ignored; --val-every with validation turned off validated nothing. */
static void check_given_flags(const struct command_options *o, const struct flag_parse *given) {
  if (o->run.grad_accum > MAX_GRAD_ACCUM)
    fsdp_fatal("--grad-accum %d: at most %d micro-batches a step", o->run.grad_accum, MAX_GRAD_ACCUM);
  /* 1 ms ended a healthy run in its MPI_Finalize, after its last step. */
  if (was_given(given, "--comm-timeout") && o->run.comm_timeout < 1.0f)
    fsdp_fatal("--comm-timeout %g: at least 1 second (a healthy job's collectives and MPI's finalize take longer than "
               "that)",
               o->run.comm_timeout);
  if (was_given(given, "--batch-size") && was_given(given, "--global-batch-size"))
    fsdp_fatal("--batch-size %d and --global-batch-size %d: give one (--global-batch-size G makes each rank's batch "
               "G / (world size x --grad-accum))",
               o->run.batch_size, o->run.global_batch_size);
  const struct data_spec *d = &o->run.data;
  if (d->val_every > 0 && was_given(given, "--val-every") && !d->val_files && d->val_fraction == 0.0f)
    fsdp_fatal("--val-every %d: there is no validation data (--val-fraction 0 and no --val-data)", d->val_every);
}

/* argv[0] is the command name ("train"), as in main's argv, so that the same argv
 * can go through MPI_Init first. */
/* OpenMP's team is made as asked: 100000 threads crashed libgomp, 20000 took 30 s a step. */
enum { MAX_THREADS_A_CPU = 16 };
static void check_threads(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = nn_num_threads();
  if (cpus > 0 && threads > MAX_THREADS_A_CPU * cpus)
    fsdp_fatal("OMP_NUM_THREADS=%d: more than %d threads for each of this machine's %ld CPUs (a rank's threads "
               "share its cores: give at most the cores it has)",
               threads, MAX_THREADS_A_CPU, cpus);
}

int command_options_parse(enum command command, struct command_options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->run.min_lr = -1.0f; /* 0 is a valid --min-lr, so "not given" needs a value of its own */
  o->run.data.val_fraction = -1.0f;
  struct flag_parser p = parser(command);
  struct flag_parse given;
  flags_parse(&p, o, argc, argv, &given);
  if (given.help) {
    flag_parse_free(&given);
    flags_print_help(&p);
    return 1;
  }
  apply_model_source(&p, o, &given);
  check_gpt2_shape(o, &given);
  check_given_flags(o, &given);
  flag_parse_free(&given);
  if (command == COMMAND_PLAN && !o->world_size && !o->sweep)
    fsdp_fatal("--world-size is required (see fsdp plan --help), but with --sweep");
  if (o->sweep && (o->world_size || o->run.mesh.replicate))
    fsdp_fatal("%s: not with --sweep, which plans each of its world sizes over the layouts",
               o->world_size ? "--world-size" : "--mesh");
  if (o->sweep && o->run.global_batch_size)
    fsdp_fatal("--global-batch-size: not with --sweep, which plans each world size over batch sizes a rank");
  resolve_and_check(o);
  check_threads();
  return 0;
}

void command_options_free(struct command_options *o) {
  free(o->prompt_tokens.ids);
  o->prompt_tokens = (struct token_ids){0};
}

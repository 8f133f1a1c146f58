/* The `fsdp` command (src/cli): its options, parsed from one table of flags (args.c), and
 * one entry point per command, each a thin file that parses, calls one function of the
 * train or data layer, and returns an exit status. */
#ifndef FSDP_CLI_H
#define FSDP_CLI_H

#include <stdint.h>

#include "fsdp/dtype.h"
#include "fsdp/train.h"

/* The commands that build a model, which share one table of flags. */
enum command { COMMAND_TRAIN, COMMAND_PLAN, COMMAND_EVAL, COMMAND_EXPORT, COMMAND_SAMPLE };

/* Token ids given on the command line. */
struct token_ids {
  int *ids; /* owned */
  int n;
};

/* The options of train, plan, eval, export and sample. train and plan take the model,
 * batch, sharding and training flags; plan adds its own and needs no --data. eval,
 * export and sample take the model flags (and --checkpoint or --init-from); eval the data
 * and batch flags and --batches, export its output, sample the prompt and the draws. */
struct command_options {
  struct train_config run;
  /* plan */
  int world_size;             /* ranks the plan is for */
  const char *format;         /* text or json */
  const char *cuda_arch;      /* the GPU arch a cuda plan is for ("sm_86"), or NULL */
  int ranks_per_node;         /* consecutive ranks a machine; 0: 8 on cuda (at most W), else S of --mesh */
  int nics_per_node;          /* a machine's NICs; 0: the machine's (one a GPU, one a CPU machine) */
  const char *gpu;            /* the GPU a cuda plan times the step on (plan_machine_gpu), or NULL */
  struct repeated_flag {
    const char *given[4];     /* each time the flag was given, in order */
    int n;
  } links,                    /* --link: a later one for the same link wins */
      calibrate;              /* --calibrate: `fsdp train --log`s to fit the machine to, in order */
  const char *efficiency;     /* --efficiency CLASS=FRACTION,..., or NULL */
  const char *sweep;          /* the world sizes of --sweep, or NULL: one plan */
  const char *sweep_svg;      /* where --sweep draws its picture, or NULL */
  uint64_t memory_limit;      /* a rank's device memory in a sweep; 0: the GPU's */
  /* eval */
  int batches;                /* of batch_size windows; 0: every window */
  /* export */
  const char *output;         /* the folder written */
  enum dtype export_dtype;    /* of the tensors written */
  uint64_t max_file_bytes;    /* the size above which the safetensors are split */
  /* sample */
  const char *prompt;         /* text: encoded by tokenizer, or its bytes the tokens (a byte-level model) */
  struct token_ids prompt_tokens;
  int max_new_tokens;
  float temperature;          /* 0 is greedy */
  int top_k;                  /* 0 keeps every token */
  const char *tokenizer;      /* a tokenizer.json or llm.c's GPT-2 tokenizer file, or NULL */
};

/* Fills defaults, then parses argv (argv[0] is the command name, "train"); ends the job
 * with a message naming the flag on any bad input. Returns 1 when --help was printed. */
int command_options_parse(enum command command, struct command_options *o, int argc, char **argv);
void command_options_free(struct command_options *o);

/* Starts MPI for a command that runs on many ranks, and ends the job naming the first
 * argument where a rank's command line is not rank 0's (ranks.c). */
void cli_start_ranks(int *argc, char ***argv);
int fsdp_train_main(int argc, char **argv);
int fsdp_plan_main(int argc, char **argv);
int fsdp_eval_main(int argc, char **argv);
int fsdp_export_main(int argc, char **argv);
int fsdp_sample_main(int argc, char **argv);
int fsdp_tokenize_main(int argc, char **argv);

#endif

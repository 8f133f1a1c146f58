/* Private to src/data: the llm.c token files fsdp tokenize writes, on a thread of their own
 * so that writing and syncing run while the encoder encodes. One file (OUT.bin), or
 * shards of a fixed number of tokens named as llm.c's dev/data/fineweb.py names them:
 * PREFIX_val_000000.bin (the first, when there is a validation shard), then
 * PREFIX_train_000001.bin, ... Each file is written under its name + ".tmp", its header
 * (with its count) last, and synced; only when every file is complete are they renamed,
 * in order, and the folder synced: a run that fails leaves no file, and no shard set
 * that passes for a whole one. */
#ifndef FSDP_DATA_TOKEN_OUTPUT_H
#define FSDP_DATA_TOKEN_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

struct token_output_plan {
  const char *output;  /* the file, or the shards' prefix */
  int sharded;
  size_t shard_tokens; /* sharded: tokens a shard, the last one's the rest */
  size_t val_tokens;   /* sharded: tokens of the first shard, the validation one; 0: none */
  int vocab_size;      /* up to 65536: GPT-2's header and uint16 ids, else Llama 3's and uint32 */
  int ahead;           /* buffers of a million ids the writer may be behind */
};

struct token_output;

/* Creates the first file (so that a folder that cannot be written is found at once) and
 * starts the writer. */
struct token_output *token_output_open(const struct token_output_plan *plan);
/* The next ids, in order (a text stream's sink); a failure writing ends the job here. */
void token_output_ids(void *output, const uint32_t *ids, size_t n);
size_t token_output_count(const struct token_output *o);
int token_output_width(const struct token_output *o);
/* For the job's abort handler, when it ends on an error (a line of JSON refused, a full
 * disk): stops the writer and removes every temporary file, so that no half-written file
 * is left beside the real names. */
void token_output_abandon(struct token_output *o);
/* Writes the rest, syncs and renames every file; returns how many files, their names
 * in names (valid until token_output_free). */
int token_output_finish(struct token_output *o, const char *const **names);
/* A warning on stderr for shards under the prefix that this run did not write (an
 * earlier run's, with more shards): a glob over the prefix would train on them too. */
void token_output_warn_stale(const struct token_output *o);
void token_output_free(struct token_output *o);

#endif

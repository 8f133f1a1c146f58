/* The data layer (src/data): token files and the shards a run streams
 * (docs/architecture.md, "Data"): what a token file holds (token_file.c), the shards a
 * --data names (data_set.c), the order an epoch visits their windows in (data_order.c),
 * reading a window from its shard (data_reader.c), the batches of a training run built
 * from them (data_loader.c), text read through a tokenizer (text_data.c), and fsdp
 * tokenize's pipeline of text and JSON Lines into token files (tokenize.c). A rank never
 * holds a data set: it reads the T + 1 tokens of each window its batches need, when they
 * need it. The layer knows nothing of training: its loader takes the data flags. */
#ifndef FSDP_DATA_H
#define FSDP_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/input_file.h"

/* The data flags of train and eval: what a run reads, and how. */
struct data_spec {
  const char *files;     /* --data: files, globs and folders, comma-separated (data_set_open) */
  const char *val_files; /* --val-data: the validation shards, as files; or NULL */
  const char *format;    /* --data-format: auto, text, nanogpt, llmc */
  const char *tokenizer; /* --tokenizer: a tokenizer.json the files are text for; or NULL */
  const char *io;        /* --data-io: pread or mmap, how a rank reads its windows */
  float val_fraction;    /* --val-fraction: the tail of files kept for validation (0 with val_files) */
  int val_every;         /* --val-every: steps between validations; 0 never */
  int val_batches;       /* --val-batches: global batches a validation reads */
};

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

/* ---- token_file.c: what a token file holds ---- */

/* Loads a whole token file into memory (format "auto" decides by content: an llm.c
 * magic, else the .bin suffix for nanoGPT, else text; a header shaped like llm.c's that
 * is none of its token files is refused) and checks every token id against vocab_size;
 * every problem ends the job with a message naming the file. Training and eval stream
 * their shards instead (data_set_open). */
void token_data_load(struct token_data *d, const char *path, const char *format, int vocab_size);
/* Ends the job, naming path and the position, at the first id at or above vocab_size. */
void token_data_check_vocab(const struct token_data *d, const char *path, int vocab_size);
void token_data_free(struct token_data *d);

struct token_file_layout {
  enum token_format format; /* TOKENS_TEXT, TOKENS_NANOGPT or TOKENS_LLMC */
  int width;                /* bytes a token: 1, 2 or 4 */
  size_t offset;            /* of the first token: llm.c's header is 1024 bytes */
  size_t n_tokens;
};
/* Opens path, reads its header (format as token_data_load takes it) and checks it against
 * the file's size; every problem ends the job naming the file. Reads no token. */
void token_file_probe(const char *path, const char *format, struct token_file_layout *out);

/* ---- text_data.c: text through a tokenizer ---- */

/* Reads the text file at path as one document: the tokenizer's document token, then the
 * text's ids; the tokenizer (a tokenizer.json) must fit vocab_size. */
void token_data_tokenize(struct token_data *d, const char *path, const char *tokenizer, int vocab_size);

/* ---- data_set.c: the shards a --data names ---- */

struct data_shard {
  char *path;
  const char *name; /* its base name: what a checkpoint records of it */
  uint64_t device, inode; /* the file's identity: one file under two names (a hard link) is one */
  int64_t changed_ns;     /* its status change time at the start: a reader reopening it checks it is unchanged */
  uint32_t head_crc32c;   /* of its first tokens' bytes (16 KiB at most): with name and size, what a checkpoint records */
  struct token_file_layout layout;
  void *tokens; /* --tokenizer: the file's ids, tokenized at the start (layout.width bytes each); else NULL */
};

struct data_set {
  const char *flag; /* "--data" or "--val-data": what messages name */
  int n_shards;
  struct data_shard *shards;
  int width; /* every shard's */
  size_t n_tokens;
};

/* spec: files, quoted globs ('fineweb_train_*.bin', expanded with glob(3)) and folders
 * (their .bin files), separated by commas; each glob's and folder's files sorted by name.
 * Every shard's header and size are checked (token_file_probe), and all must have one
 * token width. With a tokenizer, each file is text, tokenized now into memory. Every
 * problem ends the job naming flag and the file. */
void data_set_open(struct data_set *s, const char *flag, const char *spec, const char *format,
                   const char *tokenizer, int vocab_size);
/* The first shard of a that is a shard of b too (the same file), or NULL. */
const struct data_shard *data_set_shared(const struct data_set *a, const struct data_set *b,
                                         const struct data_shard **in_b);
void data_set_free(struct data_set *s);
/* Ends the job naming the shard when fd, its file as opened, is another file than at the
 * start, or one written to since (the same size: a reader checks sizes itself); one that
 * lost its name since it was opened still reads the start's bytes. */
void data_shard_check_unchanged(const struct data_shard *s, int fd);

/* ---- data_order.c: which window comes when ---- */

/* Tokens [first, first + n_tokens) of a shard; its windows are the T + 1 tokens from
 * first + w T, w < n_windows, as llm.c's DataLoader steps them. */
struct token_range {
  int shard;
  size_t first, n_tokens, n_windows;
};

/* Where a window is: epoch, the range and the window's index in it. */
struct window_place {
  uint64_t epoch;
  int range;
  size_t window;
};

/* Ranges visited epoch after epoch. Shuffled: each epoch takes the ranges in a seeded
 * order and each range's windows in a seeded permutation (both from (seed, epoch)); else
 * every epoch takes them as listed, windows in order. Window u of the run is window
 * u mod E of epoch u / E, E the windows of an epoch: a pure function of (seed, ranges,
 * T, u), whatever reads it. */
struct data_order {
  int n_ranges;
  struct token_range *ranges;
  int T, shuffle;
  uint64_t seed;
  uint64_t windows_per_epoch;
  /* The epoch last asked for: its ranges' order and the windows before each. */
  uint64_t cached_epoch;
  int *order;
  uint64_t *before;
};
/* Takes ranges (malloc'd; owned from here). */
void data_order_init(struct data_order *o, struct token_range *ranges, int n_ranges, int T, uint64_t seed,
                     int shuffle);
struct window_place data_order_place(struct data_order *o, uint64_t u);
/* How many epochs o places: 2^28, or fewer where their windows would pass 2^64. */
uint64_t data_order_epochs(const struct data_order *o);
void data_order_free(struct data_order *o);
/* A seeded permutation of [0, n): its i-th element, in O(1) memory (a Feistel network,
 * cycle-walked into [0, n)). */
uint64_t data_permute(uint64_t seed, uint64_t stream, uint64_t n, uint64_t i);

/* ---- data_reader.c: a window's tokens ---- */

/* How a rank reads its windows (--data-io): pread each one into a buffer, or map the
 * shard read-only and copy from the mapping (docs/architecture.md, "Data", measured). */
enum data_io { DATA_IO_PREAD, DATA_IO_MMAP };
enum data_io data_io_parse(const char *name);

enum { DATA_READER_SLOTS = 4 };
struct data_reader {
  const struct data_set *set;
  enum data_io io;
  int vocab_size;
  /* The shards open now, the least recently used replaced: a batch reads one shard or two. */
  struct reader_slot {
    int shard; /* -1: free */
    struct input_file file;
    const unsigned char *map; /* DATA_IO_MMAP: the whole file */
    uint64_t used;
  } slots[DATA_READER_SLOTS];
  uint64_t clock;
  unsigned char *buffer; /* one window's bytes, read or copied from the mapping */
  size_t buffer_bytes;
};
void data_reader_init(struct data_reader *r, const struct data_set *set, enum data_io io, int vocab_size);
/* Tokens [first, first + T] of shard: inputs the first T, targets the last T. An id at or
 * above the vocabulary ends the job naming the file, the byte offset and the id. */
void data_reader_window(struct data_reader *r, int shard, size_t first, int T, int *inputs, int *targets);
void data_reader_free(struct data_reader *r);

/* ---- data_loader.c: the batches of a training run ---- */

/* A window's place as a checkpoint keeps it: the epoch and the windows of it before. */
struct data_position {
  uint64_t epoch, epoch_window;
};

/* Windows in an order, and the reader of their shards. */
struct window_source {
  struct data_order order;
  struct data_reader reader;
};

struct data_loader {
  struct data_spec spec;
  int vocab_size;
  uint64_t seed;      /* of the training order */
  struct data_set train_set, val_set; /* val_set: --val-data's shards (none: the tail of --data) */
  struct window_source train, val;
  int has_val;
  int T, G; /* G: windows of a global batch */
  size_t val_windows;
  /* Global batch b starts at window origin_window + (b - origin_batch) G of train's order:
   * (0, 0) for a fresh run; a resumed one goes on from its checkpoint's position. */
  uint64_t origin_batch, origin_window;
};

/* spec's files (and its validation files, or their tail val_fraction) for batches of G
 * windows of T + 1 tokens, ids below vocab_size, the training order drawn from seed; every
 * problem ends the job naming the flag or the file. */
void data_loader_open(struct data_loader *l, const struct data_spec *spec, int vocab_size, uint64_t seed, int T,
                      int G);
/* Rows [first, first + count) of global batch b (from 0; step s trains on batch s - 1). */
void data_loader_train_batch(struct data_loader *l, uint64_t b, int first, int count, int *inputs, int *targets);
/* Rows of validation batch b: the validation windows in order, G a batch, the same at every call. */
void data_loader_val_batch(struct data_loader *l, uint64_t b, int first, int count, int *inputs, int *targets);
/* Where global batch b starts. */
struct data_position data_loader_position(const struct data_loader *l, uint64_t b);
/* A resumed run: global batch b starts at p. p past the epoch's end (another data set)
 * starts the next epoch. Returns 0, or -1 (seeking nothing) where that epoch is past the
 * order's (data_order_epochs): a position no run reaches. */
int data_loader_seek(struct data_loader *l, uint64_t b, struct data_position p);
/* The shard of the training window at p, and the window's index in it: for the log and
 * the checkpoint, which a reader can check a position against. */
void data_loader_describe(struct data_loader *l, struct data_position p, const char **shard_name,
                          size_t *shard_window);
/* The epoch global batch b starts in. */
uint64_t data_loader_epoch(const struct data_loader *l, uint64_t b);
/* The shard of --data or --val-data that is the file at path (by its identity: another
 * name of it too), or NULL: what a run writes must not be a file it reads. */
const struct data_shard *data_loader_shard_at(const struct data_loader *l, const char *path);
void data_loader_free(struct data_loader *l);

/* ---- tokenize_files.c: fsdp tokenize's pipeline ---- */

/* Bytes that end a document within a text file (and are dropped); none: each file is one. */
struct text_separator {
  const char *bytes;
  size_t n;
};

/* Text files, or JSON Lines files' documents, into llm.c token files with a Hugging Face
 * tokenizer.json: one OUT.bin, or shards named as llm.c's fineweb.py names them. */
struct tokenize_job {
  const char *tokenizer;           /* the tokenizer.json */
  const char *output;              /* OUT.bin: one file; anything else: the shards' prefix */
  const char *document_token;      /* the added token before each document, or "none"; NULL: the tokenizer's */
  const char *jsonl_key;           /* every file is JSON Lines, each line's member KEY a document; NULL: text */
  struct text_separator separator; /* text files: documents within a file too (n 0: none) */
  long shard_tokens, val_tokens;   /* shards: tokens a shard, and of the validation shard; -1: the defaults */
  int threads;                     /* that encode */
  char *const *files;
  int n_files;
};
/* Three stages run at once: a thread reads (inflating gzip, parsing JSON), the encoder's
 * threads encode, and a thread writes, each file under a temporary name until all are
 * complete. Prints a summary line on stderr; every failure ends the job naming the file. */
void tokenize_files(const struct tokenize_job *job);

#endif

/* `fsdp tokenize`: text files, or JSON Lines files' documents, to llm.c token files with a
 * Hugging Face tokenizer.json, at data-set scale. Each text file is a document (or each
 * stretch between --document-separator's bytes), each JSONL line's --jsonl-key string is
 * one, and each document starts with the document token, as llm.c's data scripts write
 * them. Three stages run at once: a thread reads (document_reader.c: inflating gzip,
 * parsing JSON), the encoder's threads encode windows of documents (src/text), and a
 * thread writes (token_output.c: one OUT.bin, or shards of --shard-tokens named as
 * llm.c's fineweb.py names them, each under a temporary name until all are complete). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "document_reader.h"
#include "fsdp/cli.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/text.h"
#include "fsdp/timer.h"
#include "text_input.h"
#include "token_output.h"

/* llm.c's fineweb.py's shard: 10^8 tokens. */
#define DEFAULT_SHARD_TOKENS 100000000L
/* The encoder's window a thread (text_stream_create's default), which the reader may be
 * ahead by. */
enum { WINDOW_BYTES_PER_THREAD = 8 << 20 };

struct tokenize_options {
  const char *tokenizer, *output, *document_token, *jsonl_key;
  struct text_separator separator; /* decoded from --document-separator */
  long shard_tokens, val_tokens;   /* -1: not given */
  int threads;
  char **files;
  int n_files;
};

static void print_help(void) {
  printf("usage: fsdp tokenize --tokenizer tokenizer.json --output OUT.bin|PREFIX [options] FILE...\n"
         "\n"
         "Encodes text files, or JSON Lines files with --jsonl-key, with a Hugging Face tokenizer.json (byte-level\n"
         "BPE, as GPT-2's and Llama 3's) into llm.c token files for fsdp train --data: a header, then uint16 ids\n"
         "when the vocabulary has at most 65536 tokens (llm.c's GPT-2 format), else uint32 (its Llama 3 format).\n"
         "Each FILE is a document (each line of a JSONL file is one), and each document starts with the document\n"
         "token, as llm.c's data scripts write them. gzip files are inflated. --output OUT.bin writes one file;\n"
         "--output PREFIX (not ending in .bin) writes shards of --shard-tokens as llm.c's fineweb.py does:\n"
         "PREFIX_val_000000.bin first (the validation shard), then PREFIX_train_000001.bin, ... Every file is\n"
         "written under a temporary name and renamed only once all are complete.\n"
         "\n"
         "options:\n"
         "  --tokenizer FILE              the tokenizer.json (required)\n"
         "  --output OUT.bin|PREFIX, -o   the token file, or the shards' prefix (required)\n"
         "  --shard-tokens N              PREFIX: tokens a shard (default 100M, llm.c's; K, M, G: 10^3, 10^6, 10^9);\n"
         "                                a document goes on in the next shard, the last shard holds the rest\n"
         "  --val-tokens N                PREFIX: tokens of the first shard, PREFIX_val_000000.bin (default: a\n"
         "                                shard's); 0: no validation shard, PREFIX_train_000000.bin first\n"
         "  --jsonl-key KEY               every FILE is JSON Lines: each line an object whose string member KEY\n"
         "                                is a document (FineWeb's and most data sets': text); a line that is\n"
         "                                not stops the run naming the file and the line\n"
         "  --document-separator TEXT     also end a document at each TEXT within a text file (dropped from the\n"
         "                                text; \\n, \\r, \\t and \\\\ are read as escapes), e.g. '<|endoftext|>'\n"
         "  --document-token TOKEN|none   the added token put before each document (default: <|begin_of_text|>\n"
         "                                where the tokenizer has it, else <|endoftext|>: llm.c's choice)\n"
         "  --threads N                   threads that encode (default: the cores this process may use; one\n"
         "                                more reads and one writes); the ids do not depend on it\n"
         "  -h, --help                    this text\n");
}

/* \n, \r, \t and \\ decoded; anything else after a backslash is refused. */
static struct text_separator decode_separator(const char *text) {
  char *out = fsdp_xmalloc(strlen(text) + 1);
  size_t n = 0;
  for (const char *p = text; *p; p++) {
    if (*p != '\\') {
      out[n++] = *p;
      continue;
    }
    p++;
    char c = *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == 't' ? '\t' : *p == '\\' ? '\\' : '\0';
    if (!c)
      fsdp_fatal("--document-separator: unknown escape '\\%c' in '%s' (known: \\n, \\r, \\t, \\\\)", *p ? *p : ' ',
                 text);
    out[n++] = c;
  }
  if (n == 0) fsdp_fatal("--document-separator: empty");
  return (struct text_separator){out, n};
}

static int parse_threads(const char *text) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end || errno == ERANGE || v < 1 || v > 4096)
    fsdp_fatal("--threads: must be an integer from 1 to 4096, got '%s'", text);
  return (int)v;
}

/* A count of tokens: digits, perhaps then K, M or G (10^3, 10^6, 10^9), from min to
 * llm.c's most a file may count (2^31 - 1). */
static long parse_tokens(const char *flag, const char *text, long min) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  long scale = *end == 'K' ? 1000L : *end == 'M' ? 1000000L : *end == 'G' ? 1000000000L : 1L;
  if (scale > 1) end++;
  if (text[0] < '0' || text[0] > '9' || *end || errno == ERANGE || v > INT32_MAX / scale || v * scale < min)
    fsdp_fatal("%s: must be a count of tokens from %ld to %d (K, M, G for 10^3, 10^6, 10^9), got '%s'", flag, min,
               INT32_MAX, text);
  return v * scale;
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

/* OUT.bin is one file; anything else names shards, and must say their name, not only
 * their folder. */
static void check_output(const struct tokenize_options *o) {
  if (ends_with(o->output, ".bin")) {
    if (o->shard_tokens >= 0 || o->val_tokens >= 0)
      fsdp_fatal("%s: --output '%s' is one file; give --output a prefix (not ending in .bin), e.g. 'data/fineweb', "
                 "to write shards", o->shard_tokens >= 0 ? "--shard-tokens" : "--val-tokens", o->output);
    return;
  }
  struct stat st;
  if (ends_with(o->output, "/") || (stat(o->output, &st) == 0 && S_ISDIR(st.st_mode)))
    fsdp_fatal("--output '%s' is a folder: give the shards' prefix in it, e.g. '%s%sfineweb' writes "
               "%s%sfineweb_val_000000.bin, %s%sfineweb_train_000001.bin, ...", o->output, o->output,
               ends_with(o->output, "/") ? "" : "/", o->output, ends_with(o->output, "/") ? "" : "/", o->output,
               ends_with(o->output, "/") ? "" : "/");
}

/* Returns 1 when --help was printed. */
static int parse(int argc, char **argv, struct tokenize_options *o) {
  memset(o, 0, sizeof *o);
  o->shard_tokens = o->val_tokens = -1;
  o->files = fsdp_xcalloc((size_t)argc + 1, sizeof *o->files);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) return 1;
    if (arg[0] != '-' || strcmp(arg, "-") == 0) {
      o->files[o->n_files++] = argv[i];
      continue;
    }
    const char *name = strcmp(arg, "-o") == 0 ? "--output" : arg;
    size_t name_len = strcspn(name, "=");
    const char *value = name[name_len] == '=' ? name + name_len + 1 : NULL;
    static const char *const FLAGS[] = {"--tokenizer", "--output", "--document-separator", "--document-token",
                                        "--threads", "--jsonl-key", "--shard-tokens", "--val-tokens"};
    int flag = -1;
    for (int f = 0; f < (int)(sizeof FLAGS / sizeof *FLAGS); f++)
      if (strlen(FLAGS[f]) == name_len && strncmp(FLAGS[f], name, name_len) == 0) flag = f;
    if (flag < 0) fsdp_fatal("unknown flag '%.*s' (see fsdp tokenize --help)", (int)name_len, name);
    if (!value) {
      if (i + 1 >= argc) fsdp_fatal("%s: missing value", FLAGS[flag]);
      value = argv[++i];
    }
    if (value[0] == '\0') fsdp_fatal("%s: missing value", FLAGS[flag]);
    switch (flag) {
      case 0: o->tokenizer = value; break;
      case 1: o->output = value; break;
      case 2: o->separator = decode_separator(value); break;
      case 3: o->document_token = value; break;
      case 4: o->threads = parse_threads(value); break;
      case 5: o->jsonl_key = value; break;
      case 6: o->shard_tokens = parse_tokens(FLAGS[flag], value, 1); break;
      case 7: o->val_tokens = parse_tokens(FLAGS[flag], value, 0); break;
    }
  }
  if (!o->tokenizer) fsdp_fatal("--tokenizer is required (see fsdp tokenize --help)");
  if (!o->output) fsdp_fatal("--output is required (see fsdp tokenize --help)");
  if (o->n_files == 0) fsdp_fatal("no input files (see fsdp tokenize --help)");
  if (o->jsonl_key && o->separator.n)
    fsdp_fatal("--document-separator and --jsonl-key: each line of a JSONL file is a document; the separator cuts "
               "text files");
  check_output(o);
  if (!o->threads) o->threads = text_available_cores();
  return 0;
}

static int document_token(const struct tokenize_options *o, const struct text_tokenizer *t) {
  if (!o->document_token) {
    int id = text_tokenizer_document_token(t);
    if (id < 0)
      fsdp_fatal("--tokenizer '%s' has neither <|begin_of_text|> nor <|endoftext|>: name the token put before each "
                 "document with --document-token TOKEN (or none)",
                 o->tokenizer);
    return id;
  }
  if (strcmp(o->document_token, "none") == 0) return -1;
  int id = text_tokenizer_added(t, o->document_token);
  if (id < 0)
    fsdp_fatal("--document-token '%s' is not an added token of --tokenizer '%s'", o->document_token, o->tokenizer);
  return id;
}

/* What the encoder's ids go to: the output, and the count the progress line shows. */
struct ids_sink {
  struct token_output *out;
  struct text_progress *progress;
};

static void ids_to_output(void *context, const uint32_t *ids, size_t n) {
  struct ids_sink *sink = context;
  token_output_ids(sink->out, ids, n);
  sink->progress->tokens += n;
}

struct text_count {
  size_t bytes, documents;
  int open; /* the current document has text */
};

/* A block's documents into the stream, counted. */
static void feed(struct text_stream *s, const struct document_block *b, struct text_count *count) {
  size_t at = 0;
  for (size_t i = 0; i < b->n_pieces; i++) {
    const struct document_piece *p = &b->pieces[i];
    text_stream_write(s, b->text + at, p->n);
    at += p->n;
    count->bytes += p->n;
    count->open |= p->n > 0;
    if (p->ends) {
      text_stream_end_document(s);
      count->documents += (size_t)count->open; /* the stream skips a document without text */
      count->open = 0;
    }
  }
}

/* What a job that ends on an error stops first: the reading threads, then the writer,
 * whose temporary files go (token_output.h). */
static struct document_reader *active_reader;
static struct token_output *active_output;

static void stop_partial_work(int exit_code) {
  (void)exit_code;
  if (active_reader) document_reader_stop(active_reader);
  if (active_output) token_output_abandon(active_output);
}

int fsdp_tokenize_main(int argc, char **argv) {
  struct tokenize_options o;
  if (parse(argc, argv, &o)) {
    print_help();
    free(o.files);
    return 0;
  }
  struct text_tokenizer *t = text_tokenizer_load("--tokenizer", o.tokenizer);
  int token = document_token(&o, t);
  struct text_progress progress = {0};
  for (int i = 0; i < o.n_files; i++) { /* every input is checked before anything is written */
    struct input_file f;
    input_file_open(&f, "input", o.files[i]);
    progress.total += f.size;
    input_file_close(&f);
  }
  double start = time_now_ms();
  progress.start_ms = progress.shown_ms = start;
  int sharded = !ends_with(o.output, ".bin");
  long shard_tokens = o.shard_tokens >= 0 ? o.shard_tokens : DEFAULT_SHARD_TOKENS;
  struct token_output_plan plan = {
      .output = o.output, .sharded = sharded, .shard_tokens = (size_t)shard_tokens,
      .val_tokens = (size_t)(o.val_tokens >= 0 ? o.val_tokens : shard_tokens),
      .vocab_size = text_tokenizer_vocab_size(t),
      /* buffers of 2^20 ids: a window of 8 MiB a thread is about 2.5 million ids a thread */
      .ahead = 3 * o.threads + 2};
  fsdp_set_abort_handler(stop_partial_work);
  struct token_output *out = active_output = token_output_open(&plan);
  struct text_encoder *e = text_encoder_create(t, o.threads, 0);
  struct ids_sink sink = {out, &progress};
  struct text_stream *s = text_stream_create(e, 0, token, ids_to_output, &sink);
  struct document_files files = {o.files, o.n_files, o.jsonl_key, &o.separator};
  /* Parsing JSON costs about a tenth of encoding: a parser for every 8 encoding threads. */
  struct document_reader *reader = active_reader =
      document_reader_start(&files, 1 + o.threads / 8, (size_t)WINDOW_BYTES_PER_THREAD * (size_t)o.threads);
  struct text_count count = {0};
  for (struct document_block *b; (b = document_reader_next(reader));) {
    feed(s, b, &count);
    text_progress_add(&progress, b->file_bytes);
    document_block_free(b);
  }
  active_reader = NULL;
  document_reader_finish(reader);
  text_stream_finish(s);
  size_t tokens = token_output_count(out);
  if (tokens == 0) /* no token file at all rather than one that training refuses (the .tmp removed) */
    fsdp_fatal("the input files hold no text: nothing written to '%s%s'", o.output, sharded ? "_*.bin" : "");
  const char *const *names;
  int n_names = token_output_finish(out, &names);
  active_output = NULL;
  text_progress_done(&progress);
  double seconds = (time_now_ms() - start) / 1000.0;
  char written[1200];
  if (sharded)
    snprintf(written, sizeof written, "%d shard%s, %s%s%s", n_names, n_names == 1 ? "" : "s", names[0],
             n_names > 1 ? " to " : "", n_names > 1 ? names[n_names - 1] : "");
  else
    snprintf(written, sizeof written, "%s", names[0]);
  fprintf(stderr, "tokenize: %d file%s, %zu bytes in %zu document%s, %zu tokens (uint%d) in %.2f s (%.1f MB/s, "
          "%.2fM tokens/s, %d thread%s): %s\n", o.n_files, o.n_files == 1 ? "" : "s", count.bytes, count.documents,
          count.documents == 1 ? "" : "s", tokens, 8 * token_output_width(out), seconds,
          seconds > 0 ? (double)count.bytes / 1e6 / seconds : 0.0, seconds > 0 ? (double)tokens / 1e6 / seconds : 0.0,
          o.threads, o.threads == 1 ? "" : "s", written);
  if (sharded && n_names == 1 && plan.val_tokens > 0)
    fprintf(stderr, "tokenize: warning: every token went to the validation shard %s, and no training shard was "
            "written: lower --val-tokens (or 0 for none)\n", names[0]);
  token_output_warn_stale(out);
  token_output_free(out);
  text_encoder_free(e);
  text_tokenizer_free(t);
  free((char *)o.separator.bytes);
  free(o.files);
  return 0;
}

/* fsdp tokenize's pipeline: text files, or JSON Lines files' documents, to llm.c token
 * files with a Hugging Face tokenizer.json, at data-set scale. Each text file is a
 * document (or each stretch between the separator's bytes), each JSONL line's key string
 * is one, and each document starts with the document token, as llm.c's data scripts write
 * them. Three stages run at once: a thread reads (document_reader.c: inflating gzip,
 * parsing JSON), the encoder's threads encode windows of documents (src/text), and a
 * thread writes (token_output.c: one OUT.bin, or shards named as llm.c's fineweb.py names
 * them, each under a temporary name until all are complete). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document_reader.h"
#include "fsdp/data.h"
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

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

static int document_token(const struct tokenize_job *job, const struct text_tokenizer *t) {
  if (!job->document_token) {
    int id = text_tokenizer_document_token(t);
    if (id < 0)
      fsdp_fatal("--tokenizer '%s' has neither <|begin_of_text|> nor <|endoftext|>: name the token put before each "
                 "document with --document-token TOKEN (or none)",
                 job->tokenizer);
    return id;
  }
  if (strcmp(job->document_token, "none") == 0) return -1;
  int id = text_tokenizer_added(t, job->document_token);
  if (id < 0)
    fsdp_fatal("--document-token '%s' is not an added token of --tokenizer '%s'", job->document_token,
               job->tokenizer);
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

/* Where the reading is, for the stream's refusal of a pre-token to name (text_stream_origin). */
struct input_place {
  char **origins;           /* each file's "input 'PATH'" */
  int file;
  int documents_are_files;  /* text files without a separator: a document's end is its file's */
  int jsonl;                /* documents are JSON strings: offsets are in a document's text */
  size_t separator;         /* bytes dropped between a text file's documents */
  long document;            /* the current one's number in the file, from 1 */
  size_t offset;            /* of the next byte */
};

static void next_document(struct input_place *at) {
  if (at->documents_are_files) {
    at->file++;
    at->offset = 0;
  } else {
    at->document++;
    at->offset = at->jsonl ? 0 : at->offset + at->separator;
  }
}

/* A block's documents into the stream, counted. */
static void feed(struct text_stream *s, const struct document_block *b, struct text_count *count,
                 struct input_place *place) {
  size_t at = 0;
  for (size_t i = 0; i < b->n_pieces; i++) {
    const struct document_piece *p = &b->pieces[i];
    text_stream_origin(s, place->origins[place->file], place->jsonl ? place->document : 0, place->offset);
    text_stream_write(s, b->text + at, p->n);
    at += p->n;
    place->offset += p->n;
    count->bytes += p->n;
    count->open |= p->n > 0;
    if (p->ends) {
      text_stream_end_document(s);
      count->documents += (size_t)count->open; /* the stream skips a document without text */
      count->open = 0;
      next_document(place);
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

void tokenize_files(const struct tokenize_job *job) {
  struct text_tokenizer *t = text_tokenizer_load("--tokenizer", job->tokenizer);
  int token = document_token(job, t);
  struct text_progress progress = {0};
  for (int i = 0; i < job->n_files; i++) { /* every input is checked before anything is written */
    struct input_file f;
    input_file_open(&f, "input", job->files[i]);
    progress.total += f.size;
    input_file_close(&f);
  }
  double start = time_now_ms();
  progress.start_ms = progress.shown_ms = start;
  int sharded = !ends_with(job->output, ".bin");
  long shard_tokens = job->shard_tokens >= 0 ? job->shard_tokens : DEFAULT_SHARD_TOKENS;
  struct token_output_plan plan = {
      .output = job->output, .sharded = sharded, .shard_tokens = (size_t)shard_tokens,
      .val_tokens = (size_t)(job->val_tokens >= 0 ? job->val_tokens : shard_tokens),
      .vocab_size = text_tokenizer_vocab_size(t),
      /* buffers of 2^20 ids: a window of 8 MiB a thread is about 2.5 million ids a thread */
      .ahead = 3 * job->threads + 2};
  fsdp_set_abort_handler(stop_partial_work);
  struct token_output *out = active_output = token_output_open(&plan);
  struct text_encoder *e = text_encoder_create(t, job->threads, 0);
  struct ids_sink sink = {out, &progress};
  struct text_stream *s = text_stream_create(e, 0, token, ids_to_output, &sink);
  struct text_count count = {0};
  /* The names outlive the files: the stream holds a file's last document until a later one fills its window. */
  char **origins = fsdp_xcalloc((size_t)job->n_files, sizeof *origins);
  for (int i = 0; i < job->n_files; i++) {
    size_t size = strlen(job->files[i]) + sizeof "input ''";
    snprintf(origins[i] = fsdp_xmalloc(size), size, "input '%s'", job->files[i]);
  }
  /* Where each document is a file, the documents' ends tell the files apart and one reader reads them all. Else
   * (JSON Lines, a separator) a reader reads each file in turn, so that the file is known where the stream refuses
   * its text: a reader's start a file, which would slow only many small files down. */
  int documents_are_files = !job->jsonl_key && job->separator.n == 0;
  int run = documents_are_files ? job->n_files : 1;
  for (int first = 0; first < job->n_files; first += run) {
    struct input_place place = {origins, first, documents_are_files, job->jsonl_key != NULL, job->separator.n, 1, 0};
    struct document_files files = {job->files + first, run, job->jsonl_key, &job->separator};
    /* Parsing JSON costs about a tenth of encoding: a parser for every 8 encoding threads. */
    struct document_reader *reader = active_reader =
        document_reader_start(&files, 1 + job->threads / 8, (size_t)WINDOW_BYTES_PER_THREAD * (size_t)job->threads);
    for (struct document_block *b; (b = document_reader_next(reader));) {
      feed(s, b, &count, &place);
      text_progress_add(&progress, b->file_bytes);
      document_block_free(b);
    }
    active_reader = NULL;
    document_reader_finish(reader);
  }
  text_stream_finish(s);
  for (int i = 0; i < job->n_files; i++) free(origins[i]);
  free(origins);
  size_t tokens = token_output_count(out);
  if (tokens == 0) /* no token file at all rather than one that training refuses (the .tmp removed) */
    fsdp_fatal("the input files hold no text: nothing written to '%s%s'", job->output, sharded ? "_*.bin" : "");
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
          "%.2fM tokens/s, %d thread%s): %s\n", job->n_files, job->n_files == 1 ? "" : "s", count.bytes,
          count.documents, count.documents == 1 ? "" : "s", tokens, 8 * token_output_width(out), seconds,
          seconds > 0 ? (double)count.bytes / 1e6 / seconds : 0.0, seconds > 0 ? (double)tokens / 1e6 / seconds : 0.0,
          job->threads, job->threads == 1 ? "" : "s", written);
  if (sharded && n_names == 1 && plan.val_tokens > 0)
    fprintf(stderr, "tokenize: warning: every token went to the validation shard %s, and no training shard was "
            "written: lower --val-tokens (or 0 for none)\n", names[0]);
  token_output_warn_stale(out);
  token_output_free(out);
  text_encoder_free(e);
  text_tokenizer_free(t);
}

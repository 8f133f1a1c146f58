/* `fsdp tokenize`: text files to an llm.c token file with a Hugging Face tokenizer.json.
 * Each file is a document (or each stretch between --document-separator's bytes), and
 * each document starts with the document token. The output is llm.c's: a header of 256
 * int32 (GPT-2's magic and uint16 tokens when every id fits, else Llama 3's and uint32),
 * then the ids; written to a temporary name, synced and renamed. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/error.h"
#include "fsdp/file_commit.h"
#include "fsdp/input_file.h"
#include "fsdp/text.h"
#include "fsdp/timer.h"
#include "text_input.h"

enum { LLMC_HEADER_INTS = 256, OUTPUT_BUFFER_BYTES = 1 << 20 };

struct tokenize_options {
  const char *tokenizer, *output, *document_token;
  struct text_separator separator; /* decoded from --document-separator */
  int threads;
  char **files;
  int n_files;
};

static void print_help(void) {
  printf("usage: fsdp tokenize --tokenizer tokenizer.json --output OUT.bin [options] FILE...\n"
         "\n"
         "Encodes text files with a Hugging Face tokenizer.json (byte-level BPE, as GPT-2's and Llama 3's) into\n"
         "an llm.c token file for fsdp train --data: a header, then uint16 ids when the vocabulary has at most\n"
         "65536 tokens (llm.c's GPT-2 format), else uint32 (its Llama 3 format). Each FILE is a document, and\n"
         "each document starts with the document token.\n"
         "\n"
         "options:\n"
         "  --tokenizer FILE              the tokenizer.json (required)\n"
         "  --output FILE, -o FILE        the token file written (required)\n"
         "  --document-separator TEXT     also end a document at each TEXT within a file (dropped from the\n"
         "                                text; \\n, \\r, \\t and \\\\ are read as escapes), e.g. '<|endoftext|>'\n"
         "  --document-token TOKEN|none   the added token put before each document (default: <|begin_of_text|>\n"
         "                                where the tokenizer has it, else <|endoftext|>)\n"
         "  --threads N                   threads that encode (default: the cores this process may use); the\n"
         "                                ids do not depend on it\n"
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

/* Returns 1 when --help was printed. */
static int parse(int argc, char **argv, struct tokenize_options *o) {
  memset(o, 0, sizeof *o);
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
                                        "--threads"};
    int flag = -1;
    for (int f = 0; f < 5; f++)
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
    }
  }
  if (!o->tokenizer) fsdp_fatal("--tokenizer is required (see fsdp tokenize --help)");
  if (!o->output) fsdp_fatal("--output is required (see fsdp tokenize --help)");
  if (o->n_files == 0) fsdp_fatal("no input files (see fsdp tokenize --help)");
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

/* The llm.c token file being written: ids as they come, the header (with their count)
 * last. */
struct token_output {
  const char *path;
  char *tmp;
  int fd;
  int width; /* 2 or 4 */
  uint32_t magic, version;
  size_t count;
  unsigned char *buffer;
  size_t used;
};

/* The temporary file of the output being written, removed when the job ends on an error
 * (a bad pattern met mid-text, a full disk): the real name is never touched before the
 * commit, and no half-written file is left beside it. */
static const char *partial_output;

static void remove_partial_output(int exit_code) {
  (void)exit_code;
  if (partial_output) remove(partial_output);
}

static void output_flush(struct token_output *out) {
  file_commit_write(out->fd, out->tmp, out->buffer, out->used);
  out->used = 0;
}

static void output_ids(void *context, const uint32_t *ids, size_t n) {
  struct token_output *out = context;
  if (out->count + n > INT32_MAX)
    fsdp_fatal("--output '%s': more than %d tokens, which llm.c's header cannot count; split the input", out->path,
               INT32_MAX);
  out->count += n;
  for (size_t i = 0; i < n; i++) {
    if (out->used + 4 > OUTPUT_BUFFER_BYTES) output_flush(out);
    for (int b = 0; b < out->width; b++) out->buffer[out->used++] = (unsigned char)(ids[i] >> (8 * b));
  }
}

static void output_open(struct token_output *out, const char *path, int vocab_size) {
  memset(out, 0, sizeof *out);
  out->path = path;
  out->width = vocab_size <= 65536 ? 2 : 4;
  out->magic = out->width == 2 ? 20240520 : 20240801;
  out->version = out->width == 2 ? 1 : 7;
  out->tmp = file_commit_temp_path(path);
  out->fd = file_commit_create(out->tmp);
  partial_output = out->tmp;
  fsdp_set_abort_handler(remove_partial_output);
  out->buffer = fsdp_xmalloc(OUTPUT_BUFFER_BYTES);
  unsigned char header[LLMC_HEADER_INTS * 4] = {0}; /* the real one once the count is known */
  file_commit_write(out->fd, out->tmp, header, sizeof header);
}

static void output_finish(struct token_output *out) {
  output_flush(out);
  unsigned char header[LLMC_HEADER_INTS * 4] = {0};
  uint32_t fields[3] = {out->magic, out->version, (uint32_t)out->count};
  for (int f = 0; f < 3; f++)
    for (int b = 0; b < 4; b++) header[4 * f + b] = (unsigned char)(fields[f] >> (8 * b));
  file_commit_write_at(out->fd, out->tmp, header, sizeof header, 0);
  file_commit_finish(out->fd, out->tmp, out->path);
  partial_output = NULL;
  free(out->tmp);
  free(out->buffer);
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
  struct token_output out;
  output_open(&out, o.output, text_tokenizer_vocab_size(t));
  struct text_encoder *e = text_encoder_create(t, o.threads, 0);
  struct text_stream *s = text_stream_create(e, 0, token, output_ids, &out);
  for (int i = 0; i < o.n_files; i++) text_input_file(s, "input", o.files[i], &o.separator, &progress);
  text_stream_finish(s);
  if (out.count == 0) /* no token file at all rather than one that training refuses (the .tmp removed) */
    fsdp_fatal("the input files hold no text: nothing written to '%s'", o.output);
  output_finish(&out);
  text_progress_done(&progress);
  double seconds = (time_now_ms() - start) / 1000.0;
  fprintf(stderr, "tokenize: %d file%s, %zu bytes, %zu tokens (uint%d) in %.2f s (%.1f MB/s, %d thread%s): %s\n",
          o.n_files, o.n_files == 1 ? "" : "s", progress.done, out.count, 8 * out.width, seconds,
          seconds > 0 ? (double)progress.done / 1e6 / seconds : 0.0, o.threads, o.threads == 1 ? "" : "s", o.output);
  text_encoder_free(e);
  text_tokenizer_free(t);
  free((char *)o.separator.bytes);
  free(o.files);
  return 0;
}

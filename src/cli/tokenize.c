/* `fsdp tokenize`: text files, or JSON Lines files' documents, to llm.c token files with a
 * Hugging Face tokenizer.json (src/data/tokenize_files.c runs it). Its flags are a table
 * of the flag engine's (fsdp/flags.h), as every command's are. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/cores.h"
#include "fsdp/cli.h"
#include "fsdp/data.h"
#include "fsdp/error.h"
#include "fsdp/flags.h"
#include "fsdp/input_file.h"
#include "fsdp/text.h"

/* \n, \r, \t and \\ decoded; anything else after a backslash is refused. */
static void parse_separator(void *field, const char *flag, const char *text) {
  char *out = fsdp_xmalloc(strlen(text) + 1);
  size_t n = 0;
  for (const char *p = text; *p; p++) {
    if (*p != '\\') {
      out[n++] = *p;
      continue;
    }
    p++;
    char c = *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == 't' ? '\t' : *p == '\\' ? '\\' : '\0';
    if (!c) fsdp_fatal("%s: unknown escape '\\%c' in '%s' (known: \\n, \\r, \\t, \\\\)", flag, *p ? *p : ' ', text);
    out[n++] = c;
  }
  if (n == 0) fsdp_fatal("%s: empty", flag);
  struct text_separator *sep = field;
  free((char *)sep->bytes);
  *sep = (struct text_separator){out, n};
}

static void parse_threads(void *field, const char *flag, const char *text) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end || errno == ERANGE || v < 1 || v > 4096)
    fsdp_fatal("%s: must be an integer from 1 to 4096, got '%s'", flag, text);
  *(int *)field = (int)v;
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

static void parse_shard_tokens(void *field, const char *flag, const char *text) {
  *(long *)field = parse_tokens(flag, text, 1);
}

static void parse_val_tokens(void *field, const char *flag, const char *text) {
  *(long *)field = parse_tokens(flag, text, 0);
}

#define JOB struct tokenize_job
static const struct flag FLAGS[] = {
    {NULL, "--tokenizer", 0, "FILE", FLAG_REQUIRED, FLAG_TEXT_OF(JOB, tokenizer), .help = "the tokenizer.json"},
    {NULL, "--output", 0, "OUT.bin|PREFIX", FLAG_REQUIRED, FLAG_TEXT_OF(JOB, output), .alias = "-o",
     .help = "the token file, or the shards' prefix"},
    {NULL, "--shard-tokens", 0, "N", FLAG_NOTE("100M, llm.c's"), FLAG_CUSTOM_OF(JOB, shard_tokens, parse_shard_tokens),
     .help = "PREFIX: tokens a shard (K, M, G: 10^3, 10^6, 10^9); a document goes on in the next shard, the last "
             "shard holds the rest"},
    {NULL, "--val-tokens", 0, "N", FLAG_NOTE("a shard's"), FLAG_CUSTOM_OF(JOB, val_tokens, parse_val_tokens),
     .help = "PREFIX: tokens of the first shard, PREFIX_val_000000.bin; 0: no validation shard, "
             "PREFIX_train_000000.bin first"},
    {NULL, "--jsonl-key", 0, "KEY", FLAG_NONE, FLAG_TEXT_OF(JOB, jsonl_key),
     .help = "every FILE is JSON Lines: each line an object whose string member KEY is a document (FineWeb's and "
             "most data sets': text); a line that is not stops the run naming the file and the line"},
    {NULL, "--document-separator", 0, "TEXT", FLAG_NONE, FLAG_CUSTOM_OF(JOB, separator, parse_separator),
     .help = "also end a document at each TEXT within a text file (dropped from the text; \\n, \\r, \\t and \\\\ "
             "are read as escapes), e.g. '<|endoftext|>'"},
    {NULL, "--document-token", 0, "TOKEN|none", FLAG_NOTE("the tokenizer's"), FLAG_TEXT_OF(JOB, document_token),
     .help = "the added token put before each document; the tokenizer's is <|begin_of_text|> where it has it, else "
             "<|endoftext|> (llm.c's choice)"},
    {NULL, "--threads", 0, "N", FLAG_NOTE("the cores this process may use"), FLAG_CUSTOM_OF(JOB, threads, parse_threads),
     .help = "threads that encode (one more reads and one writes); the ids do not depend on it"},
};

static const struct flag_parser PARSER = {
    .command = "tokenize", .flags = FLAGS, .n_flags = sizeof FLAGS / sizeof FLAGS[0], .arguments = "FILE...",
    .intro =
        "Encodes text files, or JSON Lines files with --jsonl-key, with a Hugging Face tokenizer.json (byte-level\n"
        "BPE, as GPT-2's and Llama 3's) into llm.c token files for fsdp train --data: a header, then uint16 ids\n"
        "when the vocabulary has at most 65536 tokens (llm.c's GPT-2 format), else uint32 (its Llama 3 format).\n"
        "Each FILE is a document (each line of a JSONL file is one), and each document starts with the document\n"
        "token, as llm.c's data scripts write them. gzip files are inflated. --output OUT.bin writes one file;\n"
        "--output PREFIX (not ending in .bin) writes shards of --shard-tokens as llm.c's fineweb.py does:\n"
        "PREFIX_val_000000.bin first (the validation shard), then PREFIX_train_000001.bin, ... Every file is\n"
        "written under a temporary name and renamed only once all are complete. A pre-token (what the tokenizer's\n"
        "pattern cuts the text into: a word, a run of spaces) of more than 1 MiB stops the run, naming the file and\n"
        "the byte where it starts: merging it would take about 75 bytes of memory a byte.\n"};

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

/* Whether path is one of the shards PREFIX names: PREFIX_train_NNNNNN.bin or
 * PREFIX_val_NNNNNN.bin in PREFIX's folder. */
static int is_shard_of(const char *path, const char *prefix) {
  char dir[4096], prefix_dir[4096];
  input_file_folder(path, dir, sizeof dir);
  input_file_folder(prefix, prefix_dir, sizeof prefix_dir);
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  const char *stem = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
  size_t n = strlen(stem);
  if (strncmp(name, stem, n) != 0 || !input_file_same(dir, prefix_dir)) return 0;
  const char *rest = name + n;
  rest += strncmp(rest, "_train_", 7) == 0 ? 7 : strncmp(rest, "_val_", 5) == 0 ? 5 : 0;
  size_t digits = strspn(rest, "0123456789");
  return rest != name + n && digits >= 6 && strcmp(rest + digits, ".bin") == 0;
}

/* OUT.bin is one file; anything else names shards, and must say their name, not only
 * their folder. Neither may be an input: the rename at the end would replace it. */
static void check_output(const struct tokenize_job *o) {
  for (int i = 0; i < o->n_files; i++)
    if (ends_with(o->output, ".bin") ? input_file_same(o->files[i], o->output) : is_shard_of(o->files[i], o->output))
      fsdp_fatal("--output '%s': the input '%s' is %s it writes: it would be replaced (give another --output)",
                 o->output, o->files[i], ends_with(o->output, ".bin") ? "the file" : "one of the shards");
  if (ends_with(o->output, ".bin")) {
    if (o->shard_tokens >= 0 || o->val_tokens >= 0)
      fsdp_fatal("%s: --output '%s' is one file; give --output a prefix (not ending in .bin), e.g. 'data/fineweb', "
                 "to write shards", o->shard_tokens >= 0 ? "--shard-tokens" : "--val-tokens", o->output);
    return;
  }
  struct stat st;
  const char *slash = ends_with(o->output, "/") ? "" : "/";
  if (ends_with(o->output, "/") || (stat(o->output, &st) == 0 && S_ISDIR(st.st_mode)))
    fsdp_fatal("--output '%s' is a folder: give the shards' prefix in it, e.g. '%s%sfineweb' writes "
               "%s%sfineweb_val_000000.bin, %s%sfineweb_train_000001.bin, ...",
               o->output, o->output, slash, o->output, slash, o->output, slash);
}

int fsdp_tokenize_main(int argc, char **argv) {
  struct tokenize_job job = {.shard_tokens = -1, .val_tokens = -1};
  struct flag_parse given;
  flags_parse(&PARSER, &job, argc, argv, &given);
  if (given.help) {
    flags_print_help(&PARSER);
  } else {
    job.files = given.arguments;
    job.n_files = given.n_arguments;
    if (job.n_files == 0) fsdp_fatal("no input files (see fsdp tokenize --help)");
    if (job.jsonl_key && job.separator.n)
      fsdp_fatal("--document-separator and --jsonl-key: each line of a JSONL file is a document; the separator "
                 "cuts text files");
    check_output(&job);
    if (!job.threads) job.threads = available_cores();
    tokenize_files(&job);
  }
  free((char *)job.separator.bytes);
  flag_parse_free(&given);
  return 0;
}

/* Reading a Hugging Face tokenizer.json: a BPE model over the byte-level alphabet, a
 * ByteLevel pre-tokenizer (GPT-2's pattern) or a Split pattern before one (Llama 3's),
 * a ByteLevel decoder, added tokens. Whatever would make fsdp's ids differ from Hugging
 * Face's, or make decoding lose bytes, is refused by name: docs/architecture.md, "Text",
 * lists what is read and what is not. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "byte_level.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/json_text.h"
#include "pattern.h"
#include "tokenizer.h"

/* GPT-2's pre-tokenizer pattern, which a ByteLevel pre-tokenizer with use_regex applies:
 * contractions, letters, digits and other symbols each with an optional space before
 * them, and runs of white space (all but the last of them when a word follows). */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

struct loader {
  const char *what, *path;
  struct text_tokenizer *t;
};

static _Noreturn void __attribute__((format(printf, 2, 3))) fail(const struct loader *l, const char *fmt, ...) {
  char message[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  fsdp_fatal("%s '%s': %s", l->what, l->path, message);
}

static const cJSON *member(const cJSON *object, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* A boolean member, fallback when absent. */
static int flag(const struct loader *l, const cJSON *object, const char *where, const char *key, int fallback) {
  const cJSON *v = member(object, key);
  if (!v) return fallback;
  if (!cJSON_IsBool(v)) fail(l, "%s.%s is not true or false", where, key);
  return cJSON_IsTrue(v);
}

static const char *type_of(const struct loader *l, const cJSON *object, const char *where) {
  const cJSON *type = member(object, "type");
  if (!cJSON_IsString(type)) fail(l, "%s has no \"type\"", where);
  return type->valuestring;
}

/* A token id: an integer from 0, or -1. */
static long id_of(const cJSON *v) {
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  return d >= 0.0 && d < 2147483647.0 && d == floor(d) ? (long)d : -1;
}

/* ---- the pre-tokenizer and the decoder ---- */

static void check_byte_level(const struct loader *l, const cJSON *b, const char *where, int use_regex) {
  /* Hugging Face's default is true: a space before the text, which decoding keeps. */
  if (flag(l, b, where, "add_prefix_space", 1))
    fail(l, "%s: add_prefix_space true is not supported (it puts a space before the text that decoding keeps)",
         where);
  if (flag(l, b, where, "use_regex", 1) != use_regex)
    fail(l,
         use_regex ? "%s: ByteLevel with use_regex false and no Split before it: nothing would cut the text into "
                     "pieces"
                   : "%s: a ByteLevel after a Split must have use_regex false (two patterns in a row are not "
                     "supported)",
         where);
}

static const char *split_pattern(const struct loader *l, const cJSON *split) {
  const char *where = "pre_tokenizer.pretokenizers[0]";
  if (strcmp(type_of(l, split, where), "Split") != 0)
    fail(l, "%s is a %s, not a Split (only Split then ByteLevel is supported)", where, type_of(l, split, where));
  const cJSON *regex = member(member(split, "pattern"), "Regex");
  if (!cJSON_IsString(regex))
    fail(l, "%s: its pattern is not {\"Regex\": ...} (a String pattern is not supported)", where);
  const cJSON *behavior = member(split, "behavior");
  if (!cJSON_IsString(behavior) || strcmp(behavior->valuestring, "Isolated") != 0)
    fail(l, "%s: behavior %s is not supported, only Isolated", where,
         cJSON_IsString(behavior) ? behavior->valuestring : "(none)");
  if (flag(l, split, where, "invert", 0)) fail(l, "%s: invert true is not supported", where);
  return regex->valuestring;
}

/* The pattern that cuts text into pieces. */
static const char *pre_tokenizer_pattern(const struct loader *l, const cJSON *root) {
  const cJSON *pre = member(root, "pre_tokenizer");
  if (!cJSON_IsObject(pre)) fail(l, "has no pre_tokenizer (a byte-level BPE needs ByteLevel)");
  const char *type = type_of(l, pre, "pre_tokenizer");
  if (strcmp(type, "ByteLevel") == 0) {
    check_byte_level(l, pre, "pre_tokenizer", 1);
    return GPT2_PATTERN;
  }
  const cJSON *steps = member(pre, "pretokenizers");
  if (strcmp(type, "Sequence") != 0 || !cJSON_IsArray(steps) || cJSON_GetArraySize(steps) != 2)
    fail(l, "pre_tokenizer %s is not supported: only ByteLevel (GPT-2's) or a Sequence of a Split and ByteLevel "
            "(Llama 3's)",
         type);
  const cJSON *byte_level = cJSON_GetArrayItem(steps, 1);
  if (strcmp(type_of(l, byte_level, "pre_tokenizer.pretokenizers[1]"), "ByteLevel") != 0)
    fail(l, "pre_tokenizer.pretokenizers[1] is not ByteLevel");
  check_byte_level(l, byte_level, "pre_tokenizer.pretokenizers[1]", 0);
  return split_pattern(l, cJSON_GetArrayItem(steps, 0));
}

static void compile_pattern(const struct loader *l, const char *pattern) {
  char why[256];
  l->t->pattern = pattern_compile(pattern, why, sizeof why);
  if (!l->t->pattern) fail(l, "%s", why);
}

static void check_model_options(const struct loader *l, const cJSON *model) {
  if (member(model, "dropout")) fail(l, "model.dropout is set: BPE dropout is for training and is not supported");
  if (flag(l, model, "model", "byte_fallback", 0))
    fail(l, "model.byte_fallback is true: that is SentencePiece's kind of BPE, not byte-level");
  static const char *const AFFIXES[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  for (int i = 0; i < 2; i++) {
    const cJSON *v = member(model, AFFIXES[i]);
    if (v && !(cJSON_IsString(v) && v->valuestring[0] == '\0')) fail(l, "model.%s is set: not supported", AFFIXES[i]);
  }
}

static void check_pipeline(const struct loader *l, const cJSON *root) {
  const cJSON *normalizer = member(root, "normalizer");
  if (normalizer)
    fail(l, "a normalizer (%s) is not supported: GPT-2's and Llama 3's tokenizers have none",
         cJSON_IsObject(normalizer) ? type_of(l, normalizer, "normalizer") : "not an object");
  const cJSON *decoder = member(root, "decoder");
  if (!cJSON_IsObject(decoder) || strcmp(type_of(l, decoder, "decoder"), "ByteLevel") != 0)
    fail(l, "the decoder is %s, not ByteLevel", cJSON_IsObject(decoder) ? type_of(l, decoder, "decoder") : "missing");
}

/* ---- the vocabulary ---- */

struct added {
  const char *content;
  long id;
  int in_vocab;
};

static int by_content(const void *a, const void *b) {
  return strcmp(((const struct added *)a)->content, ((const struct added *)b)->content);
}

static struct added *find_added(struct added *added, int n, const char *content) {
  struct added key = {content, 0, 0};
  return bsearch(&key, added, (size_t)n, sizeof key, by_content);
}

/* added_tokens, sorted by content. */
static struct added *read_added(const struct loader *l, const cJSON *root, int *n) {
  const cJSON *list = member(root, "added_tokens");
  if (list && !cJSON_IsArray(list)) fail(l, "added_tokens is not an array");
  *n = list ? cJSON_GetArraySize(list) : 0;
  struct added *added = fsdp_xcalloc((size_t)*n + 1, sizeof *added);
  int i = 0;
  for (const cJSON *token = list ? list->child : NULL; token; token = token->next, i++) {
    const cJSON *content = member(token, "content");
    if (!cJSON_IsString(content) || content->valuestring[0] == '\0')
      fail(l, "added_tokens[%d] has no content", i);
    added[i] = (struct added){content->valuestring, id_of(member(token, "id")), 0};
    if (added[i].id < 0) fail(l, "added_tokens[%d] ('%.60s') has no id that is an integer from 0", i, added[i].content);
    static const char *const OPTIONS[] = {"lstrip", "rstrip", "single_word"};
    for (int k = 0; k < 3; k++)
      if (flag(l, token, "added_tokens[]", OPTIONS[k], 0))
        fail(l, "added_tokens[%d] ('%.60s'): %s true is not supported", i, added[i].content, OPTIONS[k]);
  }
  qsort(added, (size_t)*n, sizeof *added, by_content);
  for (int i = 1; i < *n; i++)
    if (strcmp(added[i - 1].content, added[i].content) == 0)
      fail(l, "added_tokens lists '%.60s' twice", added[i].content);
  return added;
}

/* Claims id for name, which must be new and below the vocabulary's size. */
static void claim_id(const struct loader *l, const char **owner, long id, const char *name) {
  int size = l->t->vocab_size;
  if (id >= size)
    fail(l, "'%.60s' has id %ld, outside 0..%d: the vocabulary holds %d tokens, so its ids must be 0 to %d", name,
         id, size - 1, size, size - 1);
  if (owner[id]) fail(l, "'%.60s' and '%.60s' both have id %ld", owner[id], name, id);
  owner[id] = name;
}

static void read_vocab(const struct loader *l, const cJSON *vocab, struct added *added, int n_added) {
  struct text_tokenizer *t = l->t;
  int n_vocab = cJSON_GetArraySize(vocab), in_vocab = 0;
  for (const cJSON *e = vocab->child; e; e = e->next) {
    struct added *a = find_added(added, n_added, e->string);
    if (!a) continue;
    if (id_of(e) != a->id)
      fail(l, "added token '%.60s' has id %ld, but model.vocab gives it %ld", a->content, a->id, id_of(e));
    a->in_vocab = 1;
    in_vocab++;
  }
  t->vocab_size = n_vocab + n_added - in_vocab;
  const char **owner = fsdp_xcalloc((size_t)t->vocab_size, sizeof *owner);
  token_table_init(&t->tokens, t->vocab_size);
  bytes_map_init(&t->vocab, (size_t)n_vocab);
  unsigned char *bytes = NULL;
  for (const cJSON *e = vocab->child; e; e = e->next) {
    long id = id_of(e);
    if (id < 0) fail(l, "model.vocab: '%.60s' has no id that is an integer from 0", e->string);
    claim_id(l, owner, id, e->string);
    if (find_added(added, n_added, e->string)) continue;
    bytes = fsdp_xrealloc(bytes, strlen(e->string) + 1);
    uint32_t bad;
    long n = byte_level_decode(e->string, bytes, &bad);
    if (n < 0)
      fail(l, "model.vocab: '%.60s' is not byte-level: %s", e->string,
           bad == 0xFFFFFFFFu ? "it holds a character of more than 2 bytes" : "a character in it stands for no byte");
    if (n == 0) fail(l, "model.vocab: a token is empty");
    token_table_set(&t->tokens, (int)id, bytes, (size_t)n);
    if (bytes_map_add(&t->vocab, &t->tokens, (uint32_t)id) >= 0) fail(l, "model.vocab lists '%.60s' twice", e->string);
  }
  free(bytes);
  for (int i = 0; i < n_added; i++) {
    if (!added[i].in_vocab) claim_id(l, owner, added[i].id, added[i].content);
    token_table_set(&t->tokens, (int)added[i].id, (const unsigned char *)added[i].content, strlen(added[i].content));
  }
  free(owner);
  for (int b = 0; b < 256; b++) {
    unsigned char byte = (unsigned char)b;
    int id = bytes_map_find(&t->vocab, &t->tokens, &byte, 1);
    if (id < 0) fail(l, "model.vocab has no token for the byte 0x%02x: a byte-level BPE has all 256", b);
    t->byte_token[b] = (uint32_t)id;
  }
}

/* Added tokens in the order of their bytes (then of their ids): those that begin with the
 * same bytes lie together, the shortest first, so that the longest one that begins the
 * text is found by narrowing a range a byte at a time (scanner.c). */
struct added_key {
  const unsigned char *bytes;
  uint32_t length, id;
};

static int by_bytes(const void *a, const void *b) {
  const struct added_key *x = a, *y = b;
  int c = memcmp(x->bytes, y->bytes, x->length < y->length ? x->length : y->length);
  if (c) return c;
  if (x->length != y->length) return x->length < y->length ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static void index_added(struct text_tokenizer *t, const struct added *added, int n) {
  struct added_tokens *a = &t->added;
  struct added_key *keys = fsdp_xcalloc((size_t)n + 1, sizeof *keys);
  for (int i = 0; i < n; i++) {
    uint32_t id = (uint32_t)added[i].id;
    keys[i] = (struct added_key){token_table_bytes(&t->tokens, id), t->tokens.length[id], id};
    if (keys[i].length > a->max_length) a->max_length = keys[i].length;
  }
  qsort(keys, (size_t)n, sizeof *keys, by_bytes);
  a->n = n;
  a->ids = fsdp_xcalloc((size_t)n + 1, sizeof *a->ids);
  for (int i = 0; i < n; i++) a->ids[i] = keys[i].id;
  int i = 0;
  for (int b = 0; b < 256; b++) {
    a->first[b] = i;
    while (i < n && keys[i].bytes[0] == b) i++;
  }
  a->first[256] = n;
  free(keys);
}

/* ---- merges ---- */

/* The id of a merge's side, as the vocab spells it. */
static uint32_t merge_side(const struct loader *l, int index, const char *side, unsigned char *scratch) {
  uint32_t bad;
  long n = byte_level_decode(side, scratch, &bad);
  int id = n > 0 ? bytes_map_find(&l->t->vocab, &l->t->tokens, scratch, (size_t)n) : -1;
  if (id < 0) fail(l, "model.merges[%d] names '%.60s', which is not in model.vocab", index, side);
  return (uint32_t)id;
}

/* "a b" (one space: byte-level tokens hold none) or ["a", "b"] (tokenizers 0.20 and later). */
static void merge_sides(const struct loader *l, const cJSON *m, int index, char **left, char **right) {
  if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
      cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
    *left = strdup(cJSON_GetArrayItem(m, 0)->valuestring);
    *right = strdup(cJSON_GetArrayItem(m, 1)->valuestring);
  } else {
    const char *space = cJSON_IsString(m) ? strchr(m->valuestring, ' ') : NULL;
    if (!space || space == m->valuestring || space[1] == '\0' || strchr(space + 1, ' '))
      fail(l, "model.merges[%d] is neither \"a b\" nor [\"a\", \"b\"]", index);
    *left = strndup(m->valuestring, (size_t)(space - m->valuestring));
    *right = strdup(space + 1);
  }
  if (!*left || !*right) fsdp_fatal("out of memory reading %s", l->path);
}

static void read_merges(const struct loader *l, const cJSON *merges) {
  struct text_tokenizer *t = l->t;
  int n = cJSON_GetArraySize(merges), index = 0;
  merge_map_init(&t->merges, (size_t)n);
  unsigned char *scratch = NULL, *joined = NULL;
  for (const cJSON *m = merges->child; m; m = m->next, index++) {
    char *left_text, *right_text;
    merge_sides(l, m, index, &left_text, &right_text);
    scratch = fsdp_xrealloc(scratch, strlen(left_text) + strlen(right_text) + 1);
    uint32_t left = merge_side(l, index, left_text, scratch), right = merge_side(l, index, right_text, scratch);
    size_t nl = t->tokens.length[left], nr = t->tokens.length[right];
    joined = fsdp_xrealloc(joined, nl + nr);
    memcpy(joined, token_table_bytes(&t->tokens, left), nl);
    memcpy(joined + nl, token_table_bytes(&t->tokens, right), nr);
    int merged = bytes_map_find(&t->vocab, &t->tokens, joined, nl + nr);
    if (merged < 0)
      fail(l, "model.merges[%d] ('%.60s' '%.60s') makes a token that is not in model.vocab", index, left_text,
           right_text);
    long earlier = merge_map_add(&t->merges, left, right, (uint32_t)index, (uint32_t)merged);
    if (earlier >= 0)
      fail(l, "model.merges[%d] repeats model.merges[%ld] ('%.60s' '%.60s')", index, earlier, left_text, right_text);
    free(left_text);
    free(right_text);
  }
  free(scratch);
  free(joined);
}

struct text_tokenizer *text_tokenizer_load(const char *what, const char *path) {
  struct loader l = {what, path, fsdp_xcalloc(1, sizeof(struct text_tokenizer))};
  snprintf(l.t->name, sizeof l.t->name, "%s '%s'", what, path);
  size_t length;
  char *text = input_file_read_all(what, path, INPUT_JSON_MAX_BYTES, &length);
  /* JSON has no raw control characters, which cJSON lets through in strings: a NUL there
   * would cut the string short unseen (fuzzing's pattern was cut so). */
  const char *nul = memchr(text, 0, length);
  if (nul) fail(&l, "is not JSON (a NUL byte at byte %ld)", (long)(nul - text));
  long escape = json_nul_escape(text, length);
  if (escape >= 0)
    fail(&l, "has a \\u0000 escape at byte %ld: a NUL inside a string is not supported (it would cut the string)",
         escape);
  cJSON *root = cJSON_ParseWithLength(text, length);
  long surrogate = root ? -1 : json_lone_surrogate(text, length);
  if (surrogate >= 0)
    fail(&l, "has a lone UTF-16 surrogate escape, %.6s, at byte %ld: JSON allows it, but no UTF-8 text can hold it",
         text + surrogate, surrogate);
  if (!root) fail(&l, "is not JSON (it goes wrong at byte %ld)", (long)(cJSON_GetErrorPtr() - text));
  free(text);
  if (!cJSON_IsObject(root)) fail(&l, "is not a JSON object");
  const cJSON *model = member(root, "model");
  if (!cJSON_IsObject(model)) fail(&l, "has no \"model\" object: not a Hugging Face tokenizer.json");
  const char *type = type_of(&l, model, "model");
  if (strcmp(type, "BPE") != 0) fail(&l, "model.type is %s, not BPE: only byte-level BPE tokenizers are read", type);
  const cJSON *vocab = member(model, "vocab"), *merges = member(model, "merges");
  if (!cJSON_IsObject(vocab)) fail(&l, "model.vocab is missing (or not an object)");
  if (!cJSON_IsArray(merges)) fail(&l, "model.merges is missing (or not an array)");
  check_model_options(&l, model);
  check_pipeline(&l, root);
  l.t->ignore_merges = flag(&l, model, "model", "ignore_merges", 0);
  compile_pattern(&l, pre_tokenizer_pattern(&l, root));

  int n_added;
  struct added *added = read_added(&l, root, &n_added);
  read_vocab(&l, vocab, added, n_added);
  read_merges(&l, merges);
  index_added(l.t, added, n_added);
  free(added);
  cJSON_Delete(root);
  int begin = text_tokenizer_added(l.t, "<|begin_of_text|>");
  l.t->document_token = begin >= 0 ? begin : text_tokenizer_added(l.t, "<|endoftext|>");
  /* Last, past every refusal: a refused load abandons what it holds (fsdp_fatal unwinds
   * nothing), and the JIT's executable memory is no heap block that a caller catching the
   * refusal could reclaim (the fuzzing harness's 10 million loads grew by 0.7 KB a load). */
  pattern_jit(l.t->pattern);
  return l.t;
}

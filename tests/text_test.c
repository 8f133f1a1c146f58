/* The tokenizer library (fsdp/text.h) on small tokenizer.json files the test writes: the
 * ids of known texts (merges by rank, added tokens, ignore_merges, pieces of invalid
 * UTF-8), decode(encode(x)) == x for random bytes, the same ids on any number of threads,
 * parts and windows, long pieces, every malformed tokenizer.json refused by name (in a
 * child process, since the refusal ends it), and a refusal met on a helper thread raised
 * on the calling one. Hugging Face's own ids are compared
 * by tokenizer_hf_test.sh. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/error.h"
#include "fsdp/output_file.h"
#include "fsdp/text.h"
#include "temp_files.h"

/* ---- tokenizer.json files ---- */

/* The byte-level character of byte b (GPT-2's table), written into the test on its own. */
static unsigned byte_char(unsigned b) {
  int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  if (printable) return b;
  unsigned k = 0;
  for (unsigned c = 0; c < b; c++) k += !((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae);
  return 0x100 + k;
}

/* The byte-level characters of bytes, into a JSON string's body: printable ASCII as
 * itself, the rest as \uXXXX. */
static void append_chars(struct text *json, const char *bytes) {
  char escape[8];
  for (const unsigned char *p = (const unsigned char *)bytes; *p; p++) {
    unsigned c = byte_char(*p);
    if (c > 0x20 && c < 0x7f && c != '"' && c != '\\')
      snprintf(escape, sizeof escape, "%c", (char)c);
    else
      snprintf(escape, sizeof escape, "\\u%04x", c);
    text_append(json, escape);
  }
}

static void append_byte_level(struct text *json, const char *bytes) {
  text_append(json, "\"");
  append_chars(json, bytes);
  text_append(json, "\"");
}

/* A NUL-terminated copy of what was built, which is freed. */
static char *finish(struct text *t) {
  char *out = malloc(t->len + 1);
  memcpy(out, t->data, t->len);
  out[t->len] = '\0';
  text_free(t);
  return out;
}

/* Merges of the test tokenizers, in rank order: each makes the next id from 256. The
 * byte 0xff is 'ÿ' in the vocabulary; "b\xff" merges, so a piece holding both would be
 * one token. */
static const char *const MERGES[][2] = {{" ", "t"}, {"h", "e"}, {" t", "he"}, {"i", "n"}, {" ", "a"}, {"e", "r"},
                                        {"o", "n"}, {"b", "\xff"}, {"\n", "\n"}, {"1", "2"}, {" ", " "}, {"  ", "  "},
                                        {"'", "s"}, {"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}, {"l", "l"}};
enum { N_MERGES = sizeof MERGES / sizeof MERGES[0] };
/* A token no merge makes: only ignore_merges finds it whole. */
static const char WHOLE_WORD[] = "hello";

enum style { GPT2, LLAMA3 };
struct json_options {
  enum style style;
  int array_merges; /* [["a", "b"]] rather than "a b" */
};

static const char LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+";

/* The ids: bytes 0..255, merges from 256, WHOLE_WORD, then the added tokens. */
enum { ID_MERGED = 256, ID_WHOLE = 256 + N_MERGES, ID_ADDED = ID_WHOLE + 1 };

static char *tokenizer_json(const struct json_options *o) {
  struct text json = {0};
  char number[32];
  text_append(&json, "{\"version\": \"1.0\", \"added_tokens\": [");
  const char *added[2] = {o->style == GPT2 ? "<|endoftext|>" : "<|begin_of_text|>", "<|end_of_text|>"};
  int n_added = o->style == GPT2 ? 1 : 2;
  for (int i = 0; i < n_added; i++) {
    snprintf(number, sizeof number, "%d", ID_ADDED + i);
    text_append(&json, i ? ", {\"id\": " : "{\"id\": ");
    text_append(&json, number);
    text_append(&json, ", \"content\": \"");
    text_append(&json, added[i]);
    text_append(&json, "\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                       "\"special\": true}");
  }
  text_append(&json, "], \"normalizer\": null, \"pre_tokenizer\": ");
  if (o->style == GPT2) {
    text_append(&json, "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
                       "\"use_regex\": true}");
  } else {
    text_append(&json, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                       "\"pattern\": {\"Regex\": \"");
    text_append(&json, LLAMA3_PATTERN);
    text_append(&json, "\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
                       "\"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]}");
  }
  text_append(&json, ", \"post_processor\": null, \"decoder\": {\"type\": \"ByteLevel\"}, "
                     "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
                     "\"byte_fallback\": false, \"ignore_merges\": ");
  text_append(&json, o->style == LLAMA3 ? "true" : "false");
  text_append(&json, ", \"vocab\": {");
  char one[2] = {0, 0};
  for (int b = 0; b < 256; b++) {
    one[0] = (char)b;
    if (b) text_append(&json, ", ");
    if (b == 0) {
      text_append(&json, "\"\\u0100\""); /* byte 0 (an empty C string here) */
    } else {
      append_byte_level(&json, one);
    }
    snprintf(number, sizeof number, ": %d", b);
    text_append(&json, number);
  }
  for (int m = 0; m < N_MERGES; m++) {
    char joined[64];
    snprintf(joined, sizeof joined, "%s%s", MERGES[m][0], MERGES[m][1]);
    text_append(&json, ", ");
    append_byte_level(&json, joined);
    snprintf(number, sizeof number, ": %d", ID_MERGED + m);
    text_append(&json, number);
  }
  text_append(&json, ", ");
  append_byte_level(&json, WHOLE_WORD);
  snprintf(number, sizeof number, ": %d", ID_WHOLE);
  text_append(&json, number);
  for (int i = 0; i < n_added; i++) {
    snprintf(number, sizeof number, "\": %d", ID_ADDED + i);
    text_append(&json, ", \"");
    text_append(&json, added[i]);
    text_append(&json, number);
  }
  text_append(&json, "}, \"merges\": [");
  for (int m = 0; m < N_MERGES; m++) {
    if (m) text_append(&json, ", ");
    if (o->array_merges) {
      text_append(&json, "[");
      append_byte_level(&json, MERGES[m][0]);
      text_append(&json, ", ");
      append_byte_level(&json, MERGES[m][1]);
      text_append(&json, "]");
    } else {
      text_append(&json, "\"");
      append_chars(&json, MERGES[m][0]);
      text_append(&json, " ");
      append_chars(&json, MERGES[m][1]);
      text_append(&json, "\"");
    }
  }
  text_append(&json, "]}}");
  return finish(&json);
}

static const char *write_tokenizer(const char *name, const struct json_options *o) {
  char *json = tokenizer_json(o);
  const char *path = temp_file_write(name, json, strlen(json));
  free(json);
  return path;
}

/* ---- helpers ---- */

static struct token_vec encode(const struct text_tokenizer *t, const char *text, size_t n, int threads, size_t chunk) {
  struct text_encoder *e = text_encoder_create(t, threads, chunk);
  struct token_vec v = {0};
  text_encode(e, text, n, &v);
  text_encoder_free(e);
  return v;
}

static void expect_ids(const struct text_tokenizer *t, const char *text, const uint32_t *want, size_t n,
                       const char *what) {
  struct token_vec v = encode(t, text, strlen(text), 1, 0);
  int same = v.n == n;
  for (size_t i = 0; same && i < n; i++) same = v.ids[i] == want[i];
  EXPECT(same, "%s: '%s' gave %zu ids (first %u), want %zu (first %u)", what, text, v.n, v.n ? v.ids[0] : 0, n,
         n ? want[0] : 0);
  token_vec_free(&v);
}

static int same_ids(const struct token_vec *a, const struct token_vec *b) {
  return a->n == b->n && memcmp(a->ids, b->ids, a->n * sizeof *a->ids) == 0;
}

/* decode: every id's bytes, one after another. */
static char *decode(const struct text_tokenizer *t, const struct token_vec *v, size_t *n) {
  size_t total = 0, length;
  for (size_t i = 0; i < v->n; i++) {
    text_tokenizer_bytes(t, (int)v->ids[i], &length);
    total += length;
  }
  char *out = malloc(total + 1);
  *n = 0;
  for (size_t i = 0; i < v->n; i++) {
    const unsigned char *bytes = text_tokenizer_bytes(t, (int)v->ids[i], &length);
    memcpy(out + *n, bytes, length);
    *n += length;
  }
  return out;
}

/* A deterministic text of n bytes from pieces that stress the pre-tokenizer. */
static char *mixed_text(size_t n, unsigned seed, int with_invalid) {
  static const char *const PIECES[] = {
      "the", " the", "in", " a", "hello", "Hello", "'s", "'LL", " don't", "12", "123456", " 3.14", "\n", "\n\n",
      "\r\n", "  ", "    ", "\t", " ", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80",
      "<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>", "<|endof", "b\xc3\xbf", "aaaaaaaaa", "!?", "--", "x"};
  static const char *const INVALID[] = {"\xff", "b\xff", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\x80\x80", "\xf8"};
  char *text = malloc(n + 1);
  size_t len = 0;
  unsigned state = seed;
  while (len < n) {
    state = state * 1103515245u + 12345u;
    unsigned r = state >> 8;
    const char *piece =
        with_invalid && r % 11 == 0 ? INVALID[(r / 11) % 7] : PIECES[r % (sizeof PIECES / sizeof PIECES[0])];
    size_t k = strlen(piece);
    if (len + k > n) k = n - len;
    memcpy(text + len, piece, k);
    len += k;
  }
  text[n] = '\0';
  return text;
}

/* ---- tests ---- */

static void test_known_ids(const struct text_tokenizer *gpt2, const struct text_tokenizer *llama3) {
  enum { SP_T = 256, HE, SP_THE, IN, SP_A, ER, ON, B_FF, NN, N12, SP2, SP4, APOS_S, AA, AAAA, A8, LL };
  expect_ids(gpt2, " the", (const uint32_t[]){SP_THE}, 1, "merges by rank");
  expect_ids(gpt2, "the in", (const uint32_t[]){'t', HE, ' ', IN}, 4, "pieces merged alone");
  expect_ids(gpt2, "<|endoftext|>", (const uint32_t[]){ID_ADDED}, 1, "an added token");
  expect_ids(gpt2, "a<|endoftext|> the", (const uint32_t[]){'a', ID_ADDED, SP_THE}, 3, "an added token splits");
  expect_ids(gpt2, "<|endof", (const uint32_t[]){'<', '|', 'e', 'n', 'd', 'o', 'f'}, 7, "half an added token");
  expect_ids(gpt2, "b\xff", (const uint32_t[]){'b', 0xff}, 2, "an invalid byte is a piece of its own");
  expect_ids(gpt2, "ab\xff" "cd", (const uint32_t[]){'a', 'b', 0xff, 'c', 'd'}, 5, "invalid UTF-8 mid-word");
  expect_ids(gpt2, "b\xc3\xbf", (const uint32_t[]){'b', 0xc3, 0xbf}, 3, "valid UTF-8 stays in its piece");
  /* GPT-2's pattern: "\s+(?!\S)" leaves the last space to the word after it. */
  expect_ids(gpt2, "     a", (const uint32_t[]){SP4, SP_A}, 2, "white space before a word");
  expect_ids(gpt2, "hello", (const uint32_t[]){HE, LL, 'o'}, 3, "no ignore_merges: merged");
  expect_ids(llama3, "hello", (const uint32_t[]){ID_WHOLE}, 1, "ignore_merges: a token as it is");
  /* Llama 3's pattern: digits by threes, a letter run takes one non-letter before it. */
  expect_ids(llama3, "12121", (const uint32_t[]){N12, '1', '2', '1'}, 4, "digits by threes");
  expect_ids(llama3, "'s", (const uint32_t[]){APOS_S}, 1, "a contraction");
  expect_ids(llama3, "'S", (const uint32_t[]){'\'', 'S'}, 2, "a contraction in capitals (no merge)");
  expect_ids(llama3, "<|begin_of_text|>x<|end_of_text|>", (const uint32_t[]){ID_ADDED, 'x', ID_ADDED + 1}, 3,
             "Llama 3's added tokens");
  struct token_vec long_piece = encode(gpt2, "aaaaaaaaaaaaaaaaaaaaa", 21, 1, 0); /* 21 letters: 2 x 8 + 4 + 1 */
  EXPECT(long_piece.n == 4 && long_piece.ids[0] == A8 && long_piece.ids[1] == A8 && long_piece.ids[2] == AAAA &&
             long_piece.ids[3] == 'a',
         "21 a's: %zu ids", long_piece.n);
  token_vec_free(&long_piece);
  EXPECT(text_tokenizer_document_token(gpt2) == ID_ADDED, "GPT-2's document token is <|endoftext|>");
  EXPECT(text_tokenizer_document_token(llama3) == ID_ADDED, "Llama 3's document token is <|begin_of_text|>");
  EXPECT(text_tokenizer_added(llama3, "<|end_of_text|>") == ID_ADDED + 1, "added tokens by content");
  EXPECT(text_tokenizer_vocab_size(llama3) == ID_ADDED + 2, "vocab size %d", text_tokenizer_vocab_size(llama3));
}

static void test_round_trip(const struct text_tokenizer *t, const char *what) {
  unsigned state = 7;
  for (int round = 0; round < 300; round++) {
    size_t n = (size_t)(round * 7 % 200);
    char *text = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
      state = state * 1103515245u + 12345u;
      unsigned r = state >> 16;
      /* half the time any byte, else text-like bytes */
      text[i] = r % 2 ? (char)(r >> 1) : " \n\tabh'\xc3\xa9\xe2\x82\xac<|"[(r >> 1) % 15];
    }
    struct token_vec v = encode(t, text, n, 1, 0);
    size_t back_n;
    char *back = decode(t, &v, &back_n);
    EXPECT(back_n == n && memcmp(back, text, n) == 0, "%s: round %d: %zu bytes came back as %zu", what, round, n,
           back_n);
    free(back);
    free(text);
    token_vec_free(&v);
  }
}

static void collect(void *context, const uint32_t *ids, size_t n) { token_vec_append(context, ids, n); }

/* The ids of a text on 1 thread in one part are those on several, in parts of any size. */
static void test_threads(const struct text_tokenizer *t, const char *what) {
  char *text = mixed_text(60000, 3, 1);
  size_t n = strlen(text);
  struct token_vec one = encode(t, text, n, 1, 0);
  const int threads[] = {1, 2, 3, 5};
  const size_t chunks[] = {7, 100, 4096};
  for (int i = 0; i < 4; i++)
    for (int c = 0; c < 3; c++) {
      struct token_vec v = encode(t, text, n, threads[i], chunks[c]);
      EXPECT(same_ids(&v, &one), "%s: %d threads, parts of %zu bytes: %zu ids, not the %zu of one", what, threads[i],
             chunks[c], v.n, one.n);
      token_vec_free(&v);
    }
  /* Windows: the text as documents cut at "\n\n", written in pieces of any size. */
  struct token_vec want = {0};
  int document = text_tokenizer_document_token(t);
  const char *start = text;
  for (const char *end; *start; start = end + (*end ? 2 : 0)) {
    end = strstr(start, "\n\n");
    if (!end) end = start + strlen(start);
    if (end == start) continue;
    token_vec_push(&want, (uint32_t)document);
    struct token_vec part = encode(t, start, (size_t)(end - start), 1, 0);
    token_vec_append(&want, part.ids, part.n);
    token_vec_free(&part);
  }
  const size_t windows[] = {1, 5, 64, 1000, 0};
  const size_t writes[] = {1, 3, 997};
  for (int w = 0; w < 5; w++) {
    struct text_encoder *e = text_encoder_create(t, 1 + w % 3, 50);
    struct token_vec got = {0};
    struct text_stream *s = text_stream_create(e, windows[w], document, collect, &got);
    size_t step = writes[w % 3];
    for (const char *p = text; *p;) {
      const char *sep = strstr(p, "\n\n");
      size_t len = sep ? (size_t)(sep - p) : strlen(p);
      for (size_t done = 0; done < len; done += step)
        text_stream_write(s, p + done, len - done < step ? len - done : step);
      text_stream_end_document(s);
      p += len + (sep ? 2 : 0);
    }
    text_stream_finish(s);
    text_encoder_free(e);
    EXPECT(same_ids(&got, &want), "%s: windows of %zu bytes, writes of %zu: %zu ids, want %zu", what, windows[w], step,
           got.n, want.n);
    token_vec_free(&got);
  }
  token_vec_free(&want);
  token_vec_free(&one);
  free(text);
}

/* Pieces far longer than a window or a part: a run of letters, of spaces, of newlines. */
static void test_long_pieces(const struct text_tokenizer *t, const char *what) {
  size_t n = 300000;
  char *text = malloc(n + 1);
  for (size_t i = 0; i < n; i++) text[i] = i < n / 3 ? 'a' : i < 2 * n / 3 ? ' ' : '\n';
  text[n] = '\0';
  struct token_vec one = encode(t, text, n, 1, 0);
  struct token_vec parts = encode(t, text, n, 3, 1000);
  EXPECT(same_ids(&one, &parts), "%s: long pieces on 3 threads", what);
  struct text_encoder *e = text_encoder_create(t, 2, 1000);
  struct token_vec got = {0};
  struct text_stream *s = text_stream_create(e, 4096, -1, collect, &got);
  for (size_t done = 0; done < n; done += 1000) text_stream_write(s, text + done, 1000);
  text_stream_finish(s);
  text_encoder_free(e);
  EXPECT(same_ids(&one, &got), "%s: long pieces through 4 KiB windows: %zu ids, want %zu", what, got.n, one.n);
  size_t back_n;
  char *back = decode(t, &one, &back_n);
  EXPECT(back_n == n && memcmp(back, text, n) == 0, "%s: long pieces round trip", what);
  free(back);
  token_vec_free(&got);
  token_vec_free(&one);
  token_vec_free(&parts);
  free(text);
}

/* ---- malformed files ---- */

struct bad_case {
  const char *name, *json, *message;
};

static void load_in_child(const void *path) { text_tokenizer_load("--tokenizer", path); }

/* The GPT-2 tokenizer's JSON with its first `from` replaced by `to`. */
static char *edited(const char *json, const char *from, const char *to) {
  const char *at = strstr(json, from);
  if (!at) {
    fprintf(stderr, "text_test: '%s' is not in the tokenizer\n", from);
    exit(2);
  }
  size_t head = (size_t)(at - json), n = strlen(json) - strlen(from) + strlen(to);
  char *out = malloc(n + 1);
  memcpy(out, json, head);
  strcpy(out + head, to);
  strcat(out, at + strlen(from));
  return out;
}

/* A refusal while encoding (a piece the pattern matches as empty) met on any of the
 * encoder's threads reaches the calling thread's catch point, and the encoder encodes
 * the next text as before: its helper threads were left waiting, not mid-scan. */
static void test_refusal_on_helpers(void) {
  char *llama = tokenizer_json(&(struct json_options){LLAMA3, 1});
  char *json = edited(llama, LLAMA3_PATTERN, "(?=d)|\\\\n"); /* empty before a "d" */
  const char *path = temp_file_write("lookahead.json", json, strlen(json));
  struct text_tokenizer *t = text_tokenizer_load("--tokenizer", path);
  char bad[4000] = "", good[4000] = "";
  for (int line = 0; line < 100; line++) {
    strcat(bad, "abc 1d\n");
    strcat(good, "abc 12\n");
  }
  struct token_vec want = encode(t, good, strlen(good), 1, 0);
  struct text_encoder *e = text_encoder_create(t, 3, 7);
  for (int round = 0; round < 20; round++) {
    struct token_vec v = {0};
    struct fsdp_catch refused;
    volatile int caught = 0;
    if (setjmp(refused.jump) == 0) {
      fsdp_catch_set(&refused);
      text_encode(e, bad, strlen(bad), &v);
      fsdp_catch_set(NULL);
    } else {
      caught = strstr(refused.message, "matched the empty string") != NULL;
    }
    EXPECT(caught, "round %d: the empty match was not refused to the catch point", round);
    token_vec_free(&v);
    text_encode(e, good, strlen(good), &v);
    EXPECT(same_ids(&v, &want), "round %d: after a refusal, %zu ids, want %zu", round, v.n, want.n);
    token_vec_free(&v);
  }
  text_encoder_free(e);
  token_vec_free(&want);
  text_tokenizer_free(t);
  free(json);
  free(llama);
}

static void test_bad_files(void) {
  char *good = tokenizer_json(&(struct json_options){GPT2, 0});
  char *llama = tokenizer_json(&(struct json_options){LLAMA3, 1});
  struct {
    const char *name, *from, *to, *message;
    int llama;
  } edits[] = {
      {"not BPE", "\"type\": \"BPE\"", "\"type\": \"WordPiece\"", "model.type is WordPiece, not BPE", 0},
      {"no vocab", "\"vocab\"", "\"vocabulary\"", "model.vocab is missing", 0},
      {"no merges", "\"merges\"", "\"mergers\"", "model.merges is missing", 0},
      {"a merge of an unknown token", "\"\\u0120 t\"", "\"\\u0120 zz\"", "model.merges[0] names 'zz'", 0},
      {"a merge that makes no token", "\"\\u0120 t\"", "\"q q\"", "model.merges[0] ('q' 'q') makes a token", 0},
      {"a malformed merge", "\"\\u0120 t\"", "\"\\u0120  t\"", "model.merges[0] is neither", 0},
      {"a repeated merge", "\"h e\"", "\"\\u0120 t\"", "model.merges[1] repeats model.merges[0]", 0},
      {"an id out of range", "\"hello\": 273", "\"hello\": 70000", "has id 70000, outside 0..274", 0},
      {"a negative id", "\"hello\": 273", "\"hello\": -1", "'hello' has no id that is an integer", 0},
      {"two tokens, one id", "\"hello\": 273", "\"hello\": 272", "both have id 272", 0},
      {"a missing byte", "\"\\u0100\": 0", "\"\\u0100\\u0100\": 0", "no token for the byte 0x00", 0},
      {"a vocab entry that is not byte-level", "\"hello\": 273", "\"h\\u4e00\": 273", "is not byte-level", 0},
      {"an added token's id", "{\"id\": 274", "{\"id\": 7", "added token '<|endoftext|>' has id 7", 0},
      {"lstrip", "\"lstrip\": false", "\"lstrip\": true", "lstrip true is not supported", 0},
      {"a normalizer", "\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}", "a normalizer (NFC)", 0},
      {"add_prefix_space", "\"add_prefix_space\": false", "\"add_prefix_space\": true", "add_prefix_space true", 0},
      {"no pre-tokenizer", "\"pre_tokenizer\": {", "\"pre_tokenizer\": null, \"x\": {", "has no pre_tokenizer", 0},
      {"another decoder", "\"decoder\": {\"type\": \"ByteLevel\"}", "\"decoder\": {\"type\": \"Metaspace\"}",
       "the decoder is Metaspace", 0},
      {"byte fallback", "\"byte_fallback\": false", "\"byte_fallback\": true", "model.byte_fallback is true", 0},
      {"dropout", "\"dropout\": null", "\"dropout\": 0.1", "model.dropout is set", 0},
      {"a NUL escape", "\"hello\": 273", "\"hel\\u0000lo\": 273", "has a \\u0000 escape at byte", 0},
      {"an escaped backslash before u0000", "\"hello\": 273", "\"\\\\u0000\": 272", "both have id 272", 0},
      {"a lone surrogate escape", "\"hello\": 273", "\"hel\\ud800lo\": 273", "a lone UTF-16 surrogate escape, \\ud800, at byte", 0},
      {"a low surrogate alone", "\"hello\": 273", "\"hel\\udc00lo\": 273", "a lone UTF-16 surrogate escape, \\udc00", 0},
      {"a pattern that does not compile", "(?i:'s", "(?i:'s(", "does not compile", 1},
      {"a pattern that looks behind", "(?i:'s", "(?<=a)(?i:'s", "looks behind", 1},
      {"a pattern matching nothing", "(?i:'s", "x*|(?i:'s", "can match the empty string", 1},
      {"a String pattern", "{\"Regex\": ", "{\"String\": ", "a String pattern is not supported", 1},
      {"a Split that merges", "\"Isolated\"", "\"MergedWithPrevious\"", "behavior MergedWithPrevious", 1},
      {"two patterns", "\"use_regex\": false", "\"use_regex\": true", "use_regex false", 1},
  };
  enum { N_EDITS = sizeof edits / sizeof edits[0] };
  struct bad_case cases[N_EDITS + 4] = {
      {"not JSON", "{\"model\": ", "is not JSON"},
      {"not an object", "[1, 2]", "is not a JSON object"},
      {"no model", "{\"added_tokens\": []}", "has no \"model\" object"},
      {"an empty file", "", "is not JSON"},
  };
  for (int i = 0; i < N_EDITS; i++)
    cases[4 + i] = (struct bad_case){edits[i].name, edited(edits[i].llama ? llama : good, edits[i].from, edits[i].to),
                                     edits[i].message};
  const char *path = temp_file_path("bad.json");
  for (int i = 0; i < N_EDITS + 4; i++) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(cases[i].json, f) < 0 || fclose(f) != 0) exit(2);
    char message[4096];
    int status = run_in_child(load_in_child, path, message, sizeof message);
    int refused = WIFEXITED(status) && WEXITSTATUS(status) == 1;
    EXPECT(refused, "%s: not refused with exit 1 (status %d): %s", cases[i].name, status, message);
    EXPECT(strstr(message, path) && strstr(message, cases[i].message), "%s: the message lacks the file or '%s': %s",
           cases[i].name, cases[i].message, message);
    if (i >= 4) free((char *)cases[i].json);
  }
  free(good);
  free(llama);
}

int main(void) {
  temp_files_init("text_test");
  const char *gpt2_path = write_tokenizer("gpt2.json", &(struct json_options){GPT2, 0});
  const char *llama3_path = write_tokenizer("llama3.json", &(struct json_options){LLAMA3, 1});
  struct text_tokenizer *gpt2 = text_tokenizer_load("--tokenizer", gpt2_path);
  struct text_tokenizer *llama3 = text_tokenizer_load("--tokenizer", llama3_path);
  test_known_ids(gpt2, llama3);
  test_round_trip(gpt2, "GPT-2 style");
  test_round_trip(llama3, "Llama 3 style");
  test_threads(gpt2, "GPT-2 style");
  test_threads(llama3, "Llama 3 style");
  test_long_pieces(gpt2, "GPT-2 style");
  test_long_pieces(llama3, "Llama 3 style");
  test_bad_files();
  test_refusal_on_helpers();
  text_tokenizer_free(gpt2);
  text_tokenizer_free(llama3);
  temp_files_remove();
  return check_summary("text_test");
}

/* One safetensors file: its header checked in full on opening, element ranges read with
 * pread, and writing streamed into a temporary file (fsdp/safetensors.h). */
#include "fsdp/safetensors.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/file_commit.h"
#include "fsdp/error.h"
#include "fsdp/json_text.h"
#include "fsdp/input_file.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian, and is read and written here as the host's own bytes"
#endif

/* The format's own bound on the header, which keeps a corrupt length from allocating gigabytes. */
static const uint64_t MAX_HEADER_BYTES = 100u << 20;
/* Offsets and sizes travel as JSON numbers: doubles, exact up to 2^53. */
static const double MAX_EXACT_INTEGER = 9007199254740992.0;
/* Elements converted at a time when reading or writing 16-bit data. */
enum { CONVERT_CHUNK = 1 << 16 };

struct dtype_info {
  const char *name;
  size_t size;
  int readable;
  enum dtype dtype;
};
/* Every dtype of the format; the floating-point ones the runtime has are readable. */
static const struct dtype_info DTYPES[] = {
    {"F32", 4, 1, DTYPE_F32}, {"BF16", 2, 1, DTYPE_BF16}, {"F16", 2, 1, DTYPE_F16}, {"F64", 8, 0, 0},
    {"I64", 8, 0, 0},         {"U64", 8, 0, 0},           {"I32", 4, 0, 0},         {"U32", 4, 0, 0},
    {"I16", 2, 0, 0},         {"U16", 2, 0, 0},           {"I8", 1, 0, 0},          {"U8", 1, 0, 0},
    {"BOOL", 1, 0, 0},        {"F8_E5M2", 1, 0, 0},       {"F8_E4M3", 1, 0, 0},
};
enum { N_DTYPES = sizeof DTYPES / sizeof DTYPES[0] };

static const struct dtype_info *dtype_info_named(const char *name) {
  for (int i = 0; i < N_DTYPES; i++)
    if (strcmp(DTYPES[i].name, name) == 0) return &DTYPES[i];
  return NULL;
}

static const char *dtype_tag(enum dtype d) {
  for (int i = 0; i < N_DTYPES; i++)
    if (DTYPES[i].readable && DTYPES[i].dtype == d) return DTYPES[i].name;
  fsdp_fatal("safetensors: dtype %s cannot be written", dtype_name(d));
}

static void shape_text(char *out, size_t size, const uint64_t *shape, int ndim) {
  size_t len = (size_t)snprintf(out, size, "[");
  for (int i = 0; i < ndim && len < size; i++)
    len += (size_t)snprintf(out + len, size - len, "%s%" PRIu64, i ? ", " : "", shape[i]);
  if (len < size) snprintf(out + len, size - len, "]");
}

/* ---- reading ---- */

static uint64_t read_header_length(const char *path, int fd, uint64_t file_size) {
  if (file_size < 8) fsdp_fatal("%s: %" PRIu64 " bytes, too short for a safetensors file", path, file_size);
  unsigned char bytes[8];
  if (pread(fd, bytes, 8, 0) != 8) fsdp_fatal("%s: cannot read: %s", path, strerror(errno));
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
  if (n < 2 || n > MAX_HEADER_BYTES || n > file_size - 8)
    fsdp_fatal("%s: header length %" PRIu64 " is not possible in a file of %" PRIu64
               " bytes (a safetensors header is 2 to 100 MiB of JSON)",
               path, n, file_size);
  return n;
}

/* A non-negative integer (a JSON number) below 2^53, or the job ends naming what. */
static uint64_t header_integer(const char *path, const char *name, const char *what, const cJSON *item) {
  if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0) || item->valuedouble >= MAX_EXACT_INTEGER ||
      floor(item->valuedouble) != item->valuedouble)
    fsdp_fatal("%s: tensor '%s': %s is not a non-negative integer", path, name, what);
  return (uint64_t)item->valuedouble;
}

static void parse_tensor(const char *path, const cJSON *item, struct safetensors_tensor *t) {
  const char *name = item->string;
  t->name = name;
  if (!cJSON_IsObject(item)) fsdp_fatal("%s: tensor '%s': not a JSON object", path, name);
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  if (!dtype || !shape || !offsets)
    fsdp_fatal("%s: tensor '%s': no \"%s\"", path, name, !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
  if (!cJSON_IsString(dtype)) fsdp_fatal("%s: tensor '%s': \"dtype\" is not a string", path, name);
  const struct dtype_info *info = dtype_info_named(dtype->valuestring);
  if (!info) fsdp_fatal("%s: tensor '%s': unknown dtype '%s'", path, name, dtype->valuestring);
  t->dtype_name = info->name;
  t->readable = info->readable;
  t->dtype = info->dtype;
  t->element_size = info->size;

  if (!cJSON_IsArray(shape)) fsdp_fatal("%s: tensor '%s': \"shape\" is not an array", path, name);
  int ndim = cJSON_GetArraySize(shape);
  if (ndim > SAFETENSORS_MAX_DIMS)
    fsdp_fatal("%s: tensor '%s': %d dimensions, more than the %d supported", path, name, ndim, SAFETENSORS_MAX_DIMS);
  t->ndim = ndim;
  t->numel = 1;
  int overflow = 0;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = header_integer(path, name, "a \"shape\" entry", cJSON_GetArrayItem(shape, i));
    if (t->shape[i] && t->numel > UINT64_MAX / t->shape[i] / info->size) overflow = 1;
    t->numel *= t->shape[i];
  }
  if (overflow) fsdp_fatal("%s: tensor '%s': its shape holds more bytes than a file can", path, name);

  if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
    fsdp_fatal("%s: tensor '%s': \"data_offsets\" is not an array [begin, end]", path, name);
  t->begin = header_integer(path, name, "a \"data_offsets\" entry", cJSON_GetArrayItem(offsets, 0));
  t->end = header_integer(path, name, "a \"data_offsets\" entry", cJSON_GetArrayItem(offsets, 1));
  if (t->end < t->begin)
    fsdp_fatal("%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin", path, name, t->begin,
               t->end);
  if (t->end - t->begin != t->numel * info->size) {
    char text[256];
    shape_text(text, sizeof text, t->shape, ndim);
    fsdp_fatal("%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " bytes, but shape %s of %s "
               "needs %" PRIu64,
               path, name, t->begin, t->end, t->end - t->begin, text, info->name, t->numel * info->size);
  }
}

static void check_metadata(const char *path, const cJSON *item) {
  if (!cJSON_IsObject(item)) fsdp_fatal("%s: \"__metadata__\" is not a JSON object", path);
  for (const cJSON *m = item->child; m; m = m->next)
    if (!cJSON_IsString(m)) fsdp_fatal("%s: \"__metadata__\": \"%s\" is not a string", path, m->string);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct safetensors_tensor *)a)->name, ((const struct safetensors_tensor *)b)->name);
}
static int by_offset(const void *a, const void *b) {
  const struct safetensors_tensor *x = *(const struct safetensors_tensor *const *)a;
  const struct safetensors_tensor *y = *(const struct safetensors_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Every data byte belongs to exactly one tensor: in offset order, each begins where the
 * one before ended, the first at 0 and the last at the end of the file. */
static void check_offsets(const struct safetensors_file *f, uint64_t data_size) {
  const struct safetensors_tensor **order = fsdp_xmalloc(sizeof *order * (size_t)(f->n_tensors + 1));
  for (int i = 0; i < f->n_tensors; i++) order[i] = &f->tensors[i];
  qsort(order, (size_t)f->n_tensors, sizeof *order, by_offset);
  uint64_t at = 0;
  const char *previous = NULL;
  for (int i = 0; i < f->n_tensors; i++) {
    const struct safetensors_tensor *t = order[i];
    if (t->end > data_size)
      fsdp_fatal("%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] pass the end of the data (%" PRIu64
                 " bytes)",
                 f->path, t->name, t->begin, t->end, data_size);
    if (t->begin < at)
      fsdp_fatal("%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] overlap tensor '%s'", f->path, t->name,
                 t->begin, t->end, previous);
    if (t->begin > at)
      fsdp_fatal("%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] leave bytes %" PRIu64 " to %" PRIu64
                 " to no tensor",
                 f->path, t->name, t->begin, t->end, at, t->begin);
    at = t->end;
    previous = t->name;
  }
  if (at != data_size)
    fsdp_fatal("%s: the data's last %" PRIu64 " bytes (from byte %" PRIu64 ") belong to no tensor", f->path,
               data_size - at, at);
  free(order);
}

void safetensors_open(struct safetensors_file *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->path = strdup(path);
  if (!f->path) fsdp_fatal("out of memory");
  struct input_file in;
  input_file_open(&in, "safetensors file", path);
  f->fd = in.fd;
  uint64_t size = in.size;
  uint64_t n = read_header_length(path, f->fd, size);
  f->data_start = 8 + n;

  char *text = fsdp_xmalloc(n + 1);
  if (pread(f->fd, text, n, 8) != (ssize_t)n) fsdp_fatal("%s: cannot read the header: %s", path, strerror(errno));
  text[n] = '\0';
  /* cJSON would end a tensor's name at the NUL and take it for another's. */
  long nul = json_nul_escape(text, n);
  if (nul >= 0) fsdp_fatal("%s: the header escapes a NUL (\\u0000) at byte %ld of it", path, nul);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
  if (!root) fsdp_fatal("%s: the header is not valid JSON (near byte %td of it)", path, end ? end - text : 0);
  /* Writers pad the header with spaces to align the data. */
  while (end < text + n && *end == ' ') end++;
  if (end != text + n) fsdp_fatal("%s: the header has text after its JSON value (byte %td of it)", path, end - text);
  free(text);
  if (!cJSON_IsObject(root)) fsdp_fatal("%s: the header is not a JSON object", path);
  f->header = root;

  int count = 0;
  for (const cJSON *item = root->child; item; item = item->next) count += strcmp(item->string, "__metadata__") != 0;
  f->tensors = fsdp_xcalloc((size_t)count + 1, sizeof *f->tensors);
  for (const cJSON *item = root->child; item; item = item->next) {
    if (strcmp(item->string, "__metadata__") == 0)
      check_metadata(path, item);
    else
      parse_tensor(path, item, &f->tensors[f->n_tensors++]);
  }
  qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, by_name);
  for (int i = 1; i < f->n_tensors; i++)
    if (strcmp(f->tensors[i].name, f->tensors[i - 1].name) == 0)
      fsdp_fatal("%s: tensor '%s' appears twice in the header", path, f->tensors[i].name);
  check_offsets(f, size - f->data_start);
}

void safetensors_close(struct safetensors_file *f) {
  if (f->fd >= 0) close(f->fd);
  cJSON_Delete(f->header);
  free(f->tensors);
  free(f->path);
  memset(f, 0, sizeof *f);
}

const struct safetensors_tensor *safetensors_find(const struct safetensors_file *f, const char *name) {
  struct safetensors_tensor key = {.name = name};
  return f->n_tensors ? bsearch(&key, f->tensors, (size_t)f->n_tensors, sizeof key, by_name) : NULL;
}

static void read_bytes(const struct safetensors_file *f, const struct safetensors_tensor *t, void *out, size_t n,
                       uint64_t offset) {
  char *p = out;
  while (n > 0) {
    ssize_t got = pread(f->fd, p, n, (off_t)offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      fsdp_fatal("%s: tensor '%s': cannot read: %s", f->path, t->name, got < 0 ? strerror(errno) : "the file is shorter");
    p += got;
    offset += (uint64_t)got;
    n -= (size_t)got;
  }
}

void safetensors_read_f32(const struct safetensors_file *f, const struct safetensors_tensor *t, uint64_t first,
                          size_t count, float *out) {
  if (!t->readable)
    fsdp_fatal("%s: tensor '%s': dtype %s cannot be read as parameters (F32, BF16 or F16 can)", f->path, t->name,
               t->dtype_name);
  FSDP_CHECK(first <= t->numel && count <= t->numel - first);
  uint64_t offset = f->data_start + t->begin + first * t->element_size;
  if (t->dtype == DTYPE_F32) {
    read_bytes(f, t, out, count * sizeof(float), offset);
    return;
  }
  uint16_t *buffer = fsdp_xmalloc(sizeof(uint16_t) * CONVERT_CHUNK);
  for (size_t done = 0; done < count;) {
    size_t n = count - done < CONVERT_CHUNK ? count - done : CONVERT_CHUNK;
    read_bytes(f, t, buffer, n * sizeof(uint16_t), offset + done * sizeof(uint16_t));
    dtype_unpack(t->dtype, buffer, out + done, n);
    done += n;
  }
  free(buffer);
}

/* ---- writing ---- */

uint64_t safetensors_entry_bytes(const struct safetensors_entry *e) {
  uint64_t n = dtype_size(e->dtype);
  for (int i = 0; i < e->ndim; i++) n *= e->shape[i];
  return n;
}

/* The header as it is built, NUL-terminated. */
struct header_text {
  char *data;
  size_t len, cap;
};

static void put(struct header_text *h, const char *s, size_t n) {
  h->data = fsdp_xgrow(h->data, &h->cap, h->len + n + 1, 1, 4096);
  memcpy(h->data + h->len, s, n);
  h->len += n;
  h->data[h->len] = '\0';
}
static void put_text(struct header_text *h, const char *s) { put(h, s, strlen(s)); }

/* s as a JSON string: quotes, backslashes and control characters escaped. */
static void put_json_string(struct header_text *h, const char *s) {
  put_text(h, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char escaped[8];
    if (c == '"' || c == '\\') {
      snprintf(escaped, sizeof escaped, "\\%c", c);
      put_text(h, escaped);
    } else if (c < 0x20) {
      snprintf(escaped, sizeof escaped, "\\u%04x", c);
      put_text(h, escaped);
    } else {
      put(h, s, 1);
    }
  }
  put_text(h, "\"");
}

void safetensors_writer_open(struct safetensors_writer *w, const char *path, const struct safetensors_entry *entries,
                             int n) {
  memset(w, 0, sizeof *w);
  w->path = strdup(path);
  if (!w->path) fsdp_fatal("out of memory");
  struct header_text h = {0};
  put_text(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    const struct safetensors_entry *e = &entries[i];
    FSDP_CHECK(e->ndim >= 0 && e->ndim <= SAFETENSORS_MAX_DIMS);
    char field[128];
    put_text(&h, ",");
    put_json_string(&h, e->name);
    snprintf(field, sizeof field, ":{\"dtype\":\"%s\",\"shape\":[", dtype_tag(e->dtype));
    put_text(&h, field);
    for (int d = 0; d < e->ndim; d++) {
      snprintf(field, sizeof field, "%s%" PRIu64, d ? "," : "", e->shape[d]);
      put_text(&h, field);
    }
    uint64_t bytes = safetensors_entry_bytes(e);
    snprintf(field, sizeof field, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at, at + bytes);
    put_text(&h, field);
    at += bytes;
  }
  put_text(&h, "}");
  /* Padded with spaces so that the data starts 8-byte aligned, as the format's own writer does. */
  while (h.len % 8) put_text(&h, " ");
  unsigned char length[8];
  for (int i = 0; i < 8; i++) length[i] = (unsigned char)((uint64_t)h.len >> (8 * i));

  w->tmp = file_commit_temp_path(path);
  w->fd = file_commit_create(w->tmp);
  file_commit_write(w->fd, w->tmp, length, sizeof length);
  file_commit_write(w->fd, w->tmp, h.data, h.len);
  free(h.data);
  w->expected = at;
}

void safetensors_write_f32(struct safetensors_writer *w, enum dtype dtype, const float *values, size_t n) {
  uint64_t bytes = (uint64_t)n * dtype_size(dtype);
  FSDP_CHECK(bytes <= w->expected - w->written);
  w->written += bytes;
  if (dtype == DTYPE_F32) {
    file_commit_write(w->fd, w->tmp, values, n * sizeof(float));
    return;
  }
  FSDP_CHECK(dtype == DTYPE_BF16 || dtype == DTYPE_F16);
  uint16_t *buffer = fsdp_xmalloc(sizeof(uint16_t) * CONVERT_CHUNK);
  for (size_t done = 0; done < n;) {
    size_t count = n - done < CONVERT_CHUNK ? n - done : CONVERT_CHUNK;
    dtype_pack(dtype, values + done, buffer, count);
    file_commit_write(w->fd, w->tmp, buffer, count * sizeof(uint16_t));
    done += count;
  }
  free(buffer);
}

void safetensors_writer_sync(struct safetensors_writer *w) {
  FSDP_CHECK(w->written == w->expected);
  if (fsync(w->fd) != 0) fsdp_fatal("%s: cannot sync: %s", w->tmp, strerror(errno));
  int fd = w->fd;
  w->fd = -1;
  if (close(fd) != 0) fsdp_fatal("%s: cannot close: %s", w->tmp, strerror(errno));
}

void safetensors_writer_close(struct safetensors_writer *w) {
  FSDP_CHECK(w->written == w->expected);
  file_commit_finish(w->fd, w->tmp, w->path);
  free(w->tmp);
  free(w->path);
  memset(w, 0, sizeof *w);
}

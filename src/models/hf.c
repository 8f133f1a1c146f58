/* Loading and exporting a model's parameters as transformers names them, from the
 * family's table (fsdp/hf.h): every rule becomes one tensor, found in the runtime by
 * its unit and parameter name, so nothing here depends on how the model is split into
 * units. */
#include "fsdp/hf.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/log.h"
#include "fsdp/safetensors.h"
#include "hf_config.h"

static const char CONFIG_NAME[] = "config.json";

/* ---- the tensors ---- */

static int applies(const struct hf_tensor_rule *r, const struct model_config *c) {
  return r->when == HF_ALWAYS || !c->tied;
}

static void resolve(const struct hf_tensor_rule *r, int layer, struct hf_tensor *t) {
  memset(t, 0, sizeof *t);
  /* The patterns are the tables' own, with %d only where a layer goes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  snprintf(t->hf_name, sizeof t->hf_name, r->hf_name, layer);
  snprintf(t->param, sizeof t->param, r->param, layer);
#pragma GCC diagnostic pop
  t->transposed = r->transposed;
}

static int add_rules(const struct hf_tensor_rule *rules, int n, int layer, const struct model_config *c,
                     struct hf_tensor *out) {
  int count = 0;
  for (int i = 0; i < n; i++)
    if (applies(&rules[i], c)) {
      if (out) resolve(&rules[i], layer, &out[count]);
      count++;
    }
  return count;
}

/* With out NULL, only counts. */
static int list(const struct hf_format *h, const struct model_config *c, struct hf_tensor *out) {
  int n = add_rules(h->before, h->n_before, 0, c, out);
  for (int l = 0; l < c->n_layer; l++) n += add_rules(h->layer, h->n_layer, l, c, out ? out + n : NULL);
  return n + add_rules(h->after, h->n_after, 0, c, out ? out + n : NULL);
}

struct hf_tensor *hf_tensor_list(const struct model_family *f, const struct model_config *c, int *n_out) {
  int n = list(f->hf, c, NULL);
  struct hf_tensor *t = fsdp_xcalloc((size_t)n, sizeof *t);
  list(f->hf, c, t);
  *n_out = n;
  return t;
}

/* The runtime's parameter of t; a table naming one the model does not have is a bug. */
static void locate(const struct fsdp_model *m, const struct hf_tensor *t, struct fsdp_unit **u, int *param) {
  if (!fsdp_model_find_param(m, t->param, u, param))
    fsdp_fatal("internal: %s: the model has no parameter '%s'", t->hf_name, t->param);
}

/* transformers' shape of the parameter: the runtime's, or its transpose. */
static void hf_shape(const struct hf_tensor *t, const struct flat_param_entry *e, uint64_t *shape, int *ndim) {
  *ndim = e->ndim;
  for (int d = 0; d < e->ndim; d++) shape[d] = e->shape[d];
  if (t->transposed) {
    FSDP_CHECK(e->ndim == 2);
    shape[0] = e->shape[1];
    shape[1] = e->shape[0];
  }
}

/* Every parameter of the model is named by exactly one tensor of the table. */
static void check_covered(const struct fsdp_model *m, int n_tensors) {
  int n_params = 0;
  for (int i = 0; i < m->n_units; i++) n_params += m->units[i]->layout.n_params;
  FSDP_CHECK(n_params == n_tensors);
}

/* ---- config.json ---- */

int hf_folder_reads(const char *name) {
  static const char *const ENDINGS[] = {".safetensors", ".safetensors.index.json"};
  size_t n = strlen(name);
  for (int i = 0; i < 2; i++) {
    size_t k = strlen(ENDINGS[i]);
    if (n >= k && strcmp(name + n - k, ENDINGS[i]) == 0) return 1;
  }
  return strcmp(name, CONFIG_NAME) == 0;
}

static int is_folder(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *config_path_of(const char *path) {
  char *config;
  if (is_folder(path)) {
    config = fsdp_xmalloc(strlen(path) + sizeof CONFIG_NAME + 1);
    sprintf(config, "%s/%s", path, CONFIG_NAME);
  } else {
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    config = fsdp_xmalloc(dir + sizeof CONFIG_NAME);
    memcpy(config, path, dir);
    strcpy(config + dir, CONFIG_NAME);
  }
  return config;
}

/* A key an object of j (or of one inside it) holds twice, or NULL: cJSON finds the first,
 * Python's json (transformers) keeps the last, and the two would build other models. */
static const char *twice(const cJSON *j) {
  for (const cJSON *a = j->child; a; a = a->next) {
    if (cJSON_IsObject(j))
      for (const cJSON *b = a->next; b; b = b->next)
        if (strcmp(a->string, b->string) == 0) return a->string;
    const char *inside = twice(a);
    if (inside) return inside;
  }
  return NULL;
}

static cJSON *read_json(const char *path) {
  size_t len;
  char *text = input_file_read_all("--init-from config", path, INPUT_JSON_MAX_BYTES, &len);
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root) fsdp_fatal("%s: not valid JSON", path);
  if (!cJSON_IsObject(root)) fsdp_fatal("%s: not a JSON object", path);
  const char *key = twice(root);
  if (key) fsdp_fatal("%s: \"%s\" is given twice", path, key);
  return root;
}

const struct model_family *hf_config_load(const char *path, struct model_config *c, char **config_path) {
  struct stat st;
  if (stat(path, &st) != 0) fsdp_fatal("--init-from: %s: %s", path, strerror(errno));
  char *config = config_path_of(path);
  *config_path = NULL;
  if (!S_ISDIR(st.st_mode) && stat(config, &st) != 0) {
    free(config);
    return NULL;
  }
  cJSON *root = read_json(config);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  if (!cJSON_IsString(type)) fsdp_fatal("%s: no \"model_type\" string", config);
  const struct model_family *f = model_family_by_hf_type(type->valuestring);
  if (!f) fsdp_fatal("%s: model_type '%s' is none of the families (gpt2, llama)", config, type->valuestring);
  f->hf->config_read(config, root, c);
  const char *problem = f->config_problem(c);
  if (problem) fsdp_fatal("%s: a model the runtime cannot build: %s", config, problem);
  cJSON_Delete(root);
  *config_path = config;
  return f;
}

/* The config.json of a model of family f and shape c saved in dtype: *len bytes, malloc'd. */
static char *config_text(const struct model_family *f, const struct model_config *c, enum dtype dtype, size_t *len) {
  cJSON *root = cJSON_CreateObject();
  cJSON *architectures = cJSON_AddArrayToObject(root, "architectures");
  cJSON_AddItemToArray(architectures, cJSON_CreateString(f->hf->architecture));
  cJSON_AddStringToObject(root, "model_type", f->hf->model_type);
  f->hf->config_write(c, dtype, root);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  *len = strlen(text);
  text = fsdp_xrealloc(text, *len + 2);
  text[(*len)++] = '\n';
  return text;
}

/* ---- loading ---- */

/* The file's tensor for t: by its name, or, in a checkpoint of the base model alone,
 * by its name without transformers' prefix. */
static const struct safetensors_tensor *find_tensor(const struct safetensors_set *s, const struct hf_format *h,
                                                    const struct hf_tensor *t, const struct safetensors_file **file) {
  const struct safetensors_tensor *found = safetensors_set_find(s, t->hf_name, file);
  size_t n = strlen(h->base_prefix);
  if (!found && strncmp(t->hf_name, h->base_prefix, n) == 0) found = safetensors_set_find(s, t->hf_name + n, file);
  return found;
}

static void shape_text(char *out, size_t size, const uint64_t *shape, int ndim) {
  size_t len = (size_t)snprintf(out, size, "[");
  for (int i = 0; i < ndim && len < size; i++)
    len += (size_t)snprintf(out + len, size - len, "%s%" PRIu64, i ? ", " : "", shape[i]);
  if (len < size) snprintf(out + len, size - len, "]");
}

static void check_shape(const struct safetensors_file *file, const struct safetensors_tensor *st, const uint64_t *want,
                        int ndim) {
  int same = st->ndim == ndim;
  for (int d = 0; same && d < ndim; d++) same = st->shape[d] == want[d];
  if (same) return;
  char have_text[128], want_text[128];
  shape_text(have_text, sizeof have_text, st->shape, st->ndim);
  shape_text(want_text, sizeof want_text, want, ndim);
  fsdp_fatal("%s: tensor '%s': shape %s, but the model's is %s", file->path, st->name, have_text, want_text);
}

/* Elements [begin, begin + count) of the runtime's (rows, cols) parameter, from the file's
 * [cols, rows] tensor, read whole. */
static void read_transposed(const struct safetensors_file *file, const struct safetensors_tensor *st,
                            const struct flat_param_entry *e, size_t begin, size_t count, float *out) {
  float *whole = fsdp_xmalloc(e->numel * sizeof(float));
  safetensors_read_f32(file, st, 0, e->numel, whole);
  size_t rows = e->shape[0], cols = e->shape[1];
  for (size_t i = 0; i < count; i++) {
    size_t r = (begin + i) / cols, c = (begin + i) % cols;
    out[i] = whole[c * rows + r];
  }
  free(whole);
}

void hf_load_params(struct fsdp_model *m, const struct model_family *f, const struct model_config *c,
                    const char *path) {
  struct safetensors_set s;
  safetensors_set_open(&s, path);
  int n;
  struct hf_tensor *tensors = hf_tensor_list(f, c, &n);
  check_covered(m, n);
  for (int i = 0; i < n; i++) {
    const struct hf_tensor *t = &tensors[i];
    struct fsdp_unit *u;
    int p;
    locate(m, t, &u, &p);
    const struct flat_param_entry *e = &u->layout.params[p];
    uint64_t shape[PARAM_MAX_DIMS];
    int ndim;
    hf_shape(t, e, shape, &ndim);
    const struct safetensors_file *file;
    const struct safetensors_tensor *st = find_tensor(&s, f->hf, t, &file);
    if (!st) fsdp_fatal("%s: no tensor '%s', which the model has", path, t->hf_name);
    check_shape(file, st, shape, ndim);
    struct sharded_param_info info = fsdp_unit_param_info(u, p);
    size_t count = info.end - info.begin;
    if (count == 0) continue;
    float *values = fsdp_xmalloc(count * sizeof(float));
    if (t->transposed)
      read_transposed(file, st, e, info.begin, count, values);
    else
      safetensors_read_f32(file, st, info.begin, count, values);
    for (size_t k = 0; k < count; k++)
      if (!isfinite(values[k]))
        fsdp_fatal("%s: tensor '%s' holds %s: weights must be finite", file->path, st->name,
                   isnan(values[k]) ? "a NaN" : "an infinity");
    fsdp_unit_write_param_shard(u, p, values);
    free(values);
  }
  int in_files = 0;
  for (int k = 0; k < s.n_files; k++) in_files += s.files[k].n_tensors;
  if (in_files > n)
    fsdp_log_info("%s: %d tensors that are no parameter of the model left out (buffers, a tied head)", path,
                  in_files - n);
  free(tensors);
  safetensors_set_close(&s);
}

/* ---- exporting ---- */

void hf_export(struct fsdp_model *m, const struct model_family *f, const struct model_config *c, const char *dir,
               enum dtype dtype, uint64_t max_file_bytes, int write) {
  int n;
  struct hf_tensor *tensors = hf_tensor_list(f, c, &n);
  check_covered(m, n);
  struct safetensors_entry *entries = fsdp_xcalloc((size_t)n, sizeof *entries);
  for (int i = 0; i < n; i++) {
    struct fsdp_unit *u;
    int p;
    locate(m, &tensors[i], &u, &p);
    entries[i].name = tensors[i].hf_name;
    entries[i].dtype = dtype;
    hf_shape(&tensors[i], &u->layout.params[p], entries[i].shape, &entries[i].ndim);
  }
  struct safetensors_set_writer w;
  if (write) safetensors_set_writer_open(&w, dir, entries, n, max_file_bytes);
  /* Units are gathered whole, in the tables' order, on every rank alike (a collective). */
  struct fsdp_unit *gathered = NULL;
  float *full = NULL, *transposed = NULL;
  for (int i = 0; i < n; i++) {
    struct fsdp_unit *u;
    int p;
    locate(m, &tensors[i], &u, &p);
    if (u != gathered) {
      full = fsdp_xrealloc(full, u->layout.numel * sizeof(float));
      fsdp_unit_gather_params(u, full);
      gathered = u;
    }
    if (!write) continue;
    const struct flat_param_entry *e = &u->layout.params[p];
    const float *values = full + e->offset;
    if (tensors[i].transposed) {
      size_t rows = e->shape[0], cols = e->shape[1];
      transposed = fsdp_xrealloc(transposed, e->numel * sizeof(float));
      for (size_t r = 0; r < rows; r++)
        for (size_t col = 0; col < cols; col++) transposed[col * rows + r] = values[r * cols + col];
      values = transposed;
    }
    safetensors_set_write_f32(&w, values, e->numel);
  }
  if (write) {
    /* With the set's files, so that the folder never holds one model's tensors and another's config. */
    size_t len;
    char *config = config_text(f, c, dtype, &len);
    safetensors_set_writer_add(&w, CONFIG_NAME, config, len);
    free(config);
    safetensors_set_writer_close(&w);
  }
  free(transposed);
  free(full);
  free(entries);
  free(tensors);
}

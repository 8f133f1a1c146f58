/* metadata.json of a checkpoint (docs/architecture.md, "Checkpoints"): the model, the
 * flags that shape training, the data set, the training state (the data's position among
 * it), every tensor's global shape, and each rank file's pieces, size and CRC-32C. Written by rank 0 after every file is durable;
 * read by every rank on resume and checked against the run. */
#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpointing.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/log.h"

static const char FORMAT[] = "fsdp.c sharded checkpoint";
enum { VERSION = 1 };

/* ---- the flags that shape training ---- */

/* A flag whose value a resumed run must share with its checkpoint: the model's shape
 * (a mismatch is another model), the batch and schedule, the optimizer and the precision
 * (the data is checked apart: data_json). The rest (world size, sharding, how the global batch is split into
 * micro-batches, activation checkpointing, overlap, outputs) can change safely. */
struct shaping_flag {
  const char *flag;
  char value[64];
  int of_model;
  int is_float;
  const char *why; /* what the value here comes from, where the flag was not given as such */
};
enum { MAX_SHAPING_FLAGS = 32 };

/* The shortest decimal that reads back as v ("0.002", not "0.00200000009"). */
static const char *float_text(char out[32], float v) {
  for (int digits = 1; digits <= 9; digits++) {
    snprintf(out, 32, "%.*g", digits, v);
    if (strtof(out, NULL) == v) break;
  }
  return out;
}

static int shaping_flags(const struct ckpt_parts *p, struct shaping_flag *f) {
  const struct train_config *o = p->config;
  const struct model_config *c = &o->model.config;
  int n = 0;
#define FLAG(name, model, ...)                                                                                   \
  (f[n] = (struct shaping_flag){.flag = name, .of_model = model},                                                 \
   snprintf(f[n].value, sizeof f[n].value, __VA_ARGS__), n++)
#define FLOAT_FLAG(name, v) (FLAG(name, 0, "%s", float_text(number, v)), f[n - 1].is_float = 1)
  char number[32];
  FLAG("--model", 1, "%s", o->model.name);
  FLAG("--n-layer", 1, "%d", c->n_layer);
  FLAG("--n-head", 1, "%d", c->n_head);
  FLAG("--n-kv-head", 1, "%d", c->n_kv_head);
  FLAG("--n-embd", 1, "%d", c->n_embd);
  FLAG("--ffn-hidden", 1, "%d", c->ffn_hidden);
  FLAG("--vocab-size", 1, "%d", c->vocab_size);
  FLAG("--block-size", 1, "%d", c->max_seq_len);
  FLAG("--seq-len", 0, "%d", o->seq_len);
  FLAG("--global-batch-size", 0, "%d", p->batch_per_rank * p->world_size * o->grad_accum);
  FLAG("--seed", 0, "%llu", (unsigned long long)o->seed);
  FLOAT_FLAG("--lr", o->lr);
  FLOAT_FLAG("--min-lr", o->min_lr);
  FLAG("--warmup", 0, "%d", o->warmup);
  FLOAT_FLAG("--weight-decay", o->weight_decay);
  FLOAT_FLAG("--grad-clip", o->grad_clip);
  FLOAT_FLAG("--beta1", o->beta1);
  FLOAT_FLAG("--beta2", o->beta2);
  FLOAT_FLAG("--eps", o->eps);
  FLAG("--param-dtype", 0, "%s", dtype_name(o->mp.param_dtype));
  FLAG("--reduce-dtype", 0, "%s", dtype_name(o->mp.reduce_dtype));
  FLOAT_FLAG("--val-fraction", o->data.val_fraction);
  if (o->data.val_files)
    f[n - 1].why = " (--val-data's: validation from files of its own, where the checkpoint's run held the tail of "
                   "--data out of training; resume without --val-data)";
#undef FLOAT_FLAG
#undef FLAG
  FSDP_CHECK(n <= MAX_SHAPING_FLAGS);
  return n;
}

/* ---- writing ---- */

static cJSON *model_json(const struct model_spec *spec) {
  const struct model_config *c = &spec->config;
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "family", spec->family->name);
  cJSON_AddStringToObject(m, "preset", spec->name);
  cJSON_AddNumberToObject(m, "n_layer", c->n_layer);
  cJSON_AddNumberToObject(m, "n_head", c->n_head);
  cJSON_AddNumberToObject(m, "n_kv_head", c->n_kv_head);
  cJSON_AddNumberToObject(m, "n_embd", c->n_embd);
  cJSON_AddNumberToObject(m, "vocab_size", c->vocab_size);
  cJSON_AddNumberToObject(m, "max_seq_len", c->max_seq_len);
  cJSON_AddNumberToObject(m, "ffn_hidden", c->ffn_hidden);
  cJSON_AddNumberToObject(m, "norm_eps", c->norm_eps);
  cJSON_AddNumberToObject(m, "rope_theta", c->rope_theta);
  cJSON_AddNumberToObject(m, "rope_factor", c->rope_factor);
  cJSON_AddNumberToObject(m, "rope_low_freq_factor", c->rope_low_freq_factor);
  cJSON_AddNumberToObject(m, "rope_high_freq_factor", c->rope_high_freq_factor);
  cJSON_AddNumberToObject(m, "rope_original_max_seq_len", c->rope_original_max_seq_len);
  cJSON_AddBoolToObject(m, "tied", c->tied);
  return m;
}

/* How the checkpoint was written: for the reader's information, free to differ on resume. */
static cJSON *written_by_json(const struct ckpt_parts *p) {
  cJSON *w = cJSON_CreateObject();
  cJSON_AddNumberToObject(w, "world_size", p->world_size);
  cJSON_AddStringToObject(w, "sharding", sharding_strategy_name(p->config->model.sharding));
  cJSON_AddNumberToObject(w, "batch_size", p->batch_per_rank);
  cJSON_AddNumberToObject(w, "grad_accum", p->config->grad_accum);
  cJSON_AddStringToObject(w, "data", p->config->data.files);
  return w;
}

/* What --steps may change on resume (lr_schedule_extend); the rest are training flags. */
cJSON *ckpt_schedule_json(const struct lr_schedule *s) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "steps", s->total);
  cJSON_AddNumberToObject(j, "decay_from", s->decay_from);
  /* 17 digits: cJSON prints 15 where they read back within a relative epsilon, which is
   * not the same double, and a resumed run must take the very rates. */
  char progress[32];
  snprintf(progress, sizeof progress, "%.17g", s->decay_progress);
  cJSON_AddRawToObject(j, "decay_progress", progress);
  return j;
}

static cJSON *state_json(const struct ckpt_parts *p, const struct train_state *s) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "step", s->step);
  cJSON_AddNumberToObject(j, "optimizer_steps", s->optimizer_steps);
  /* The schedule is evaluated at step - 1 for step (from 1). */
  cJSON_AddNumberToObject(j, "lr_schedule_position", s->step);
  cJSON_AddItemToObject(j, "lr_schedule", ckpt_schedule_json(&s->schedule));
  /* Where the next global batch starts: the authority on resume (data_loader_seek); the
   * shard and its window say the same for a reader, and are checked against it. */
  cJSON *data = cJSON_AddObjectToObject(j, "data_position");
  cJSON_AddNumberToObject(data, "epoch", (double)s->data.epoch);
  cJSON_AddNumberToObject(data, "epoch_window", (double)s->data.epoch_window);
  cJSON_AddStringToObject(data, "shard", s->data_shard);
  cJSON_AddNumberToObject(data, "shard_window", (double)s->data_shard_window);
  char seed[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)p->config->seed);
  cJSON *rng = cJSON_AddObjectToObject(j, "rng");
  cJSON_AddStringToObject(rng, "generator", "philox4x32-10, counter-based: draws are functions of (seed, stream, counter)");
  cJSON_AddStringToObject(rng, "seed", seed);
  cJSON_AddNumberToObject(j, "loss_scale", s->loss_scale);
  cJSON_AddNumberToObject(j, "loss_scale_good_steps", s->good_steps);
  return j;
}

/* The data set's identity: its shards, in order, by base name (the files may move), token
 * count and the CRC-32C of their first tokens; the windows an epoch holds follow from
 * them and --seq-len. */
static cJSON *data_json(const struct data_loader *l) {
  const struct data_set *set = &l->train_set;
  cJSON *d = cJSON_CreateObject();
  cJSON_AddNumberToObject(d, "windows_per_epoch", (double)l->train.order.windows_per_epoch);
  cJSON *shards = cJSON_AddArrayToObject(d, "shards");
  for (int i = 0; i < set->n_shards; i++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", set->shards[i].name);
    cJSON_AddNumberToObject(e, "tokens", (double)set->shards[i].layout.n_tokens);
    char crc[16];
    snprintf(crc, sizeof crc, "%08x", set->shards[i].head_crc32c);
    cJSON_AddStringToObject(e, "head_crc32c", crc);
    cJSON_AddItemToArray(shards, e);
  }
  return d;
}

static cJSON *tensors_json(const struct fsdp_model *m) {
  struct ckpt_tensor *tensors;
  int n = fsdp_checkpoint_tensors(m, &tensors);
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", tensors[i].name);
    cJSON_AddStringToObject(e, "dtype", "fp32");
    cJSON *shape = cJSON_AddArrayToObject(e, "shape");
    for (int d = 0; d < tensors[i].ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)tensors[i].shape[d]));
    cJSON_AddItemToArray(a, e);
  }
  free(tensors);
  return a;
}

static cJSON *file_json(const struct ckpt_file_meta *f) {
  cJSON *j = cJSON_CreateObject();
  char crc[16];
  snprintf(crc, sizeof crc, "%08x", (unsigned)f->crc32c);
  cJSON_AddStringToObject(j, "name", f->file.path);
  cJSON_AddNumberToObject(j, "bytes", (double)f->file.bytes);
  cJSON_AddStringToObject(j, "crc32c", crc);
  cJSON *pieces = cJSON_AddArrayToObject(j, "pieces");
  for (int k = 0; k < f->file.n_pieces; k++) {
    const struct ckpt_piece *pc = &f->file.pieces[k];
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "tensor", pc->tensor);
    cJSON_AddNumberToObject(p, "begin", (double)pc->begin);
    cJSON_AddNumberToObject(p, "end", (double)pc->end);
    cJSON_AddNumberToObject(p, "offset", (double)pc->offset);
    cJSON_AddItemToArray(pieces, p);
  }
  return j;
}

char *ckpt_meta_json(const struct ckpt_parts *p, const struct train_state *s, const struct ckpt_file_meta *files,
                     int n_files) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", FORMAT);
  cJSON_AddNumberToObject(root, "version", VERSION);
  cJSON_AddNumberToObject(root, "step", s->step);
  cJSON_AddItemToObject(root, "model", model_json(&p->config->model));
  struct shaping_flag flags[MAX_SHAPING_FLAGS];
  int n_flags = shaping_flags(p, flags);
  cJSON *fj = cJSON_AddObjectToObject(root, "training_flags");
  for (int i = 0; i < n_flags; i++) cJSON_AddStringToObject(fj, flags[i].flag, flags[i].value);
  cJSON_AddItemToObject(root, "written_by", written_by_json(p));
  cJSON_AddItemToObject(root, "data", data_json(p->data));
  cJSON_AddItemToObject(root, "state", state_json(p, s));
  cJSON_AddStringToObject(root, "byte_order", "little");
  cJSON *states = cJSON_AddArrayToObject(root, "states");
  for (int i = 0; i < CKPT_STATES; i++) cJSON_AddItemToArray(states, cJSON_CreateString(CKPT_STATE_NAMES[i]));
  cJSON_AddItemToObject(root, "tensors", tensors_json(p->model));
  cJSON *fa = cJSON_AddArrayToObject(root, "files");
  for (int i = 0; i < n_files; i++) cJSON_AddItemToArray(fa, file_json(&files[i]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) fsdp_fatal("out of memory printing a checkpoint's metadata");
  return text;
}

/* ---- reading ---- */

/* Each lookup ends the job naming the file when the field is missing or of another type. */
static const cJSON *get(const char *path, const cJSON *obj, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!v) fsdp_fatal("checkpoint metadata '%s': '%s' is missing", path, name);
  return v;
}

static const char *get_string(const char *path, const cJSON *obj, const char *name) {
  const cJSON *v = get(path, obj, name);
  if (!cJSON_IsString(v)) fsdp_fatal("checkpoint metadata '%s': '%s' is not a string", path, name);
  return v->valuestring;
}

/* A whole number in [0, 2^53], which doubles hold exactly. */
static size_t get_size(const char *path, const cJSON *obj, const char *name) {
  const cJSON *v = get(path, obj, name);
  double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
  if (!(d >= 0.0 && d <= 9007199254740992.0 && d == floor(d)))
    fsdp_fatal("checkpoint metadata '%s': '%s' is not a non-negative integer", path, name);
  return (size_t)d;
}

static int get_int(const char *path, const cJSON *obj, const char *name) {
  size_t v = get_size(path, obj, name);
  if (v > 2147483647u) fsdp_fatal("checkpoint metadata '%s': '%s' is out of range", path, name);
  return (int)v;
}

static const cJSON *get_array(const char *path, const cJSON *obj, const char *name) {
  const cJSON *v = get(path, obj, name);
  if (!cJSON_IsArray(v)) fsdp_fatal("checkpoint metadata '%s': '%s' is not an array", path, name);
  return v;
}

static const cJSON *get_object(const char *path, const cJSON *obj, const char *name) {
  const cJSON *v = get(path, obj, name);
  if (!cJSON_IsObject(v)) fsdp_fatal("checkpoint metadata '%s': '%s' is not an object", path, name);
  return v;
}

static cJSON *parse_file(const char *step_dir, const char *path) {
  struct stat st;
  if (stat(step_dir, &st) != 0) fsdp_fatal("checkpoint '%s': no such directory", step_dir);
  if (!S_ISDIR(st.st_mode)) fsdp_fatal("checkpoint '%s' is a file: a checkpoint is a step's folder", step_dir);
  if (stat(path, &st) != 0 && errno == ENOENT) {
    /* --checkpoint-dir's folder rather than one of its steps. */
    int *steps, n = ckpt_dir_steps(step_dir, 1, &steps), newest = n ? steps[n - 1] : -1;
    free(steps);
    if (newest >= 0)
      fsdp_fatal("checkpoint '%s' is a folder of checkpoints, not one: give one of its steps, such as its newest "
                 "complete one, '%s'",
                 step_dir, ckpt_step_dir(step_dir, newest).s);
    fsdp_fatal("checkpoint '%s' is incomplete: it has no %s (its writing was interrupted)", step_dir, CKPT_METADATA);
  }
  size_t size;
  char *text = input_file_read_all("checkpoint metadata", path, INPUT_JSON_MAX_BYTES, &size);
  cJSON *root = cJSON_ParseWithLength(text, size);
  free(text);
  if (!root || !cJSON_IsObject(root)) fsdp_fatal("checkpoint metadata '%s' is not a JSON object", path);
  return root;
}

/* Two texts of fp32 values next to each other. */
static int next_floats(const char *a, const char *b) {
  char *end_a, *end_b;
  float x = strtof(a, &end_a), y = strtof(b, &end_b);
  return !*end_a && !*end_b && isfinite(x) && isfinite(y) && x != y && nextafterf(x, y) == y;
}

static void check_flags(const char *path, const cJSON *root, const struct ckpt_parts *p) {
  const cJSON *saved = get_object(path, root, "training_flags");
  struct shaping_flag flags[MAX_SHAPING_FLAGS];
  int n = shaping_flags(p, flags);
  /* The model first: a checkpoint of another model is one error, not a list of flags. */
  for (int pass = 1; pass >= 0; pass--)
    for (int i = 0; i < n; i++) {
      if (flags[i].of_model != pass) continue;
      const char *there = get_string(path, saved, flags[i].flag);
      if (strcmp(there, flags[i].value) == 0) continue;
      if (pass)
        fsdp_fatal("checkpoint '%s' is of another model: %s %s there, %s here", path, flags[i].flag, there,
                   flags[i].value);
      /* An exact resume needs the very fp32 values: a default such as --min-lr's, --lr / 10 in fp32, may lie an
       * ulp from the fp32 of the text a user writes for it. */
      const char *ulp = flags[i].is_float && next_floats(there, flags[i].value)
                            ? ": an fp32 ulp apart; give the checkpoint's value as it is written there, or leave the "
                              "flag out if its default made it"
                            : "";
      fsdp_fatal("%s: %s here%s, but the checkpoint '%s' was trained with %s (the flags that shape training must stay "
                 "the same on resume)%s",
                 flags[i].flag, flags[i].value, flags[i].why ? flags[i].why : "", path, there, ulp);
    }
}

static void check_tensors(const char *path, const cJSON *root, const struct fsdp_model *m) {
  struct ckpt_tensor *tensors;
  int n = fsdp_checkpoint_tensors(m, &tensors);
  const cJSON *saved = get_array(path, root, "tensors");
  if (cJSON_GetArraySize(saved) != n)
    fsdp_fatal("checkpoint '%s' is of another model: %d tensors there, %d here", path, cJSON_GetArraySize(saved), n);
  const cJSON *e;
  cJSON_ArrayForEach(e, saved) {
    const char *name = get_string(path, e, "name");
    const struct ckpt_tensor *mine = NULL;
    for (int i = 0; i < n && !mine; i++)
      if (strcmp(tensors[i].name, name) == 0) mine = &tensors[i];
    if (!mine) fsdp_fatal("checkpoint '%s' is of another model: it has tensor '%s', this model does not", path, name);
    if (strcmp(get_string(path, e, "dtype"), "fp32") != 0)
      fsdp_fatal("checkpoint metadata '%s': tensor '%s' has dtype '%s', not fp32", path, name,
                 get_string(path, e, "dtype"));
    const cJSON *shape = get_array(path, e, "shape");
    int same = cJSON_GetArraySize(shape) == mine->ndim;
    for (int d = 0; same && d < mine->ndim; d++) {
      const cJSON *x = cJSON_GetArrayItem(shape, d);
      same = cJSON_IsNumber(x) && x->valuedouble == (double)mine->shape[d];
    }
    if (!same) {
      char *there = cJSON_PrintUnformatted(shape);
      fsdp_fatal("checkpoint '%s' is of another model: tensor '%s' has shape %s there, another here", path, name,
                 there ? there : "?");
    }
  }
  free(tensors);
}

struct lr_schedule ckpt_schedule_read(const char *path, const cJSON *j, float lr, float min_lr, int warmup) {
  if (!cJSON_IsObject(j)) fsdp_fatal("checkpoint metadata '%s': 'lr_schedule' is not an object", path);
  struct lr_schedule s = lr_warmup_cosine(lr, min_lr, warmup, get_int(path, j, "steps"));
  s.decay_from = get_int(path, j, "decay_from");
  const cJSON *progress = get(path, j, "decay_progress");
  if (!cJSON_IsNumber(progress) || !(progress->valuedouble >= 0.0 && progress->valuedouble <= 1.0))
    fsdp_fatal("checkpoint metadata '%s': 'decay_progress' is not a number in [0, 1]", path);
  s.decay_progress = progress->valuedouble;
  /* Re-anchored, the decay is past the warmup and before its end. */
  if (s.decay_from < s.warmup || (s.decay_from > s.warmup && s.decay_from >= s.total))
    fsdp_fatal("checkpoint metadata '%s': its lr_schedule's decay_from %d is before --warmup or past its steps",
               path, s.decay_from);
  return s;
}

/* The schedule of the run that wrote the checkpoint. --lr, --min-lr and --warmup are
 * training flags, the same here; a checkpoint from before --steps could change holds
 * its --steps among them, its decay unextended. */
static struct lr_schedule read_schedule(const char *path, const cJSON *root, const cJSON *state,
                                        const struct train_config *o) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(state, "lr_schedule");
  if (!j) {
    const char *steps = get_string(path, get_object(path, root, "training_flags"), "--steps");
    return lr_warmup_cosine(o->lr, o->min_lr, o->warmup, atoi(steps));
  }
  return ckpt_schedule_read(path, j, o->lr, o->min_lr, o->warmup);
}

static void read_state(const char *path, const cJSON *root, struct train_state *s) {
  const cJSON *j = get_object(path, root, "state");
  s->step = get_int(path, j, "step");
  s->optimizer_steps = get_int(path, j, "optimizer_steps");
  s->good_steps = get_int(path, j, "loss_scale_good_steps");
  const cJSON *scale = get(path, j, "loss_scale");
  if (!cJSON_IsNumber(scale) || !(scale->valuedouble >= 0.0) || scale->valuedouble > FLT_MAX)
    fsdp_fatal("checkpoint metadata '%s': 'loss_scale' is not a non-negative fp32 number", path);
  s->loss_scale = (float)scale->valuedouble;
  if (s->step != get_int(path, root, "step") || s->optimizer_steps > s->step)
    fsdp_fatal("checkpoint metadata '%s': its steps disagree", path);
}

/* The first difference between the checkpoint's data set and this run's, or NULL. */
static const char *data_difference(const char *path, const cJSON *data, const struct data_set *set, char *out,
                                   size_t out_size) {
  const cJSON *shards = get_array(path, data, "shards");
  int there = cJSON_GetArraySize(shards), i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, shards) {
    const char *name = get_string(path, e, "name");
    size_t tokens = get_size(path, e, "tokens");
    if (i == set->n_shards) break;
    const struct data_shard *mine = &set->shards[i++];
    if (strcmp(name, mine->name) != 0 || tokens != mine->layout.n_tokens) {
      snprintf(out, out_size, "its shard %d is '%s' of %zu tokens, this run's '%s' of %zu", i, name, tokens,
               mine->name, mine->layout.n_tokens);
      return out;
    }
    /* Checkpoints from before it was kept have none. */
    const cJSON *crc = cJSON_GetObjectItemCaseSensitive(e, "head_crc32c");
    char mine_crc[16];
    snprintf(mine_crc, sizeof mine_crc, "%08x", mine->head_crc32c);
    if (crc && (!cJSON_IsString(crc) || strcmp(crc->valuestring, mine_crc) != 0)) {
      snprintf(out, out_size, "its shard %d, '%s' of %zu tokens, begins with other tokens than this run's '%s'", i,
               name, tokens, mine->path);
      return out;
    }
  }
  if (there == set->n_shards) return NULL;
  snprintf(out, out_size, "it has %d shard(s), this run %d", there, set->n_shards);
  return out;
}

/* The data set the checkpoint was trained on, and where in it the next batch starts. */
static void read_data(const char *path, const cJSON *root, const struct ckpt_parts *p, struct train_state *s) {
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
  const cJSON *position = cJSON_GetObjectItemCaseSensitive(get_object(path, root, "state"), "data_position");
  if (!data && !position) {
    if (!p->config->data_changed)
      fsdp_fatal("--data: checkpoint '%s' was written before checkpoints kept their data set and position (its "
                 "batches were drawn at random); --data-changed accept goes on in this run's order, from the window "
                 "its step reaches",
                 path);
    s->has_data = 0;
    s->data_changed = 1;
    return;
  }
  if (!data || !cJSON_IsObject(data)) fsdp_fatal("checkpoint metadata '%s': 'data' is missing or not an object", path);
  if (!position || !cJSON_IsObject(position))
    fsdp_fatal("checkpoint metadata '%s': 'data_position' is missing or not an object", path);
  s->has_data = 1;
  s->data.epoch = get_size(path, position, "epoch");
  s->data.epoch_window = get_size(path, position, "epoch_window");
  const char *shard = get_string(path, position, "shard");
  s->data_shard = strcpy(fsdp_xmalloc(strlen(shard) + 1), shard);
  s->data_shard_window = get_size(path, position, "shard_window");
  char why[1024];
  const char *difference = data_difference(path, data, &p->data->train_set, why, sizeof why);
  s->data_changed = difference != NULL;
  if (difference && !p->config->data_changed)
    fsdp_fatal("--data: checkpoint '%s' was trained on another data set: %s (--data-changed accept goes on with "
               "this one, from the checkpoint's epoch and its place in it)",
               path, difference);
  if (difference) {
    fsdp_log_info("resume: another data set than the checkpoint's (%s), accepted (--data-changed accept)", difference);
    return;
  }
  uint64_t windows = p->data->train.order.windows_per_epoch;
  if (get_size(path, data, "windows_per_epoch") != windows || s->data.epoch_window >= windows)
    fsdp_fatal("checkpoint metadata '%s': its data position (epoch %llu, window %llu) does not fit its epochs of "
               "%zu windows, this run's %llu",
               path, (unsigned long long)s->data.epoch, (unsigned long long)s->data.epoch_window,
               get_size(path, data, "windows_per_epoch"), (unsigned long long)windows);
}

void ckpt_meta_seek_data(const struct ckpt_meta *meta, const struct ckpt_parts *parts) {
  const struct train_state *s = &meta->state;
  struct data_loader *data = parts->data;
  uint64_t b = (uint64_t)s->step;
  if (s->has_data && data_loader_seek(data, b, s->data) != 0)
    fsdp_fatal("checkpoint metadata '%s': its data position's epoch %llu (window %llu) is past the %llu epochs a "
               "run's data order takes", meta->path.s, (unsigned long long)s->data.epoch,
               (unsigned long long)s->data.epoch_window, (unsigned long long)data_order_epochs(&data->train.order));
  struct data_position p = data_loader_position(data, b);
  const char *shard;
  size_t window;
  data_loader_describe(data, p, &shard, &window);
  /* The same data set and order: the window the metadata names must be the one found. */
  if (!s->data_changed && (strcmp(shard, s->data_shard) != 0 || window != s->data_shard_window))
    fsdp_fatal("checkpoint metadata '%s': its data position (epoch %llu, window %llu) is window %zu of '%s' here, "
               "but it says window %zu of '%s'",
               meta->path.s, (unsigned long long)p.epoch, (unsigned long long)p.epoch_window, window, shard,
               s->data_shard_window, s->data_shard);
  fsdp_log_info("resume: data from epoch %llu, window %llu of its %llu (shard '%s', its window %zu)",
                (unsigned long long)p.epoch, (unsigned long long)p.epoch_window,
                (unsigned long long)data->train.order.windows_per_epoch, shard, window);
}

/* A file name, never a path: a checkpoint reads only files inside its own directory. */
static const char *file_name(const char *path, const cJSON *j) {
  const char *name = get_string(path, j, "name");
  if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    fsdp_fatal("checkpoint metadata '%s': '%s' is not a file name", path, name);
  return name;
}

static void read_file_meta(const char *path, const char *step_dir, const cJSON *j, struct ckpt_file_meta *f) {
  f->file.path = strcpy(fsdp_xmalloc(CKPT_PATH_MAX), ckpt_path_join(step_dir, file_name(path, j)).s);
  f->file.bytes = get_size(path, j, "bytes");
  const char *crc = get_string(path, j, "crc32c");
  char *end;
  unsigned long v = strtoul(crc, &end, 16);
  if (strlen(crc) != 8 || *end) fsdp_fatal("checkpoint metadata '%s': crc32c '%s' is not 8 hex digits", path, crc);
  f->crc32c = (uint32_t)v;
  const cJSON *pieces = get_array(path, j, "pieces");
  f->file.n_pieces = cJSON_GetArraySize(pieces);
  struct ckpt_piece *out = fsdp_xcalloc((size_t)(f->file.n_pieces ? f->file.n_pieces : 1), sizeof *out);
  int k = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, pieces) {
    const char *tensor = get_string(path, p, "tensor");
    if (strlen(tensor) >= CKPT_NAME_MAX) fsdp_fatal("checkpoint metadata '%s': tensor name '%s' is too long", path, tensor);
    strcpy(out[k].tensor, tensor);
    out[k].begin = get_size(path, p, "begin");
    out[k].end = get_size(path, p, "end");
    out[k].offset = get_size(path, p, "offset");
    k++;
  }
  f->file.pieces = out;
}

/* Without the run's parts (a checkpoint's weights only), the training flags are not compared. */
static void read_meta(const char *step_dir, const struct fsdp_model *m, const struct ckpt_parts *p,
                      struct ckpt_meta *out) {
  memset(out, 0, sizeof *out);
  out->path = ckpt_path_join(step_dir, CKPT_METADATA);
  const char *path = out->path.s;
  cJSON *root = parse_file(step_dir, path);
  if (strcmp(get_string(path, root, "format"), FORMAT) != 0)
    fsdp_fatal("checkpoint metadata '%s': format is not '%s'", path, FORMAT);
  if (get_int(path, root, "version") != VERSION)
    fsdp_fatal("checkpoint metadata '%s': version %d, this build reads version %d", path,
               get_int(path, root, "version"), VERSION);
  if (strcmp(get_string(path, root, "byte_order"), "little") != 0)
    fsdp_fatal("checkpoint metadata '%s': byte order is not little-endian", path);
  if (p) check_flags(path, root, p);
  check_tensors(path, root, m);
  read_state(path, root, &out->state);
  /* --resume auto, --keep-last and their users go by the folders' names: one that names
   * another step (a link to an older checkpoint) would be taken for what it is not. */
  int named = ckpt_named_step(step_dir);
  if (named >= 0 && named != out->state.step)
    fsdp_fatal("checkpoint '%s' holds step %d, not the step %d its name says", step_dir, out->state.step, named);
  if (p) read_data(path, root, p, &out->state);
  if (p) out->state.schedule = read_schedule(path, root, get_object(path, root, "state"), p->config);
  /* The run that wrote it was at a step of its schedule. */
  if (p && out->state.step > out->state.schedule.total)
    fsdp_fatal("checkpoint metadata '%s': its step %d is past its lr_schedule's %d steps", path, out->state.step,
               out->state.schedule.total);
  const cJSON *files = get_array(path, root, "files");
  out->n_files = cJSON_GetArraySize(files);
  if (out->n_files == 0) fsdp_fatal("checkpoint metadata '%s' lists no files", path);
  out->files = fsdp_xcalloc((size_t)out->n_files, sizeof *out->files);
  int i = 0;
  const cJSON *f;
  cJSON_ArrayForEach(f, files) read_file_meta(path, step_dir, f, &out->files[i++]);
  cJSON_Delete(root);
}

void ckpt_meta_read(const char *step_dir, const struct ckpt_parts *p, struct ckpt_meta *out) {
  read_meta(step_dir, p->model, p, out);
}

void ckpt_meta_read_weights(const char *step_dir, const struct fsdp_model *m, struct ckpt_meta *out) {
  read_meta(step_dir, m, NULL, out);
}

static float get_float(const char *path, const cJSON *obj, const char *name) {
  const cJSON *v = get(path, obj, name);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) fsdp_fatal("checkpoint metadata '%s': '%s' is not a number", path, name);
  return (float)v->valuedouble;
}

const struct model_family *checkpoint_model_read(const char *step_dir, struct model_config *c) {
  struct ckpt_path meta = ckpt_path_join(step_dir, CKPT_METADATA);
  const char *path = meta.s;
  cJSON *root = parse_file(step_dir, path);
  const cJSON *m = get_object(path, root, "model");
  const char *family_name = get_string(path, m, "family");
  const struct model_family *family = model_family_by_name(family_name);
  if (!family) fsdp_fatal("checkpoint metadata '%s': unknown model family '%s'", path, family_name);
  *c = (struct model_config){
      .n_layer = get_int(path, m, "n_layer"),
      .n_head = get_int(path, m, "n_head"),
      .n_kv_head = get_int(path, m, "n_kv_head"),
      .n_embd = get_int(path, m, "n_embd"),
      .vocab_size = get_int(path, m, "vocab_size"),
      .max_seq_len = get_int(path, m, "max_seq_len"),
      .ffn_hidden = get_int(path, m, "ffn_hidden"),
      .norm_eps = get_float(path, m, "norm_eps"),
      .rope_theta = get_float(path, m, "rope_theta"),
      .rope_factor = get_float(path, m, "rope_factor"),
      .rope_low_freq_factor = get_float(path, m, "rope_low_freq_factor"),
      .rope_high_freq_factor = get_float(path, m, "rope_high_freq_factor"),
      .rope_original_max_seq_len = get_int(path, m, "rope_original_max_seq_len"),
  };
  const cJSON *tied = get(path, m, "tied");
  if (!cJSON_IsBool(tied)) fsdp_fatal("checkpoint metadata '%s': 'tied' is not a boolean", path);
  c->tied = cJSON_IsTrue(tied);
  const char *problem = family->config_problem(c);
  if (problem) fsdp_fatal("checkpoint metadata '%s': its model is not valid: %s", path, problem);
  cJSON_Delete(root);
  return family;
}

void ckpt_meta_free(struct ckpt_meta *m) {
  for (int i = 0; i < m->n_files; i++) {
    free((char *)m->files[i].file.path);
    free((struct ckpt_piece *)m->files[i].file.pieces);
  }
  free(m->files);
  free((char *)m->state.data_shard);
  memset(m, 0, sizeof *m);
}

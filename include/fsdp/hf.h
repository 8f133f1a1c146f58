/* Hugging Face transformers interop: each family's tensor names and layouts and its
 * config.json, as tables (src/models/gpt2_hf.c, llama_hf.c), and, from them, loading a
 * model's parameters from safetensors and exporting them (src/models/hf.c). Only this
 * layer knows transformers; the runtime sees named parameters. */
#ifndef FSDP_HF_H
#define FSDP_HF_H

#include <stdint.h>

#include "fsdp/dtype.h"
#include "fsdp/flat_param.h"
#include "fsdp/model.h"
#include "fsdp/runtime.h"

struct cJSON;

/* Which models have a tensor. */
enum hf_when { HF_ALWAYS, HF_UNTIED /* only when the head is not the token embedding */ };

/* One tensor of transformers' state dict and the runtime parameter it is. */
struct hf_tensor_rule {
  const char *hf_name; /* a layer's rules: a pattern with one %d, the layer */
  const char *param;   /* the runtime's name of the parameter: a layer's with the same %d */
  int transposed;      /* transformers stores [in, out] (GPT-2's Conv1D), the runtime [out, in] */
  enum hf_when when;
};

struct hf_format {
  const char *model_type;  /* config.json's "model_type" */
  const char *architecture; /* config.json's "architectures"[0] */
  /* transformers' prefix of the base model's tensors ("transformer.", "model."): a
   * checkpoint of the base model alone (GPT2Model) names them without it. */
  const char *base_prefix;
  /* In transformers' order: the tensors before the layers, each layer's, and after. */
  const struct hf_tensor_rule *before, *layer, *after;
  int n_before, n_layer, n_after;
  /* config.json: reads it into c (every problem ends the job naming path and the key),
   * or adds the family's keys to root for a model of c saved in dtype. */
  void (*config_read)(const char *path, const struct cJSON *root, struct model_config *c);
  void (*config_write)(const struct model_config *c, enum dtype dtype, struct cJSON *root);
};

/* The families' (src/models/gpt2_hf.c, llama_hf.c). */
extern const struct hf_format GPT2_HF_FORMAT, LLAMA3_HF_FORMAT;

/* A rule resolved for a model: one tensor. */
struct hf_tensor {
  char hf_name[128];
  char param[PARAM_NAME_MAX];
  int transposed;
};

/* The tensors of a model of family f and shape c, in transformers' order; n_out gets
 * their number. malloc'd. */
struct hf_tensor *hf_tensor_list(const struct model_family *f, const struct model_config *c, int *n_out);

/* The config.json of a model at path (a .safetensors file or an index: the one beside it;
 * a folder: the one in it): its family (by model_type) and shape into c. Returns NULL,
 * leaving c alone, when a file has no config.json beside it. config_path gets the
 * config's path (malloc'd) or NULL. */
const struct model_family *hf_config_load(const char *path, struct model_config *c, char **config_path);

/* Whether a file of this name in a folder may be one that loading the folder reads:
 * config.json, the index, or any .safetensors (an index may name files as it likes). */
int hf_folder_reads(const char *name);

/* Fills this rank's shard of every parameter of m, a model of family f and shape c,
 * from the safetensors at path (a file, an index, or a folder with either). Each rank
 * reads only its own elements; a transposed tensor is read whole, one at a time. */
void hf_load_params(struct fsdp_model *m, const struct model_family *f, const struct model_config *c, const char *path);

/* Writes m's parameters as transformers names and lays them out into dir, in dtype
 * (fp32, bf16 or fp16): model.safetensors, or files of at most max_file_bytes and their
 * index, and config.json, all renamed into place together once all are written
 * (safetensors_set_writer's way). Collective: every rank gathers each unit in turn; only
 * the rank with write set writes. */
void hf_export(struct fsdp_model *m, const struct model_family *f, const struct model_config *c, const char *dir,
               enum dtype dtype, uint64_t max_file_bytes, int write);

#endif

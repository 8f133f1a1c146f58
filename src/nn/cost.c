/* What an op costs on a planned device (cost.h). */
#include "cost.h"

#include <string.h>

#include "fsdp/meta_clock.h"
#include "ops.h"

static int has(struct tensor t) { return t.data != NULL; }

/* out (N, OC) = inp (N, C) weight (OC, C)^T: 2 N C OC; the backward as much again for
 * each of dinp and dweight it computes. */
static double matmul_flops(struct tensor inp, struct tensor weight) {
  return 2.0 * (double)tensor_rows(&inp) * (double)tensor_cols(&inp) * (double)weight.shape[0];
}

/* Causal attention over B sequences of T positions, NH heads of hd (C = NH hd): a product
 * of the (T, T) scores with a (T, hd) side is 2 T^2 hd per head, half of it in the lower
 * triangle, so B T^2 C; the forward has two (Q K^T, P V), the backward five (the scores
 * again, dV, dP, dQ, dK). lse is (B, NH, T). */
static double attention_flops(struct tensor lse, struct tensor out, double products) {
  double B = (double)lse.shape[0], T = (double)lse.shape[2], C = (double)tensor_cols(&out);
  return products * B * T * T * C;
}

double op_flops(const struct op_contract *c, const void *args, int *attention) {
  *attention = 0;
  if (c == &nn_contract_matmul_forward) {
    const struct matmul_args *a = args;
    return matmul_flops(a->inp, a->weight);
  }
  if (c == &nn_contract_matmul_backward) {
    const struct matmul_backward_args *a = args;
    return (has(a->dinp) + has(a->dweight)) * matmul_flops(a->inp, a->weight);
  }
  *attention = 1;
  if (c == &nn_contract_attention_forward) {
    const struct attention_args *a = args;
    return attention_flops(a->lse, a->out, 2);
  }
  if (c == &nn_contract_attention_backward) {
    const struct attention_backward_args *a = args;
    return attention_flops(a->lse, a->dout, 5);
  }
  if (c == &nn_contract_gqa_attention_forward) {
    const struct gqa_attention_args *a = args;
    return attention_flops(a->lse, a->out, 2);
  }
  if (c == &nn_contract_gqa_attention_backward) {
    const struct gqa_attention_backward_args *a = args;
    return attention_flops(a->lse, a->dout, 5);
  }
  *attention = 0;
  return 0;
}

/* The bytes of the present operands, once each; AdamW's parameter and moments are read
 * and written. */
static double operand_bytes(const struct op_contract *c, const void *args) {
  double bytes = 0;
  for (int i = 0; i < c->n_operands; i++) {
    struct tensor t;
    memcpy(&t, (const char *)args + c->operands[i].offset, sizeof t);
    if (!has(t)) continue;
    double b = (double)tensor_bytes(&t);
    const char *name = c->operands[i].name;
    int rewritten = c == &nn_contract_adamw && (!strcmp(name, "param") || !strcmp(name, "m") || !strcmp(name, "v"));
    bytes += rewritten ? 2 * b : b;
  }
  return bytes;
}

double op_seconds(const struct op_contract *c, const void *args, const struct device_speed *speed) {
  int attention;
  double flops = op_flops(c, args, &attention);
  double rate = attention ? speed->attention_flops : speed->matmul_flops;
  double compute = flops > 0 && rate > 0 ? flops / rate : 0;
  double memory = speed->memory_bytes > 0 ? operand_bytes(c, args) / speed->memory_bytes : 0;
  if (compute == 0 && memory == 0) return 0;
  return speed->op_s + (compute > memory ? compute : memory);
}

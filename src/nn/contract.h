/* Private to src/nn: what each op takes — its operands' dtypes, which of them may be
 * absent, how their shapes must agree, how they may overlap — written once here and
 * checked by nn.c before any backend sees the op, on every device, meta included. So a
 * plan on the meta device, or a run on the CPU, refuses what the GPU would: the first
 * GPU run died in step 1 on a loss sum the CPU and the planner had let through.
 *
 * The dtype contract (DESIGN.md): an op's float tensors share its compute dtype — fp32,
 * bf16 or fp16 — and the op computes in fp32 registers, rounding once on store; what
 * must keep fp32's precision whatever that dtype (the norms' statistics, the per-token
 * losses, master weights, gradient shards, optimizer state) is fp32; sums are fp64. */
#ifndef FSDP_NN_CONTRACT_H
#define FSDP_NN_CONTRACT_H

#include <stddef.h>

#include "fsdp/dtype.h"

enum operand_kind {
  OPERAND_COMPUTE, /* fp32, bf16 or fp16: the op's compute dtype, the same for all of them */
  OPERAND_F32,     /* fp32 whatever the compute dtype */
  OPERAND_FLOAT,   /* fp32, bf16 or fp16, each its own (the two sides of a cast) */
  OPERAND_SUM,     /* one fp64 element */
  OPERAND_TOKENS,  /* int32 token ids */
};

struct operand {
  const char *name;
  size_t offset; /* of its struct tensor in the op's argument struct (ops.h) */
  enum operand_kind kind;
  int optional;  /* may be TENSOR_NONE */
};

/* A shape rule's verdict: the first rule that fails is reported. */
struct shape_check {
  const char *failed; /* the rule as written, NULL while every rule holds */
};

enum { CONTRACT_MAX_OPERANDS = 9 };

struct op_contract {
  const char *name;
  int n_operands;
  struct operand operands[CONTRACT_MAX_OPERANDS];
  /* Checks that the present operands' shapes agree (and any rule of the op's scalars). */
  void (*shapes)(const void *args, struct shape_check *check);
};

/* Every op of fsdp/nn.h, one contract each (contract.c). */
#define NN_OPS(X)                                                                                                  \
  X(encoder_forward) X(encoder_backward) X(layernorm_forward) X(layernorm_backward) X(matmul_forward)              \
  X(matmul_backward) X(attention_forward) X(attention_backward) X(gelu_forward) X(gelu_backward)                   \
  X(residual_forward) X(classifier) X(rmsnorm_forward) X(rmsnorm_backward) X(rope_table) X(rope_forward)           \
  X(rope_backward) X(swiglu_forward) X(swiglu_backward)                                                            \
  X(gqa_attention_forward) X(gqa_attention_backward) X(cached_attention_forward) X(cast) X(round) X(add)           \
  X(sum) X(sum_squares) X(fill) X(init_normal) X(init_trunc_normal) X(grad_clip_scale) X(adamw)
#define NN_DECLARE_CONTRACT(op) extern const struct op_contract nn_contract_##op;
NN_OPS(NN_DECLARE_CONTRACT)
#undef NN_DECLARE_CONTRACT

struct device;
struct nn_backend;

/* Ends the job, naming the op, the device and the operand, unless args keep contract c
 * and backend b (d's, or the one a meta d plans for) computes in the op's compute dtype. */
void contract_check(const struct op_contract *c, const void *args, const struct device *d,
                    const struct nn_backend *b);

#endif

/* Private to src/nn: what an op costs on the device a meta device plans for
 * (fsdp/meta_clock.h): the FLOPs of its products at the product rate, or the bytes of its
 * operands at the memory rate, whichever takes longer, after the device's least time per
 * op. A roofline per op: the kernels' own efficiency is in the rates. */
#ifndef FSDP_NN_COST_H
#define FSDP_NN_COST_H

#include "contract.h"

struct device_speed;

/* Seconds that op c with args takes at speed. */
double op_seconds(const struct op_contract *c, const void *args, const struct device_speed *speed);

/* The FLOPs of op c's matrix products (0 for an op that has none), and whether they are
 * the attention's. */
double op_flops(const struct op_contract *c, const void *args, int *attention);

#endif

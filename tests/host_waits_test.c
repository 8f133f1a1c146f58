/* A training step never waits for the device until its optimizer is launched: the
 * forward and backward of K micro-batches, the gradient norm, its clipping (with a loss
 * scale undone) and the AdamW step make no stream_synchronize, event_synchronize or
 * copy to the host (device_host_waits), so that on a GPU the host runs ahead and the
 * step's kernels queue back to back. Only the reads after it, the loss and the norm,
 * wait. For each model of tests/test_models.h, in fp32 and bf16, on every rank of the
 * MPI world (mpirun runs it at several sizes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/rng.h"
#include "test_models.h"

enum { B = 2, T = TEST_MODEL_SEQ, K = 2 };
static const uint64_t SEED = 4242;

static int failures;

static void check_model(const struct test_model *tm, enum dtype param_dtype) {
  struct fsdp_model m;
  struct fsdp_mixed_precision mp = {.param_dtype = param_dtype, .reduce_dtype = DTYPE_F32};
  fsdp_model_init(&m, device_cpu(), comm_world(), SHARD_FULL, NULL, &mp);
  void *model = tm->family->create(&tm->config, &m, B, T, 0);
  fsdp_model_wrap(&m, &FSDP_WRAP_DEFAULT);
  fsdp_model_init_params(&m, SEED);
  int inputs[B * T], targets[B * T], rank = comm_rank(comm_world());
  struct adamw_config adamw = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
  for (int step = 1; step <= 2; step++) {
    size_t before = device_host_waits(device_cpu());
    for (int k = 0; k < K; k++) {
      for (int i = 0; i < B * T; i++) {
        inputs[i] = (int)rng_below(SEED, (uint64_t)(step * K + k), (uint64_t)(rank * B * T + i), 67);
        targets[i] = (int)rng_below(SEED + 1, (uint64_t)(step * K + k), (uint64_t)(rank * B * T + i), 67);
      }
      tm->family->forward(model, inputs, targets);
      tm->family->backward(model, 1024.0f / K);
    }
    fsdp_model_measure_grad_norm(&m);
    fsdp_model_clip_grad_norm(&m, 0.5, 1.0f / 1024);
    fsdp_model_adamw_step(&m, &adamw, step);
    size_t inside = device_host_waits(device_cpu()) - before;
    double loss = tm->family->take_loss(model), norm = fsdp_model_measured_grad_norm(&m) / 1024;
    size_t after = device_host_waits(device_cpu()) - before;
    const char *dtype = param_dtype == DTYPE_F32 ? "fp32" : "bf16";
    if (inside != 0 || after == 0 || !(loss > 0.0 && isfinite(loss)) || !(norm > 0.0 && isfinite(norm))) {
      printf("FAIL %s %s step %d: %zu host waits before the optimizer was launched (want 0), %zu with the "
             "reads after it (want > 0); loss %g, grad norm %g\n",
             tm->name, dtype, step, inside, after, loss, norm);
      failures++;
    } else if (rank == 0) {
      printf("ok %s %s step %d: no host wait in the step, %zu for its loss and norm; loss %.4f, norm %.4f\n",
             tm->name, dtype, step, after, loss, norm);
    }
  }
  tm->family->free(model);
  fsdp_model_free(&m);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  for (size_t i = 0; i < sizeof TEST_MODELS / sizeof TEST_MODELS[0]; i++) {
    check_model(&TEST_MODELS[i], DTYPE_F32);
    check_model(&TEST_MODELS[i], DTYPE_BF16);
  }
  comm_all_reduce(comm_world(), &failures, 1, COMM_I32, COMM_MAX);
  comm_finalize();
  return failures ? 1 : 0;
}

#include <math.h>

#include "fsdp/runtime.h"

float lr_warmup_cosine(int step, int warmup, int total, float lr, float min_lr) {
  if (step < warmup) return lr * (float)(step + 1) / (float)(warmup + 1);
  if (step >= total) return min_lr;
  double progress = (double)(step - warmup) / (double)(total - warmup);
  double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
  return min_lr + (float)coeff * (lr - min_lr);
}

#include <math.h>
#include <stddef.h>

#include "cpu.h"

#define TWO_PI 6.283185307179586

/* f_i as transformers computes it in float32: e = 2i/hd rounded to float, theta^e
 * rounded, then its float reciprocal. These roundings leave nearly a third of the f_i
 * an ulp from the correctly rounded theta^-e, and at t = 8192 an ulp of f_1 = 0.19
 * (theta 500000, hd 16) moves the angle by 1e-4: enough to tell the tables apart. */
static float base_inv_freq(int i, int hd, float theta) {
  float e = (float)(2 * i) / (float)hd;
  return 1.0f / (float)pow(theta, e);
}

/* f scaled as Llama 3.1 says (nn.h), in double. Only the low and middle bands change,
 * where f is small enough that its last bits hardly move an angle. */
static double llama3_scaled(double f, const struct nn_rope *r) {
  double L = r->original_max_position_embeddings;
  double wavelen = TWO_PI / f;
  if (wavelen < L / r->high_freq_factor) return f;
  if (wavelen > L / r->low_freq_factor) return f / r->factor;
  double s = (L / wavelen - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
  return (1.0 - s) * f / r->factor + s * f;
}

/* The table as transformers' LlamaRotaryEmbedding computes it in float32, so that a
 * model matches Hugging Face's at every position: f_i in float as above (torch keeps
 * inv_freq in float32), its scaling in double rounded to float; the angle t * f_i a
 * float product, as torch's float32 matmul of positions and inv_freq is (at t = 8192
 * that rounding moves the angle by up to 5e-4, more than all the others together); cos
 * and sin of that angle computed in double and rounded. One column per task: f_i once. */
static void rope_table(float *table, int maxT, int hd, const struct nn_rope *r) {
  int half = hd / 2;
#pragma omp parallel for
  for (int i = 0; i < half; i++) {
    float f = base_inv_freq(i, hd, r->theta);
    if (r->factor > 0.0f) f = (float)llama3_scaled(f, r);
    for (int t = 0; t < maxT; t++) {
      float angle = (float)t * f;
      table[(size_t)t * hd + i] = (float)cos(angle);
      table[(size_t)t * hd + half + i] = (float)sin(angle);
    }
  }
}

/* x (B, T, H, hd): each pair (x_i, x_{i+hd/2}) of row (b, t, h) turns by t f_i. Each
 * pair is read before it is written, so out may be inp. */
static void rope_forward(float *out, const float *inp, const float *table, int B, int T, int H, int hd) {
  int half = hd / 2;
#pragma omp parallel for collapse(2)
  for (int bt = 0; bt < B * T; bt++) {
    for (int h = 0; h < H; h++) {
      const float *cs = table + (size_t)(bt % T) * hd, *sn = cs + half;
      size_t row = ((size_t)bt * H + h) * hd;
      const float *x = inp + row;
      float *o = out + row;
      for (int i = 0; i < half; i++) {
        float x1 = x[i], x2 = x[half + i];
        o[i] = x1 * cs[i] - x2 * sn[i];
        o[half + i] = x2 * cs[i] + x1 * sn[i];
      }
    }
  }
}

/* The rotation's transpose, by -t f_i: dx_i += d_i cos + d_{i+hd/2} sin,
 * dx_{i+hd/2} += d_{i+hd/2} cos - d_i sin. */
static void rope_backward(float *dinp, const float *dout, const float *table, int B, int T, int H, int hd) {
  int half = hd / 2;
#pragma omp parallel for collapse(2)
  for (int bt = 0; bt < B * T; bt++) {
    for (int h = 0; h < H; h++) {
      const float *cs = table + (size_t)(bt % T) * hd, *sn = cs + half;
      size_t row = ((size_t)bt * H + h) * hd;
      const float *d = dout + row;
      float *dx = dinp + row;
      for (int i = 0; i < half; i++) {
        float d1 = d[i], d2 = d[half + i];
        dx[i] += d1 * cs[i] + d2 * sn[i];
        dx[half + i] += d2 * cs[i] - d1 * sn[i];
      }
    }
  }
}

void cpu_rope_table(void *p) {
  const struct rope_table_args *a = p;
  rope_table(f32(a->table), dim(a->table, 0), dim(a->table, 1), &a->rope);
}

void cpu_rope_forward(void *p) {
  const struct rope_args *a = p;
  rope_forward(f32(a->out), f32(a->inp), f32(a->table), dim(a->inp, 0), dim(a->inp, 1), dim(a->inp, 2),
               dim(a->inp, 3));
}

void cpu_rope_backward(void *p) {
  const struct rope_backward_args *a = p;
  rope_backward(f32(a->dinp), f32(a->dout), f32(a->table), dim(a->dout, 0), dim(a->dout, 1), dim(a->dout, 2),
                dim(a->dout, 3));
}

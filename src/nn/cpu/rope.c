#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "typed.h"

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

/* Row (b, t) of x (B, T, H, hd), its H heads side by side: each pair (x_i, x_{i+hd/2}) of
 * a head turns by t f_i (cs and sn: the table's row t). Each pair is read before it is
 * written, so o may be x. */
static void rope_row(float *o, const float *x, const float *cs, int H, int hd) {
  int half = hd / 2;
  const float *sn = cs + half;
  for (int h = 0; h < H; h++) {
    const float *xh = x + (size_t)h * hd;
    float *oh = o + (size_t)h * hd;
    for (int i = 0; i < half; i++) {
      float x1 = xh[i], x2 = xh[half + i];
      oh[i] = x1 * cs[i] - x2 * sn[i];
      oh[half + i] = x2 * cs[i] + x1 * sn[i];
    }
  }
}

/* The rotation's transpose, by -t f_i: dx_i += d_i cos + d_{i+hd/2} sin,
 * dx_{i+hd/2} += d_{i+hd/2} cos - d_i sin. */
static void rope_backward_row(float *dx, const float *d, const float *cs, int H, int hd) {
  int half = hd / 2;
  const float *sn = cs + half;
  for (int h = 0; h < H; h++) {
    const float *dh = d + (size_t)h * hd;
    float *dxh = dx + (size_t)h * hd;
    for (int i = 0; i < half; i++) {
      float d1 = dh[i], d2 = dh[half + i];
      dxh[i] += d1 * cs[i] + d2 * sn[i];
      dxh[half + i] += d2 * cs[i] - d1 * sn[i];
    }
  }
}

/* The rotation of in into out, or (backward) its transpose added to out, over the B * T
 * rows of H * hd elements, row (b, t) by the table's row t. */
static void rope_rows(struct tensor out, struct tensor in, struct tensor table, int B, int T, int H, int hd,
                      int backward) {
  size_t width = (size_t)H * hd;
#pragma omp parallel
  {
    float *buf = span_scratch(in.dtype, 2 * width + (size_t)hd);
#pragma omp for
    for (int bt = 0; bt < B * T; bt++) {
      size_t row = (size_t)bt * width;
      const float *cs = span_in(table, (size_t)(bt % T) * hd, (size_t)hd, buf);
      const float *x = span_in(in, row, width, scratch_at(buf, (size_t)hd));
      float *o = scratch_at(buf, (size_t)hd + width);
      if (backward) {
        o = span_inout(out, row, width, o);
        rope_backward_row(o, x, cs, H, hd);
      } else {
        o = span_out(out, row, o);
        rope_row(o, x, cs, H, hd);
      }
      span_store(out, row, width, o);
    }
  }
}

void cpu_rope_table(void *p) {
  const struct rope_table_args *a = p;
  int maxT = dim(a->table, 0), hd = dim(a->table, 1);
  if (a->table.dtype == DTYPE_F32) {
    rope_table(f32(a->table), maxT, hd, &a->rope);
    return;
  }
  /* Built once per model: an fp32 table, then rounded once. */
  size_t n = (size_t)maxT * hd;
  float *table = fsdp_xmalloc(n * sizeof *table);
  rope_table(table, maxT, hd, &a->rope);
  span_store(a->table, 0, n, table);
  free(table);
}

void cpu_rope_forward(void *p) {
  const struct rope_args *a = p;
  rope_rows(a->out, a->inp, a->table, dim(a->inp, 0), dim(a->inp, 1), dim(a->inp, 2), dim(a->inp, 3), 0);
}

void cpu_rope_backward(void *p) {
  const struct rope_backward_args *a = p;
  rope_rows(a->dinp, a->dout, a->table, dim(a->dout, 0), dim(a->dout, 1), dim(a->dout, 2), dim(a->dout, 3), 1);
}

/* The elementwise ops' chunk loop (typed.h). */
#include "typed.h"

void elementwise(elementwise_body body, size_t n, int count, const struct elementwise_operand *operands) {
  FSDP_CHECK(count > 0 && count <= ELEMENTWISE_MAX_OPERANDS);
  enum dtype d = operands[0].t.dtype;
  size_t chunks = (n + SPAN_CHUNK - 1) / SPAN_CHUNK;
#pragma omp parallel for
  for (size_t c = 0; c < chunks; c++) {
    size_t first = c * SPAN_CHUNK, m = n - first < SPAN_CHUNK ? n - first : SPAN_CHUNK;
    float *buf = span_scratch(d, (size_t)count * SPAN_CHUNK);
    float *spans[ELEMENTWISE_MAX_OPERANDS];
    for (int k = 0; k < count; k++) {
      const struct elementwise_operand *o = &operands[k];
      float *own = scratch_at(buf, (size_t)k * SPAN_CHUNK);
      spans[k] = o->use == SPAN_WRITE ? span_out(o->t, first, own) : span_inout(o->t, first, m, own);
    }
    body(spans, (int)m);
    for (int k = 0; k < count; k++)
      if (operands[k].use != SPAN_READ) span_store(operands[k].t, first, m, spans[k]);
  }
}

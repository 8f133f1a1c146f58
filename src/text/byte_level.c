#include "byte_level.h"

/* The bytes that stand for themselves are '!' to '~' and Latin-1's printable range but
 * the soft hyphen; the other 68 run in three ranges: */
enum { LOW_LAST = 0x20, DEL = 0x7f, NBSP = 0xa0, SOFT_HYPHEN = 0xad, SHIFT = 0x100 };
enum { LOW_COUNT = LOW_LAST + 1, HIGH_COUNT = NBSP - DEL + 1 };

uint32_t byte_level_char(unsigned char b) {
  if (b <= LOW_LAST) return SHIFT + b;
  if (b >= DEL && b <= NBSP) return SHIFT + LOW_COUNT + (uint32_t)(b - DEL);
  if (b == SOFT_HYPHEN) return SHIFT + LOW_COUNT + HIGH_COUNT;
  return b;
}

/* The byte that code point c stands for, or -1. */
static int byte_of(uint32_t c) {
  if (c < SHIFT) return byte_level_char((unsigned char)c) == c ? (int)c : -1;
  uint32_t k = c - SHIFT;
  if (k < LOW_COUNT) return (int)k;
  if (k < LOW_COUNT + HIGH_COUNT) return DEL + (int)(k - LOW_COUNT);
  return k == LOW_COUNT + HIGH_COUNT ? SOFT_HYPHEN : -1;
}

/* The code point at *p (advanced past it), or 0xFFFFFFFF for a byte that starts no UTF-8
 * sequence of the alphabet's length: the alphabet's characters are 1 or 2 bytes long. */
static uint32_t next_code_point(const unsigned char **p) {
  const unsigned char *s = *p;
  if (s[0] < 0x80) {
    *p += 1;
    return s[0];
  }
  if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
    *p += 2;
    return (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
  }
  return 0xFFFFFFFFu;
}

long byte_level_decode(const char *text, unsigned char *out, uint32_t *bad) {
  long n = 0;
  for (const unsigned char *p = (const unsigned char *)text; *p;) {
    uint32_t c = next_code_point(&p);
    int b = c == 0xFFFFFFFFu ? -1 : byte_of(c);
    if (b < 0) {
      *bad = c;
      return -1;
    }
    out[n++] = (unsigned char)b;
  }
  return n;
}

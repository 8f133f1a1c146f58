#include "fsdp/crc32c.h"

#include <pthread.h>
#include <string.h>

/* The reflected Castagnoli polynomial. */
static const uint32_t POLY = 0x82f63b78u;

/* Slicing by 8: table[k][b] is the CRC of byte b followed by k zero bytes, so that
 * eight bytes are folded in with eight lookups instead of eight rounds of shifts. */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
    table[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; b++)
    for (int k = 1; k < 8; k++) table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t bytes) {
  pthread_once(&table_once, build_table);
  const unsigned char *p = data;
  uint32_t c = ~crc;
  for (; bytes && ((uintptr_t)p & 7); bytes--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  /* Little-endian words: the byte order every supported host (x86-64, arm64) has. */
  for (; bytes >= 8; bytes -= 8, p += 8) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
    w ^= c;
    c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
        table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
  }
  for (; bytes; bytes--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

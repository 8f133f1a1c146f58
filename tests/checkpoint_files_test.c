/* The file layer of checkpoints: CRC-32C against its published check value and in
 * pieces at every alignment; durable writes (the bytes, their CRC, no temporary file
 * left, a failure reported naming the file instead of ending the process); the CRC of a
 * file read back; and a write on a background thread. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fsdp/background_write.h"
#include "fsdp/crc32c.h"
#include "fsdp/durable_file.h"
#include "temp_files.h"

/* One bit at a time, straight from the definition: the reference for the sliced version. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

static void test_crc32c(void) {
  EXPECT(crc32c_update(0, "123456789", 9) == 0xe3069283u, "got %08x", crc32c_update(0, "123456789", 9));
  EXPECT(crc32c_update(0, "", 0) == 0, "the CRC of nothing");
  enum { N = 1000 };
  unsigned char buffer[N + 8];
  for (int i = 0; i < N + 8; i++) buffer[i] = (unsigned char)(i * 131 + 7);
  for (int align = 0; align < 8; align++)
    for (size_t n = 0; n < 70; n += 3) {
      const unsigned char *p = buffer + align;
      uint32_t whole = crc32c_update(0, p, n * 13 % N);
      EXPECT(whole == crc32c_bitwise(p, n * 13 % N), "align %d, %zu bytes", align, n * 13 % N);
      size_t cut = n * 7 % (n * 13 % N + 1);
      uint32_t pieces = crc32c_update(crc32c_update(0, p, cut), p + cut, n * 13 % N - cut);
      EXPECT(pieces == whole, "align %d, cut at %zu", align, cut);
    }
}

static void test_durable_write(void) {
  enum { N = 3 << 20 };
  unsigned char *data = malloc(N);
  for (int i = 0; i < N; i++) data[i] = (unsigned char)(i ^ (i >> 8));
  const char *path = temp_file_path("shard.bin");
  temp_file_path("shard.bin.tmp"); /* removed at the end if it were left */
  uint32_t crc = 0;
  char why[512] = "";
  EXPECT(durable_write(path, data, N, &crc, why, sizeof why) == 0, "%s", why);
  EXPECT(crc == crc32c_update(0, data, N), "crc %08x", crc);
  size_t bytes = 0;
  uint32_t read_back = 0;
  EXPECT(file_crc32c(path, &bytes, &read_back, why, sizeof why) == 0, "%s", why);
  EXPECT(bytes == N && read_back == crc, "%zu bytes, crc %08x", bytes, read_back);
  struct stat st;
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  EXPECT(stat(tmp, &st) != 0, "%s was left behind", tmp);

  const char *nowhere = temp_file_path("no/such/dir/shard.bin");
  EXPECT(durable_write(nowhere, data, 10, &crc, why, sizeof why) == -1, "writing into a missing directory");
  EXPECT(strstr(why, "no/such/dir/shard.bin.tmp") != NULL, "the reason names the file: %s", why);
  EXPECT(file_crc32c(nowhere, &bytes, &read_back, why, sizeof why) == -1 && strstr(why, "no/such/dir/shard.bin"),
         "reading a missing file: %s", why);

  const char *background = temp_file_path("background.bin");
  struct background_write *w = background_write_start(background, data, N);
  uint32_t bg_crc = 0;
  EXPECT(background_write_finish(w, &bg_crc, why, sizeof why) == 0, "%s", why);
  EXPECT(bg_crc == crc, "background crc %08x", bg_crc);
  w = background_write_start(nowhere, data, 10);
  while (!background_write_done(w)) {
  }
  EXPECT(background_write_finish(w, &bg_crc, why, sizeof why) == -1 && strstr(why, "no/such/dir"),
         "a failed background write: %s", why);
  free(data);
}

int main(void) {
  temp_files_init("checkpoint_files_test");
  test_crc32c();
  test_durable_write();
  temp_files_remove();
  return check_summary("checkpoint_files_test");
}

/* CRC-32C (Castagnoli), the checksum of checkpoint files: it is computed piece by
 * piece while a file is written, so that checking it later costs one read. */
#ifndef FSDP_CRC32C_H
#define FSDP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of the bytes so far (0 for none) extended by data: crc32c_update(0, "123456789", 9)
 * is 0xe3069283, and crc32c_update(crc32c_update(0, a), b) is the CRC of a then b. */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t bytes);

#endif

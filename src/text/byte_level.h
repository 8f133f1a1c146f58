/* Private to src/text: the byte-level alphabet of GPT-2's BPE. Each of the 256 bytes is
 * written as one printable character in a tokenizer.json's vocab and merges: the bytes
 * that are printable Latin-1 as themselves, the others (controls, space, 0x7f-0xa0,
 * 0xad) as U+0100 onwards in byte order, so that 0x20 is 'Ġ' (U+0120). */
#ifndef FSDP_TEXT_BYTE_LEVEL_H
#define FSDP_TEXT_BYTE_LEVEL_H

#include <stddef.h>
#include <stdint.h>

/* The character that stands for byte b. */
uint32_t byte_level_char(unsigned char b);
/* The bytes a vocab entry (UTF-8, NUL-terminated) stands for, into out (room for
 * strlen(text) bytes); returns their count, or -1 when text holds a character outside
 * the alphabet (its code point in *bad, or 0xFFFFFFFF for bytes that are not UTF-8). */
long byte_level_decode(const char *text, unsigned char *out, uint32_t *bad);

#endif

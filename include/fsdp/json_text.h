/* Checks of JSON text before cJSON parses it. */
#ifndef FSDP_JSON_TEXT_H
#define FSDP_JSON_TEXT_H

#include <stddef.h>

/* Where the text escapes a NUL (\u0000, its backslash not itself escaped), which cJSON
 * decodes into a C string that ends there; -1 if nowhere. */
long json_nul_escape(const char *text, size_t length);
/* Where the text escapes a lone UTF-16 surrogate (a \uD800-\uDBFF not followed by a
 * \uDC00-\uDFFF, or the latter alone): JSON's grammar allows it, but no UTF-8 text can
 * hold it, and cJSON refuses the whole text; -1 if nowhere. */
long json_lone_surrogate(const char *text, size_t length);

#endif

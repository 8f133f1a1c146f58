/* Private to src/fsdp: what fsdp_model_free needs of wrap.c. */
#ifndef FSDP_WRAP_H
#define FSDP_WRAP_H

#include "fsdp/runtime.h"

/* Frees the modules, their names and the uses. */
void fsdp_model_free_modules(struct fsdp_model *m);

#endif

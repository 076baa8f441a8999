/* One flat backend allocation per memory category, carved by a layout
 * function run twice: once to measure (base NULL), once to hand out
 * pointers. The accounting is therefore exact: a category's peak is the size
 * of its one allocation. */
#ifndef AMP_ARENA_H
#define AMP_ARENA_H

#include <stddef.h>

#include "backend.h"

typedef enum amp_mem_category {
    AMP_MEM_MASTER = 0,  /* FP32 master weights */
    AMP_MEM_WORKING,     /* 16-bit working copies of the weights */
    AMP_MEM_GRADS,       /* FP32 gradients */
    AMP_MEM_OPTIM,       /* optimizer state (momentum, Adam moments) */
    AMP_MEM_ACTIVATIONS, /* stored activations and the input batch */
    AMP_MEM_WORKSPACE,   /* FP32 scratch, operand conversions, the step stats record */
    AMP_MEM_COUNT
} amp_mem_category;

extern const char *const amp_mem_category_names[AMP_MEM_COUNT];

typedef struct amp_arena {
    char *base;  /* NULL while measuring */
    size_t size; /* bytes allocated (after commit) */
    size_t used;
} amp_arena;

/* Next `bytes` (256-byte aligned); NULL while measuring or for 0 bytes. */
void *amp_arena_take(amp_arena *a, size_t bytes);
/* Allocates `used` bytes from the backend and rewinds for the second pass. */
int amp_arena_commit(amp_arena *a, amp_backend *be);
void amp_arena_release(amp_arena *a, amp_backend *be);

#endif

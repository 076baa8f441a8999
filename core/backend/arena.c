#include "arena.h"

const char *const amp_mem_category_names[AMP_MEM_COUNT] = {
    "master_params", "working_params", "grads", "optimizer_state", "activations", "workspace"};

#define AMP_ARENA_ALIGN 256

void *amp_arena_take(amp_arena *a, size_t bytes) {
    if (bytes == 0) return NULL;
    size_t off = a->used;
    a->used += (bytes + AMP_ARENA_ALIGN - 1) / AMP_ARENA_ALIGN * AMP_ARENA_ALIGN;
    return a->base ? a->base + off : NULL;
}

int amp_arena_commit(amp_arena *a, amp_backend *be) {
    a->size = a->used;
    a->used = 0;
    if (a->size == 0) return 0;
    a->base = be->ops->alloc(be, a->size);
    return a->base ? 0 : -1;
}

void amp_arena_release(amp_arena *a, amp_backend *be) {
    if (a->base) be->ops->release(be, a->base);
    a->base = NULL;
    a->size = a->used = 0;
}

/* Shared between the CPU backend's files: the widening scratch and the
 * transformer ops (cpu_transformer.c), whose signatures are those of
 * amp_backend_ops. */
#ifndef AMP_CPU_INTERNAL_H
#define AMP_CPU_INTERNAL_H

#include "backend/backend.h"

/* Slots 0-1 belong to gemm; the transformer ops use 2-4. */
#define AMP_CPU_SCRATCH_SLOTS 5

/* src as FP32: src itself for F32, else its exact widening into the
 * backend's scratch slot `slot` (valid until that slot is used again).
 * NULL with be->err when out of memory. */
const float *amp_cpu_widened(amp_backend *be, int slot, const void *src, amp_dtype dt, size_t n);
/* Scratch slot `slot` as at least n floats (contents undefined); NULL with
 * be->err when out of memory. Counted in be->info.scratch_bytes. */
float *amp_cpu_scratch(amp_backend *be, int slot, size_t n);

/* The element-wise kernel table of the backend's ISA path (cpu_kern.h), for
 * the ops outside backend_cpu.c (the transformer and CNN ops). */
struct amp_cpu_kern;
const struct amp_cpu_kern *amp_cpu_kern_of(amp_backend *be);

int amp_cpu_embed_forward(amp_backend *be, float *out, const float *wte, const float *wpe,
                          const int32_t *tokens, int B, int T, int C);
int amp_cpu_embed_backward(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                           const int32_t *tokens, int B, int T, int C);
int amp_cpu_layernorm_forward(amp_backend *be, void *out, amp_dtype out_dt, float *mean,
                              float *rstd, const float *x, const float *w, const float *b,
                              int rows, int C, float eps, amp_round_count *cnt);
int amp_cpu_layernorm_backward(amp_backend *be, float *dx, float *dw, float *db,
                               const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, int rows, int C);
int amp_cpu_attention_forward(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                              amp_dtype dt, int B, int T, int C, int nh, amp_round_count *cnt);
int amp_cpu_attention_backward(amp_backend *be, void *dqkv, float *ws, const void *dout,
                               const void *qkv, const void *att, amp_dtype dt, int B, int T,
                               int C, int nh, amp_round_count *cnt);
int amp_cpu_residual_add(amp_backend *be, float *out, const float *x, const void *d, amp_dtype dt,
                         size_t n);

#endif

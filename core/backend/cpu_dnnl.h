/* GEMMs through oneDNN's matmul primitive (Debian libdnnl-dev), used by the
 * CPU backend when the build found oneDNN (AMP_HAVE_DNNL). FP32 x FP32 and
 * BF16 x BF16 inputs, FP32 output and accumulation. oneDNN is capped to the
 * backend's instruction-set path, so an avx2 run on an AVX-512 machine runs
 * oneDNN's AVX2 kernels. Primitives are cached by shape; the scratchpad is
 * ours (user mode) so its size is known and reported. */
#ifndef AMP_CPU_DNNL_H
#define AMP_CPU_DNNL_H

#include <stddef.h>

#include "backend/cpu_isa.h"
#include "amptrain/plugin.h"

typedef struct amp_dnnl amp_dnnl;

/* 1 when built with oneDNN. */
int amp_dnnl_available(void);
/* Caps oneDNN at isa (once per process: oneDNN fixes its ISA at the first
 * primitive, so a second call with another path fails) and makes a context.
 * NULL and err on failure. */
amp_dnnl *amp_dnnl_create(amp_isa isa, char *err, size_t errlen);
void amp_dnnl_destroy(amp_dnnl *d);
/* c[m,n] = alpha * op(a) op(b) + beta * c, row-major, dt F32 or BF16. On
 * success *impl names the kernel oneDNN chose (static string). 0 or -1. */
int amp_dnnl_gemm(amp_dnnl *d, float *c, const void *a, const void *b, amp_dtype dt, int trans_a,
                  int trans_b, int m, int n, int k, int lda, int ldb, int ldc, float alpha,
                  float beta, const char **impl, char *err, size_t errlen);
/* The same for `batch` matrices of each operand, sa, sb and sc elements
 * apart (one oneDNN call; batch 1 is amp_dnnl_gemm). */
int amp_dnnl_gemm_batched(amp_dnnl *d, float *c, const void *a, const void *b, amp_dtype dt,
                          int trans_a, int trans_b, int m, int n, int k, int lda, int ldb, int ldc,
                          int batch, long long sa, long long sb, long long sc, float alpha,
                          float beta, const char **impl, char *err, size_t errlen);
/* Peak scratchpad bytes so far. */
size_t amp_dnnl_scratch_bytes(const amp_dnnl *d);
/* oneDNN's version as "2.6.3". */
const char *amp_dnnl_version(void);

#endif

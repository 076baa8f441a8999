/* GEMMs through oneDNN's matmul primitive (Debian libdnnl-dev), used by the
 * CPU backend when the build found oneDNN (AMP_HAVE_DNNL). FP32 x FP32 and
 * BF16 x BF16 inputs, FP32 output and accumulation. oneDNN is capped to the
 * backend's instruction-set path, so an avx2 run on an AVX-512 machine runs
 * oneDNN's AVX2 kernels. Primitives are cached by shape; the scratchpad is
 * ours (user mode) so its size is known and reported. F16 x F16 runs where
 * the path has a kernel for it (amp_dnnl_native). */
#ifndef AMP_CPU_DNNL_H
#define AMP_CPU_DNNL_H

#include <stddef.h>

#include "amptrain/plugin.h"
#include "backend/backend.h"
#include "backend/cpu_isa.h"

typedef struct amp_dnnl amp_dnnl;

/* 1 when built with oneDNN. */
int amp_dnnl_available(void);
/* Caps oneDNN at isa (once per process: oneDNN fixes its ISA at the first
 * primitive, so a second call with another path fails) and makes a context.
 * NULL and err on failure. */
amp_dnnl *amp_dnnl_create(amp_isa isa, char *err, size_t errlen);
void amp_dnnl_destroy(amp_dnnl *d);
/* The operands of one oneDNN call for the shape of an amp_gemm_desc: c, a
 * and b (dt F32 or BF16; may differ from the descriptor's in_dtype when the
 * caller widened them) and how many of the descriptor's batch matrices, at
 * its strides, the call covers (1: a 2-D matmul). */
typedef struct amp_dnnl_operands {
    float *c;
    const void *a, *b;
    amp_dtype dt; /* F32, BF16 or F16 */
    int batch;
} amp_dnnl_operands;

/* c = alpha * op(a) op(b) + beta * c, row-major, with g's transposes,
 * sizes, leading dimensions, strides, alpha and beta (g's pointers and
 * dtypes are not read). On success *impl names the kernel oneDNN chose
 * (static string). 0 or -1. */
int amp_dnnl_gemm(amp_dnnl *d, const amp_gemm_desc *g, const amp_dnnl_operands *o,
                  const char **impl, char *err, size_t errlen);
/* 1 when oneDNN, capped at this context's path, has a kernel for dt x dt ->
 * f32 matmul (bf16 or f16) that is not its reference loops; its name into
 * impl. 0 otherwise. */
int amp_dnnl_native(amp_dnnl *d, amp_dtype dt, char *impl, size_t len);
/* Peak scratchpad bytes so far. */
size_t amp_dnnl_scratch_bytes(const amp_dnnl *d);
/* oneDNN's version as "2.6.3". */
const char *amp_dnnl_version(void);

#endif

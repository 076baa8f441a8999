/* Shared between the CPU backend's files: adding up rounding counts, the
 * widening scratch and the transformer family's table (cpu_transformer.c). */
#ifndef AMP_CPU_INTERNAL_H
#define AMP_CPU_INTERNAL_H

#include "backend/backend.h"
#include "backend/cpu_isa.h"

/* Adds a kernel's rounding tallies into a layer's counts (cnt may be NULL:
 * nothing counted). */
static inline void amp_cpu_count_add(amp_round_count *cnt, unsigned long long nz,
                                     unsigned long long uf, unsigned long long of) {
    if (!cnt) return;
    cnt->nonzero += nz;
    cnt->underflow += uf;
    cnt->overflow += of;
}

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

/* The FP8 kernel table of the backend's ISA path (cpu_fp8.h). */
struct amp_cpu_fp8;
const struct amp_cpu_fp8 *amp_cpu_fp8_of(amp_backend *be);

/* The scaled family (cpu_scaled.c). */
extern const amp_scaled_ops amp_cpu_scaled_ops;
/* cpu_nvfp4.c: the family's nvfp4_* ops (the path's kernels: cpu_fp8.h) */
int amp_cpu_nvfp4_quantize(amp_backend *be, uint8_t *codes, uint8_t *scales, float *s_dec,
                           const float *x, const amp_nvfp4_desc *d, amp_fp8_stats *st,
                           amp_nvfp4_stats *nv);
int amp_cpu_nvfp4_dequantize(amp_backend *be, float *x, const uint8_t *codes,
                             const uint8_t *scales, float s_dec, const amp_nvfp4_desc *d);
int amp_cpu_nvfp4_qdq(amp_backend *be, float *y, const float *x, const amp_nvfp4_desc *d,
                      float *s_enc_host, amp_fp8_stats *st, amp_nvfp4_stats *nv);

/* be->info.scratch_bytes: the peak of the GEMM library's scratchpad and
 * the scratch slots. */
void amp_cpu_note_scratch(amp_backend *be);

/* The GEMM side (cpu_gemm.c): the library and operand width of each GEMM
 * shape, pinned or measured (cpu_gemm_tune.h). It widens operands in the
 * backend's scratch through `host`, so it depends on no backend file. */
typedef struct amp_cpu_gemm amp_cpu_gemm;
typedef struct amp_cpu_gemm_host {
    const float *(*widened)(amp_backend *be, int slot, const void *src, amp_dtype dt, size_t n);
    void (*note_scratch)(amp_backend *be);
} amp_cpu_gemm_host;
/* Reads AMPTRAIN_GEMM and AMPTRAIN_GEMM_PATH, caps oneDNN at isa, probes
 * its native 16-bit kernels and gives OpenBLAS its threads (`threads`, or
 * 1 where it is a candidate beside oneDNN). NULL with err. */
amp_cpu_gemm *amp_cpu_gemm_create(amp_isa isa, int threads, const amp_cpu_gemm_host *host,
                                  char *err, size_t errlen);
void amp_cpu_gemm_destroy(amp_cpu_gemm *g);
/* be->info's GEMM fields from the settings read at creation (a native pin
 * the CPU cannot run is an error). 0 or -1. */
int amp_cpu_gemm_configure(amp_backend *be, amp_cpu_gemm *g, char *err, size_t errlen);
/* amp_backend_gemm_path and amp_backend_gemm_preload for the CPU backend. */
int amp_cpu_gemm_set_path(amp_backend *be, amp_cpu_gemm *g, amp_gemm_path path, const char *what,
                          char *err, size_t errlen);
int amp_cpu_gemm_preload(amp_backend *be, amp_cpu_gemm *g, const char *key, const char *path,
                         char *err, size_t errlen);
/* d's matrices into d->acc (no epilogue) on the shape's path. 0, or 1 with be->err. */
int amp_cpu_gemm_run(amp_backend *be, amp_cpu_gemm *g, const amp_gemm_desc *d);
/* The GEMM library's scratchpad bytes at their peak. */
size_t amp_cpu_gemm_scratch_bytes(const amp_cpu_gemm *g);

/* The transformer family (cpu_transformer.c). */
extern const amp_transformer_ops amp_cpu_transformer_ops;

#endif

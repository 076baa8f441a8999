/* Which x86 instruction-set path the CPU backend runs, chosen once at
 * start-up from CPUID (and the OS's XSAVE state), overridable with
 * AMPTRAIN_ISA for testing a lower path on a bigger machine.
 *
 * The paths, each a superset of the one before:
 *   generic      plain C (compiled for the x86-64 baseline or any other CPU)
 *   avx2         AVX2 + FMA + F16C element-wise kernels
 *   avx512       AVX-512 F/BW/VL/DQ element-wise kernels
 *   avx512_bf16  avx512 plus AVX512_BF16: bf16 GEMMs may run natively
 * The GEMM library is capped to the same path (oneDNN's max ISA), so an
 * avx2 run on an AVX-512 machine runs what an AVX2 machine would. */
#ifndef AMP_CPU_ISA_H
#define AMP_CPU_ISA_H

#include <stddef.h>

typedef enum amp_isa {
    AMP_ISA_GENERIC = 0,
    AMP_ISA_AVX2 = 1,
    AMP_ISA_AVX512 = 2,
    AMP_ISA_AVX512_BF16 = 3,
    AMP_ISA_COUNT
} amp_isa;

/* "generic", "avx2", "avx512", "avx512_bf16". */
const char *amp_isa_name(amp_isa isa);
/* The names of the paths, by amp_isa, NULL-terminated (AMPTRAIN_ISA's choices). */
extern const char *const amp_isa_names[AMP_ISA_COUNT + 1];
/* The best path this CPU and OS support (CPUID + XGETBV). */
amp_isa amp_isa_detect(void);
/* The CPU's relevant features as text ("avx2 fma f16c avx512f ..."). */
void amp_isa_features(char *out, size_t len);
/* The CPU's vendor, family, model, stepping and brand string, as text: what
 * makes a measured GEMM choice valid on another machine (cpu_gemm_tune.h). */
void amp_isa_cpu_model(char *out, size_t len);
/* The path to run: AMPTRAIN_ISA when set (an unknown name, or a path this
 * CPU lacks, is an error naming both), else amp_isa_detect(). 0 or -1. */
int amp_isa_select(amp_isa *out, char *err, size_t errlen);

#endif

/* The generic path's FP8 kernels: plain C for the compiler's baseline target. */
#define AMPF_NAME(x) x##_generic
#define AMPF_ISA AMP_ISA_GENERIC
#include "backend/cpu_fp8_body.h"

const amp_cpu_fp8 *amp_cpu_fp8_generic(void) { return &fp8_table_generic; }

const amp_cpu_fp8 *amp_cpu_fp8_for(amp_isa isa) {
    switch (isa) {
    case AMP_ISA_GENERIC: return amp_cpu_fp8_generic();
    case AMP_ISA_AVX2: return amp_cpu_fp8_avx2();
    case AMP_ISA_AVX512:
    case AMP_ISA_AVX512_BF16: return amp_cpu_fp8_avx512();
    default: return NULL;
    }
}

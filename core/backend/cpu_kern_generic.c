/* The generic path's kernels: plain C for the compiler's baseline target. */
#define AMPK_NAME(x) x##_generic
#define AMPK_ISA AMP_ISA_GENERIC
#include "backend/cpu_kern_body.h"

const amp_cpu_kern *amp_cpu_kern_generic(void) { return &table_generic; }

const amp_cpu_kern *amp_cpu_kern_for(amp_isa isa) {
    switch (isa) {
    case AMP_ISA_GENERIC: return amp_cpu_kern_generic();
    case AMP_ISA_AVX2: return amp_cpu_kern_avx2();
    case AMP_ISA_AVX512:
    case AMP_ISA_AVX512_BF16: return amp_cpu_kern_avx512();
    default: return NULL;
    }
}

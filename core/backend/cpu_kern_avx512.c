/* The avx512 path's kernels (built with -mavx512f -mavx512bw -mavx512vl
 * -mavx512dq plus the avx2 flags, see core/CMakeLists.txt). Without those
 * flags the table is NULL and selecting the path is an error. */
#include "backend/cpu_kern.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__) && defined(__F16C__)
#define AMPK_NAME(x) x##_avx512
#define AMPK_ISA AMP_ISA_AVX512
#include "backend/cpu_kern_body.h"

const amp_cpu_kern *amp_cpu_kern_avx512(void) { return &table_avx512; }
#else
const amp_cpu_kern *amp_cpu_kern_avx512(void) { return NULL; }
#endif

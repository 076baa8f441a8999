/* The avx2 path's FP8 kernels (built with the avx2 flags, see
 * core/CMakeLists.txt); without them the table is NULL. */
#include "backend/cpu_fp8.h"

#if defined(__AVX2__)
#define AMPF_NAME(x) x##_avx2
#define AMPF_ISA AMP_ISA_AVX2
#include "backend/cpu_fp8_body.h"

const amp_cpu_fp8 *amp_cpu_fp8_avx2(void) { return &fp8_table_avx2; }
#else
const amp_cpu_fp8 *amp_cpu_fp8_avx2(void) { return NULL; }
#endif

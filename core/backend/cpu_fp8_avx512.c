/* The avx512 path's FP8 kernels (built with the avx512 flags, see
 * core/CMakeLists.txt); without them the table is NULL. */
#include "backend/cpu_fp8.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define AMPF_NAME(x) x##_avx512
#define AMPF_ISA AMP_ISA_AVX512
#include "backend/cpu_fp8_body.h"

const amp_cpu_fp8 *amp_cpu_fp8_avx512(void) { return &fp8_table_avx512; }
#else
const amp_cpu_fp8 *amp_cpu_fp8_avx512(void) { return NULL; }
#endif

/* The avx2 path's kernels (built with -mavx2 -mfma -mf16c, see
 * core/CMakeLists.txt). A build without those flags (the fuzz build) has no
 * avx2 path: the table is NULL and selecting it is an error. */
#include "backend/cpu_kern.h"

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#define AMPK_NAME(x) x##_avx2
#define AMPK_ISA AMP_ISA_AVX2
#include "backend/cpu_kern_body.h"

const amp_cpu_kern *amp_cpu_kern_avx2(void) { return &table_avx2; }
#else
const amp_cpu_kern *amp_cpu_kern_avx2(void) { return NULL; }
#endif

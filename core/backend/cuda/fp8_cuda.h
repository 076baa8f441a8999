/* The FP8 quantize-with-amax on a CUDA device (fp8_cuda.cu): the same
 * per-element code as the CPU kernels (backend/kernels/fp8.h). Not yet an op
 * of the backend table; the FP8 plugins will reach it through the plugin ABI. */
#ifndef AMP_CUDA_FP8_H
#define AMP_CUDA_FP8_H

#include <stddef.h>
#include <stdint.h>

#include "backend/kernels/fp8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* q[n] = cast(clamp(x * scale)) in fmt, q and x device pointers; *st (host)
 * gets the pass's amax and counts, as amp_cpu_fp8's quantize with st zeroed.
 * Waits for the result. 0, or 1 with "file:line: call: CUDA error" in err. */
int amp_cuda_fp8_quantize(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                          amp_fp8_stats *st, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif

/* The CPU backend's NVFP4 ops (the "scaled" family's nvfp4_*): the
 * descriptor checked, then the ISA path's kernels (cpu_fp8.h, written in
 * cpu_nvfp4_body.h). */
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu_fp8.h"
#include "backend/cpu_internal.h"

/* The tensor scale handed back to the host: a device downloads it (none
 * for an empty tensor, whose scale is 1), so it counts as a round trip. */
static void cpu_nv_round_trip(amp_backend *be, const amp_nvfp4_desc *d) {
    if (d->rows > 0 && d->cols > 0) be->host_round_trips++;
}

int amp_cpu_nvfp4_quantize(amp_backend *be, uint8_t *codes, uint8_t *scales, float *s_dec,
                           const float *x, const amp_nvfp4_desc *d, amp_fp8_stats *st,
                           amp_nvfp4_stats *nv) {
    if (amp_nvfp4_desc_check(be, d, "nvfp4_quantize")) return 1;
    amp_cpu_fp8_of(be)->nvfp4_quantize(codes, scales, s_dec, x, d, st, nv);
    cpu_nv_round_trip(be, d);
    return 0;
}

int amp_cpu_nvfp4_dequantize(amp_backend *be, float *x, const uint8_t *codes,
                             const uint8_t *scales, float s_dec, const amp_nvfp4_desc *d) {
    if (amp_nvfp4_desc_check(be, d, "nvfp4_dequantize")) return 1;
    amp_cpu_fp8_of(be)->nvfp4_dequantize(x, codes, scales, s_dec, d);
    return 0;
}

int amp_cpu_nvfp4_qdq(amp_backend *be, float *y, const float *x, const amp_nvfp4_desc *d,
                      float *s_enc_host, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    if (amp_nvfp4_desc_check(be, d, "nvfp4_qdq")) return 1;
    amp_cpu_fp8_of(be)->nvfp4_qdq(y, x, d, s_enc_host, st, nv);
    if (s_enc_host) cpu_nv_round_trip(be, d);
    return 0;
}

/* The GEMM epilogue per element (amp_gemm_desc): bias add, rounding into
 * the output dtype with telemetry, activation of the rounded value rounded
 * again. Written as the separate ops compose, so a fused pass gives the
 * same bits as add_bias + round + widen + act_forward + round. */
#ifndef AMP_KERNELS_EPILOGUE_H
#define AMP_KERNELS_EPILOGUE_H

#include <stdint.h>

#include "backend/kernels/act.h"
#include "backend/kernels/amp_hd.h"
#include "backend/kernels/convert.h"

/* Stores v (after the bias) into out[i] in dtype dt and returns the value
 * the activation sees (the stored value widened). flags gets the rounding
 * flags (0 for F32). */
static inline AMP_HD float amp_epilogue_store(void *out, size_t i, float v, int dt,
                                              unsigned *flags) {
    *flags = 0;
    if (dt == AMP_DTYPE_F32) {
        ((float *)out)[i] = v;
        return v;
    }
    uint16_t r = amp_round16(v, dt, flags);
    ((uint16_t *)out)[i] = r;
    return amp_widen16(r, dt);
}

/* The bias element in FP32. */
static inline AMP_HD float amp_epilogue_bias(const void *bias, int col, int dt) {
    return dt == AMP_DTYPE_F32 ? ((const float *)bias)[col]
                               : amp_widen16(((const uint16_t *)bias)[col], dt);
}

#endif

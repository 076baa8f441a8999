/* Storing a value rounded into a dtype, with the rounding telemetry, for the
 * row functions shared by the CPU loops and the CUDA kernels (the GPT ops:
 * layernorm, attention, embedding). Each caller keeps one amp_round_tally per
 * thread and adds it to an amp_round_count once. */
#ifndef AMP_KERNELS_STORE_H
#define AMP_KERNELS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/convert.h"

typedef struct amp_round_tally {
    unsigned long long nz, uf, of;
} amp_round_tally;

static inline AMP_HD void amp_round_tally_add(amp_round_tally *t, unsigned f) {
    t->nz += f & AMP_RF_NONZERO;
    t->uf += (f & AMP_RF_UNDERFLOW) != 0;
    t->of += (f & AMP_RF_OVERFLOW) != 0;
}

/* Rounds v into dt and stores it at element i of dst: as the dt value
 * (uint16_t for F16/BF16, float for F32), or, with wide != 0, as its exact
 * FP32 widening in a float array (what the CPU's FP32 GEMMs read). Counts
 * what the rounding lost into *t (F32 counts nothing). Returns the stored
 * value as FP32. */
static inline AMP_HD float amp_store(void *dst, size_t i, int dt, int wide, float v,
                                     amp_round_tally *t) {
    if (dt == AMP_DTYPE_F32) {
        ((float *)dst)[i] = v;
        return v;
    }
    unsigned f = 0;
    uint16_t r = amp_round16(v, dt, &f);
    amp_round_tally_add(t, f);
    float q = amp_widen16(r, dt);
    if (wide)
        ((float *)dst)[i] = q;
    else
        ((uint16_t *)dst)[i] = r;
    return q;
}

/* Element i of a dt array as FP32 (exact). */
static inline AMP_HD float amp_load(const void *src, size_t i, int dt) {
    return dt == AMP_DTYPE_F32 ? ((const float *)src)[i] : amp_widen16(((const uint16_t *)src)[i], dt);
}

#endif

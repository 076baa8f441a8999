/* The E2M1 element cast of core/backend/kernels/nvfp4.h against its
 * definition computed independently in double: the nearest of the values
 * 0, 0.5, 1, 1.5, 2, 3, 4, 6 to clamp(x, -6, 6), a tie going to the even
 * code, the sign kept (NaN: +0). Inputs: every FP32 exponent with random
 * mantissas, the exact midpoints between neighbouring codes and their FP32
 * neighbours, +-0, +-inf, NaN; and every code decodes to its value. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/kernels/nvfp4.h"

static const double vals[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

static uint8_t definition(float f) {
    if (isnan(f)) return 0;
    double a = fabs((double)f);
    if (a > 6) a = 6;
    int best = 0;
    for (int k = 1; k < 8; k++) {
        double d = fabs(a - vals[k]), db = fabs(a - vals[best]);
        if (d < db || (d == db && (k & 1) == 0)) best = k;
    }
    return (uint8_t)((signbit(f) ? 8 : 0) | best);
}

static unsigned long long bad, n;

static void check(float f) {
    uint8_t got = amp_float_to_e2m1(f), want = definition(f);
    n++;
    if (got != want && bad++ < 8)
        fprintf(stderr, "MISMATCH e2m1 of 0x%08x (%.9g): 0x%x, definition 0x%x\n",
                amp_f32_bits(f), (double)f, got, want);
}

int main(void) {
    uint32_t s = 1;
    for (uint32_t e = 0; e < 256; e++)
        for (int k = 0; k < 2000; k++) {
            s = s * 1664525u + 1013904223u;
            check(amp_f32_from_bits((e << 23) | (s >> 9) | (s & 0x80000000u)));
        }
    for (int k = 0; k < 7; k++) {
        float mid = (float)((vals[k] + vals[k + 1]) / 2);
        uint32_t b = amp_f32_bits(mid);
        for (uint32_t d = 0; d < 3; d++) {
            check(amp_f32_from_bits(b + d - 1));
            check(-amp_f32_from_bits(b + d - 1));
        }
    }
    const uint32_t specials[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 1};
    for (unsigned i = 0; i < sizeof specials / sizeof *specials; i++) check(amp_f32_from_bits(specials[i]));
    for (int c = 0; c < 16; c++) {
        double want = (c & 8 ? -1 : 1) * vals[c & 7];
        if ((double)amp_e2m1_to_float((uint8_t)c) != want && bad++ < 8)
            fprintf(stderr, "MISMATCH decode of code 0x%x\n", c);
    }
    printf("%llu casts, 16 decodes: %llu mismatches\n", n, bad);
    return bad ? 1 : 0;
}

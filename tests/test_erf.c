/* amptrain's own erf (core/backend/kernels/act.h) against double-precision
 * erf: every 11th float in [0, 4.5] and every float around the switch of
 * its two pieces (1) and its clamp (4), in ulps of the correctly rounded
 * result; odd symmetry, the specials, and the GELU built on it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/kernels/act.h"
#include "backend/kernels/convert.h"
#include "expect.h"

#define ERF_MAX_ULP 1.5 /* measured: 1.32 over every float below 4.5 */

/* |got - want| in units of the last place of the float nearest want */
static double ulps(float got, double want) {
    double a = fabs(want);
    double ulp = a < 0x1p-126 ? 0x1p-149 : ldexp(1.0, ilogb((float)a) - 23);
    return fabs((double)got - want) / ulp;
}

static double worst = 0.0;
static float worst_at = 0.0f;
static void sweep(uint32_t lo, uint32_t hi, uint32_t step) {
    for (uint64_t u = lo; u <= hi; u += step) {
        float x = amp_f32_from_bits((uint32_t)u);
        double e = ulps(amp_erf(x), erf((double)x));
        if (e > worst) worst = e, worst_at = x;
        if (amp_f32_bits(amp_erf(-x)) != (amp_f32_bits(amp_erf(x)) ^ 0x80000000u)) {
            EXPECT(0, "erf(-%a) is not -erf(%a)", x, x);
            return;
        }
    }
}

int main(void) {
    sweep(0, amp_f32_bits(4.5f), 11);
    sweep(amp_f32_bits(0.99f), amp_f32_bits(1.01f), 1);
    sweep(amp_f32_bits(3.9f), amp_f32_bits(4.1f), 1);
    printf("erf: max error %.3f ulp (at %a)\n", worst, worst_at);
    EXPECT(worst <= ERF_MAX_ULP, "erf max error %.3f ulp at %a, bound %.2f", worst, worst_at, ERF_MAX_ULP);

    size_t not_one = 0; /* erfc(x) < 2^-25 from x ~ 3.92 on: 1.0f exactly */
    for (uint64_t u = amp_f32_bits(4.0f); u <= 0x7f800000u; u += 997) not_one += amp_erf(amp_f32_from_bits((uint32_t)u)) != 1.0f;
    EXPECT(not_one == 0 && amp_erf(INFINITY) == 1.0f && amp_erf(-INFINITY) == -1.0f,
           "erf of large x is not +-1 (%zu)", not_one);
    EXPECT(amp_f32_bits(amp_erf(0.0f)) == 0u && amp_f32_bits(amp_erf(-0.0f)) == 0x80000000u, "erf(+-0)");
    EXPECT(isnan(amp_erf(NAN)) && isnan(amp_erf(-NAN)), "erf(NaN) is not NaN");
    EXPECT(amp_erf(0x1p-149f) == 0x1p-149f && amp_erf(0x1p-140f) == 0x1.21p-140f, "erf of subnormals");

    /* the GELU and its derivative against double; 1 + erf cancels for x < 0
     * as PyTorch's formula does, which the 2^-24 |x| allowance covers */
    double wg = 0.0, wd = 0.0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) {
        float x = amp_f32_from_bits((uint32_t)u);
        if (!(fabsf(x) < 20.0f)) continue;
        double xd = x, cdf = 0.5 * (1.0 + erf(xd * M_SQRT1_2)), pdf = exp(-0.5 * xd * xd) / sqrt(2.0 * M_PI);
        double g = fabs(amp_gelu(x) - xd * cdf) / (ldexp(1.0, -23) * fabs(xd * cdf) + ldexp(1.0, -24) * fabs(xd) + 0x1p-149);
        double d = fabs(amp_gelu_grad(x) - (cdf + xd * pdf)) / (ldexp(1.0, -23) * (cdf + fabs(xd * pdf)) + ldexp(1.0, -24) + 0x1p-149);
        if (g > wg) wg = g;
        if (d > wd) wd = d;
    }
    printf("gelu: max error %.3f, gradient %.3f (in ulps plus the 1 + erf rounding)\n", wg, wd);
    EXPECT(wg <= 4.0 && wd <= 4.0, "gelu error %.3f, gradient %.3f", wg, wd);
    EXPECT(amp_gelu_grad(INFINITY) == 1.0f && amp_gelu_grad(-INFINITY) == 0.0f && amp_gelu_grad(0.0f) == 0.5f &&
               amp_gelu_grad(-0.0f) == 0.5f && isnan(amp_gelu_grad(NAN)),
           "gelu gradient at +-inf, +-0, NaN: %g %g %g %g", amp_gelu_grad(INFINITY), amp_gelu_grad(-INFINITY),
           amp_gelu_grad(0.0f), amp_gelu_grad(-0.0f));
    EXPECT(amp_gelu(INFINITY) == INFINITY && amp_gelu(0x1p-149f) == 0.0f, "gelu at inf, subnormal");
    return amp_test_failures ? 1 : 0;
}

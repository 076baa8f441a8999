/* The CPU backend's element-wise kernels (core/backend/cpu_kern.h) on every
 * instruction-set path this machine has, against the shared scalar
 * functions of core/backend/kernels/, bit for bit; the fused backend ops
 * (gemm_ex epilogue, act_backward_round, quantize) against the same math
 * done element by element; and every element-wise result at 1, 2 and 3
 * threads, which must not differ in a single bit. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu_isa.h"
#include "backend/cpu_kern.h"
#include "backend/kernels/act.h"
#include "backend/kernels/convert.h"
#include "backend/kernels/optim.h"
#include "backend/kernels/unscale.h"
#include "expect.h"
#include "gemm_helpers.h"
#include "util/rng.h"

static uint32_t bits(float f) { return amp_f32_bits(f); }
static float fb(uint32_t u) { return amp_f32_from_bits(u); }

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
/* floats of every kind: random bit patterns (NaNs, infs, denormals
 * included), values near the 16-bit formats' edges, and ordinary values */
static float any_float(void) {
    uint32_t r = rnd32();
    switch (r % 8) {
    case 0: return fb(rnd32());
    case 1: return fb((rnd32() & 0x807fffffu) | ((uint32_t)(100 + rnd32() % 20) << 23)); /* f16 subnormal range */
    case 2: return fb((rnd32() & 0x807fffffu) | ((uint32_t)(140 + rnd32() % 6) << 23));  /* near 65504 */
    case 3: return fb(rnd32() & 0x807fffffu);                                            /* f32 denormal */
    case 4: return fb((rnd32() & 0x807fffffu) | (0xfeu << 23));                          /* near FLT_MAX */
    case 5: return (float)((int)(rnd32() % 2001) - 1000) * 0.25f;                         /* ties, zeros */
    default: return ((float)rnd32() / 4294967296.0f - 0.5f) * 8.0f;
    }
}
/* any_float with signalling NaNs quieted: arithmetic never makes one, and
 * whether x * 1.0f quiets one is up to the compiler (gcc folds it to x), so
 * the plain arithmetic loops are compared on the other inputs */
static float arith_float(void) {
    float f = any_float();
    return f != f ? fb(bits(f) | 0x400000u) : f;
}
static float finite_float(void) {
    float f;
    do f = any_float();
    while (!isfinite(f));
    return f;
}
static int same(float a, float b) { return bits(a) == bits(b); }

static void check_table(const amp_cpu_kern *k) {
    const char *isa = amp_isa_name(k->isa);
    enum { N = 1 << 18 };
    float *src = malloc(N * sizeof *src), *dst = malloc(N * sizeof *dst);
    uint16_t *h = malloc(N * sizeof *h);
    for (size_t i = 0; i < N; i++) src[i] = any_float();
    src[0] = 0.0f, src[1] = -0.0f, src[2] = INFINITY, src[3] = -INFINITY, src[4] = NAN;
    src[5] = 65504.0f, src[6] = 65520.0f, src[7] = 65519.996f, src[8] = 0x1p-24f, src[9] = 0x1p-25f;
    src[10] = 0x1.000002p-25f, src[11] = 0x1p-149f, src[12] = 3.4028235e38f, src[13] = fb(0x7f800001u);
    static const int dts[2] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        int dt = dts[d];
        /* every length 0..40 at odd offsets (the vector loops' tails), then the lot */
        for (size_t off = 0; off < 3; off++)
            for (size_t n = 0; n <= 40; n++) {
                amp_tally t = {0, 0, 0}, r = {0, 0, 0};
                k->round16(h + off, src + 17 + off, n, dt, &t);
                for (size_t i = 0; i < n; i++) {
                    unsigned f;
                    uint16_t want = amp_round16(src[17 + off + i], dt, &f);
                    r.nz += f & AMP_RF_NONZERO, r.uf += (f & AMP_RF_UNDERFLOW) != 0,
                        r.of += (f & AMP_RF_OVERFLOW) != 0;
                    EXPECT(h[off + i] == want, "%s round16 dt %d n %zu: %#x -> %#x, want %#x", isa, dt,
                           n, bits(src[17 + off + i]), h[off + i], want);
                }
                EXPECT(t.nz == r.nz && t.uf == r.uf && t.of == r.of, "%s round16 tally dt %d n %zu", isa,
                       dt, n);
            }
        amp_tally t = {0, 0, 0}, r = {0, 0, 0};
        k->round16(h, src, N, dt, &t);
        size_t bad = 0;
        for (size_t i = 0; i < N; i++) {
            unsigned f;
            uint16_t want = amp_round16(src[i], dt, &f);
            r.nz += f & AMP_RF_NONZERO, r.uf += (f & AMP_RF_UNDERFLOW) != 0,
                r.of += (f & AMP_RF_OVERFLOW) != 0;
            if (h[i] != want && bad++ < 5)
                EXPECT(0, "%s round16 dt %d: %#x -> %#x, want %#x", isa, dt, bits(src[i]), h[i], want);
        }
        EXPECT(bad == 0, "%s round16 dt %d: %zu of %d values differ", isa, dt, bad, (int)N);
        EXPECT(t.nz == r.nz && t.uf == r.uf && t.of == r.of,
               "%s round16 tally dt %d: %llu/%llu/%llu, want %llu/%llu/%llu", isa, dt, t.nz, t.uf,
               t.of, r.nz, r.uf, r.of);
        EXPECT(r.uf > 0 && r.of > 0, "the inputs reach both underflow and overflow");
        /* uncounted rounding gives the same values */
        uint16_t *h2 = malloc(N * sizeof *h2);
        k->round16(h2, src, N, dt, NULL);
        EXPECT(memcmp(h, h2, N * sizeof *h) == 0, "%s round16 uncounted dt %d", isa, dt);
        free(h2);
        /* round16_wide and quantize16: round16's bits and tallies plus
         * their widened values, at tail lengths and on the lot, in place too */
        for (size_t n = 0; n <= N - 3; n = n < 40 ? n + 1 : N - 3) { /* from src + 3 */
            amp_tally tw = {0, 0, 0}, tq = {0, 0, 0}, tr = {0, 0, 0};
            uint16_t *hw = malloc((n + 1) * sizeof *hw), *hr = malloc((n + 1) * sizeof *hr);
            float *w = malloc((n + 1) * sizeof *w), *q = malloc((n + 1) * sizeof *q);
            k->round16(hr, src + 3, n, dt, &tr);
            k->round16_wide(hw, w, src + 3, n, dt, &tw);
            memcpy(q, src + 3, n * sizeof *q);
            k->quantize16(q, q, n, dt, &tq);
            size_t nbad = 0;
            for (size_t i = 0; i < n; i++)
                nbad += hw[i] != hr[i] || !same(w[i], amp_widen16(hr[i], dt)) || !same(q[i], w[i]);
            EXPECT(nbad == 0, "%s round16_wide/quantize16 dt %d n %zu: %zu differ", isa, dt, n, nbad);
            EXPECT(tw.nz == tr.nz && tw.uf == tr.uf && tw.of == tr.of && tq.nz == tr.nz &&
                       tq.uf == tr.uf && tq.of == tr.of,
                   "%s round16_wide/quantize16 tally dt %d n %zu", isa, dt, n);
            free(hw), free(hr), free(w), free(q);
            if (n == N - 3) break;
        }
        /* widening: every one of the 65536 patterns, at an odd offset */
        for (uint32_t i = 0; i < 65536; i++) h[i + 1] = (uint16_t)i;
        k->widen16(dst + 3, h + 1, 65536, dt);
        bad = 0;
        for (uint32_t i = 0; i < 65536; i++)
            if (!same(dst[3 + i], amp_widen16((uint16_t)i, dt)) && bad++ < 5)
                EXPECT(0, "%s widen16 dt %d: %#x -> %#x", isa, dt, i, bits(dst[3 + i]));
        EXPECT(bad == 0, "%s widen16 dt %d: %zu patterns differ", isa, dt, bad);
        /* every length 0..40 at odd offsets (the padded tails); nothing past n is written */
        for (size_t len = 0; len <= 40; len++) {
            for (size_t j = 0; j < 48; j++) dst[j] = -7.0f;
            k->widen16(dst + 1, h + 3 + len, len, dt);
            size_t off = 0;
            for (size_t j = 0; j < len; j++) off += !same(dst[1 + j], amp_widen16(h[3 + len + j], dt));
            EXPECT(off == 0 && dst[0] == -7.0f && dst[1 + len] == -7.0f, "%s widen16 dt %d length %zu",
                   isa, dt, len);
        }
    }

    /* unscale: the scalar function's element results, and the lane sums
     * equal to the generic path's (the fixed order) */
    const amp_cpu_kern *g0 = amp_cpu_kern_generic();
    for (int pass = 0; pass < 2; pass++) {
        float inv = pass ? 0.125f : 1.0f;
        size_t n = 100003;
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
        for (size_t i = 0; i < n; i++) a[i] = rnd32() % 97 == 0 ? any_float() : finite_float() * 1e-3f;
        memcpy(b, a, n * sizeof *a);
        memcpy(c, a, n * sizeof *a);
        amp_unscale_acc x, y;
        memset(&x, 0, sizeof x);
        memset(&y, 0, sizeof y);
        k->unscale(a, n, inv, &x);
        g0->unscale(b, n, inv, &y);
        double sum = 0.0;
        float mx = 0.0f;
        unsigned long long nbad = 0;
        for (size_t i = 0; i < n; i++) nbad += !amp_unscale_element(&c[i], inv, &sum, &mx);
        EXPECT(memcmp(a, c, n * sizeof *a) == 0, "%s unscale values (inv %g)", isa, inv);
        EXPECT(x.bad == nbad && y.bad == nbad, "%s unscale non-finite count", isa);
        EXPECT(same(x.maxabs, mx), "%s unscale maxabs %g, want %g", isa, x.maxabs, mx);
        EXPECT(memcmp(x.lane, y.lane, sizeof x.lane) == 0, "%s unscale lanes differ from generic", isa);
        double lanes = ((x.lane[0] + x.lane[1]) + (x.lane[2] + x.lane[3])) +
                       ((x.lane[4] + x.lane[5]) + (x.lane[6] + x.lane[7]));
        EXPECT(fabs(lanes - sum) <= 1e-12 * sum, "%s unscale sum %.17g vs sequential %.17g", isa, lanes,
               sum);
        free(a), free(b), free(c);
    }

    /* the plain loops */
    size_t n = 10007;
    float *x = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4), *w = malloc(n * 4),
          *m = malloc(n * 4), *v = malloc(n * 4), *o = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = arith_float(), y[i] = arith_float(), z[i] = finite_float();
    for (int act = 0; act <= AMP_ACT_GELU_TANH; act++) {
        k->act(o, x, n, act);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += !same(o[i], amp_act_apply(x[i], act));
        EXPECT(bad == 0, "%s act %d: %zu differ", isa, act, bad);
        k->act_grad_mul(o, y, x, n, act);
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += !same(o[i], y[i] * amp_act_grad(x[i], act));
        EXPECT(bad == 0, "%s act_grad_mul %d: %zu differ", isa, act, bad);
        /* in place (y == da), with inf/NaN in both operands and signed zeros in z */
        for (size_t i = 0; i < n; i++) {
            m[i] = i % 7 == 0 ? arith_float() : y[i];
            v[i] = i % 5 == 0 ? (i % 2 ? -0.0f : 0.0f) : i % 11 == 0 ? arith_float() : x[i];
            w[i] = m[i];
        }
        k->act_grad_mul(w, w, v, n, act);
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += !same(w[i], m[i] * amp_act_grad(v[i], act));
        EXPECT(bad == 0, "%s act_grad_mul %d in place with specials: %zu differ", isa, act, bad);
    }
    /* vexp: libm's expf bit for bit (the vector path replays glibc's
     * algorithm), in place too; every 4099th bit pattern of the whole
     * float range, and the arguments the GELU and softmax give it */
    {
        size_t ne = (size_t)(0x100000000ull / 4099) + 1, bad_e = 0;
        float *ex = malloc(ne * 4), *ey = malloc(ne * 4);
        for (size_t i = 0; i < ne; i++) ex[i] = fb((uint32_t)(i * 4099u + 17u));
        for (size_t i = 0; i < n; i++) ex[i] = amp_gelu_tanh_arg(x[i]);
        for (size_t i = n; i < 2 * n; i++) ex[i] = -fabsf(z[i - n]) * 1e-3f;
        memcpy(ey, ex, ne * 4);
        k->vexp(ey, ey, ne);
        for (size_t len = 0; len <= 40; len++) { /* the padded tails, in place and not */
            float a[48], b2[48];
            for (size_t j = 0; j < 48; j++) a[j] = ex[j * 7 + len], b2[j] = -7.0f;
            k->vexp(b2 + 1, a, len);
            size_t off = 0;
            for (size_t j = 0; j < len; j++) off += !same(b2[1 + j], expf(a[j]));
            EXPECT(off == 0 && b2[0] == -7.0f && b2[1 + len] == -7.0f, "%s vexp length %zu", isa, len);
        }
        for (size_t i = 0; i < ne; i++) bad_e += !same(ey[i], expf(ex[i]));
        EXPECT(bad_e == 0, "%s vexp: %zu of %zu differ from expf", isa, bad_e, ne);
        free(ex), free(ey);
    }
    k->add(o, x, y, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !same(o[i], x[i] + y[i]);
    EXPECT(bad == 0, "%s add: %zu differ", isa, bad);
    memcpy(o, x, n * 4);
    k->acc_add(o, y, n);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += !same(o[i], y[i] != y[i] ? y[i] + y[i] : x[i] + y[i]);
    EXPECT(bad == 0, "%s acc_add: %zu differ", isa, bad);
    memcpy(o, x, n * 4);
    k->scale(o, n, 0.37f);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += !same(o[i], x[i] * 0.37f);
    EXPECT(bad == 0, "%s scale: %zu differ", isa, bad);
    k->col_sum(o, z, 97, 101, 103);
    bad = 0;
    for (size_t j = 0; j < 101; j++) {
        float s = 0.0f;
        for (size_t r = 0; r < 97; r++) s += z[r * 103 + j];
        bad += !same(o[j], s);
    }
    EXPECT(bad == 0, "%s col_sum: %zu differ", isa, bad);
    for (int mom = 0; mom < 2; mom++) {
        for (size_t i = 0; i < n; i++) w[i] = z[i], m[i] = z[(i + 1) % n] * 0.1f, o[i] = w[i], v[i] = m[i];
        k->sgd(w, m, x, n, 0.01f, mom ? 0.9f : 0.0f, 1e-4f);
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            amp_sgd_element(&o[i], &v[i], x[i], 0.01f, mom ? 0.9f : 0.0f, 1e-4f);
            bad += !same(w[i], o[i]) || !same(m[i], v[i]);
        }
        EXPECT(bad == 0, "%s sgd momentum %d: %zu differ", isa, mom, bad);
    }
    float *m2 = malloc(n * 4), *v2 = malloc(n * 4), *vv = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        w[i] = o[i] = z[i], m[i] = m2[i] = z[(i + 3) % n] * 0.01f, vv[i] = v2[i] = fabsf(z[(i + 5) % n]) * 0.001f;
    k->adamw(w, m, vv, y, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.1f, 0.0316f);
    bad = 0;
    for (size_t i = 0; i < n; i++) {
        amp_adamw_element(&o[i], &m2[i], &v2[i], y[i], 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.1f, 0.0316f);
        bad += !same(w[i], o[i]) || !same(m[i], m2[i]) || !same(vv[i], v2[i]);
    }
    EXPECT(bad == 0, "%s adamw: %zu differ", isa, bad);
    free(m2), free(v2), free(vv);
    free(x), free(y), free(z), free(w), free(m), free(v), free(o);
    free(src), free(dst), free(h);
}

/* The GELUs on inputs their piecewise and saturating parts meet: every
 * 4099th bit pattern of the float range, the erf's switch (x / sqrt 2 = 1)
 * and clamp (= 4) and phi's underflow, each with its neighbours, large
 * |x|, tiny x, subnormals, +-0, +-inf, NaNs; forward and gradient, at
 * every length up to 40 (the tails) and in place. */
static void check_gelu_specials(const amp_cpu_kern *k) {
    const char *isa = amp_isa_name(k->isa);
    static const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 0x1p-149f, -0x1p-149f,
                                  0x1.fffffcp-127f, -0x1p-126f, 0x1p-100f, -0x1.8p-60f, 1e-30f, 0x1p-24f,
                                  1.41421356f, 2.82842712f, 5.65685425f, 3.9f, 4.0f, 14.0f, 15.0f, 20.0f,
                                  26.0f, 1e10f, 3.4028235e38f, -3.4028235e38f};
    size_t ne = sizeof edges / sizeof *edges, n = (size_t)(0x100000000ull / 4099) + 1 + ne * 17;
    float *x = malloc(n * 4), *da = malloc(n * 4), *o = malloc(n * 4), *w = malloc(n * 4);
    size_t m = 0;
    for (size_t e = 0; e < ne; e++)
        for (int d = -8; d <= 8; d++) { /* the edge and its 8 neighbours either side, both signs */
            uint32_t u = bits(edges[e]);
            x[m++] = edges[e] != edges[e] ? edges[e] : fb(d < 0 ? (u ^ 0x80000000u) + (uint32_t)-d : u + (uint32_t)d);
        }
    for (; m < n; m++) {
        float f = fb((uint32_t)(m * 4099u + 17u));
        x[m] = f != f ? fb(bits(f) | 0x400000u) : f; /* signalling NaNs quieted, as arith_float does */
    }
    /* finite upstream gradients: with a NaN x too, which of two NaNs a
     * product keeps depends on the compiler's operand order, not on the
     * kernel */
    for (size_t i = 0; i < n; i++) da[i] = i % 3 ? 1.0f : finite_float();
    for (int act = AMP_ACT_GELU; act <= AMP_ACT_GELU_TANH; act++) {
        size_t bad_f = 0, bad_g = 0, bad_t = 0;
        k->act(o, x, n, act);
        for (size_t i = 0; i < n; i++) bad_f += !same(o[i], amp_act_apply(x[i], act));
        k->act_grad_mul(o, da, x, n, act);
        for (size_t i = 0; i < n; i++) bad_g += !same(o[i], da[i] * amp_act_grad(x[i], act));
        for (size_t len = 0; len <= 40; len++) {
            memcpy(w, x + 3 * len, len * 4);
            k->act(w, w, len, act);
            k->act_grad_mul(o, da + len, x + 5 * len, len, act);
            for (size_t j = 0; j < len; j++)
                bad_t += !same(w[j], amp_act_apply(x[3 * len + j], act)) +
                         !same(o[j], da[len + j] * amp_act_grad(x[5 * len + j], act));
        }
        EXPECT(bad_f == 0 && bad_g == 0 && bad_t == 0,
               "%s act %d on edges and the float range: %zu forward, %zu gradient, %zu tail results differ",
               isa, act, bad_f, bad_g, bad_t);
    }
    free(x), free(da), free(o), free(w);
}

/* ---- the fused backend ops ------------------------------------------------ */

static amp_backend *cpu_backend(amp_isa isa) {
    setenv("AMPTRAIN_ISA", amp_isa_name(isa), 1);
    setenv("AMPTRAIN_GEMM", "openblas", 1); /* oneDNN fixes its ISA once per process */
    char err[512];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    EXPECT(be != NULL, "creating the %s backend: %s", amp_isa_name(isa), err);
    return be;
}

static size_t dsz(int dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }
static float get(const void *p, size_t i, int dt) {
    return dt == AMP_DTYPE_F32 ? ((const float *)p)[i] : amp_widen16(((const uint16_t *)p)[i], dt);
}
static void *rand_array(size_t n, int dt, float scale) {
    void *p = malloc(n * dsz(dt));
    for (size_t i = 0; i < n; i++) {
        float f = ((float)rnd32() / 4294967296.0f - 0.5f) * scale;
        if (dt == AMP_DTYPE_F32)
            ((float *)p)[i] = f;
        else
            ((uint16_t *)p)[i] = amp_round16(f, dt, NULL);
    }
    return p;
}

/* gemm_ex with every epilogue against be->ops->gemm followed by the
 * per-element math of add_bias, round, widen, act_forward, round. */
static void check_epilogue(amp_backend *be) {
    const char *isa = be->info.isa;
    int M = 67, N = 1030, K = 45; /* N spans two tiles; M several chunks */
    for (int in = 0; in < 3; in++)
        for (int od = 0; od < 3; od++)
            for (int act = 0; act <= AMP_ACT_GELU_TANH; act++) {
                int bd = (in + act) % 3;
                void *a = rand_array((size_t)M * K, in, 2.0f), *b = rand_array((size_t)K * N, in, 2.0f);
                void *bias = rand_array((size_t)N, bd, 1.0f);
                size_t mn = (size_t)M * N;
                float *acc = malloc(mn * 4), *ref = malloc(mn * 4);
                void *out = malloc(mn * 4), *aout = malloc(mn * 4);
                /* scale the sums into the 16-bit formats' edges now and then */
                float alpha = od == AMP_DTYPE_F16 && act == 1 ? 3000.0f : 1.0f;
                EXPECT(gemm_ex_ld(be,
                                  amp_gemm_plain(ref, a, b, (amp_dtype)in, AMP_GEMM_NN, M, N, K), K,
                                  N, N, alpha, 0.0f) == 0,
                       "gemm");
                amp_round_count cnt = {0, 0, 0}, want = {0, 0, 0};
                amp_gemm_desc d;
                memset(&d, 0, sizeof d);
                d.m = M, d.n = N, d.k = K, d.lda = K, d.ldb = N, d.ldc = N, d.batch = 1;
                d.in_dtype = (amp_dtype)in, d.a = a, d.b = b, d.alpha = alpha, d.acc = acc;
                d.bias = bias, d.bias_dtype = (amp_dtype)bd, d.act = (amp_act)act;
                d.out = out, d.act_out = act ? aout : NULL, d.out_dtype = (amp_dtype)od, d.cnt = &cnt;
                EXPECT(be->ops->gemm_ex(be, &d) == 0, "gemm_ex: %s", be->err);
                size_t bad = 0;
                for (size_t i = 0; i < mn; i++) {
                    float v = ref[i] + get(bias, i % N, bd);
                    float zo, ao = 0.0f;
                    unsigned f = 0;
                    if (od == AMP_DTYPE_F32) {
                        zo = v;
                    } else {
                        zo = amp_widen16(amp_round16(v, od, &f), od);
                        want.nonzero += f & AMP_RF_NONZERO, want.underflow += (f & AMP_RF_UNDERFLOW) != 0,
                            want.overflow += (f & AMP_RF_OVERFLOW) != 0;
                    }
                    if (act) {
                        float y = amp_act_apply(zo, act);
                        if (od == AMP_DTYPE_F32) {
                            ao = y;
                        } else {
                            ao = amp_widen16(amp_round16(y, od, &f), od);
                            want.nonzero += f & AMP_RF_NONZERO,
                                want.underflow += (f & AMP_RF_UNDERFLOW) != 0,
                                want.overflow += (f & AMP_RF_OVERFLOW) != 0;
                        }
                    }
                    bad += !same(get(out, i, od), zo) || (act && !same(get(aout, i, od), ao));
                }
                EXPECT(bad == 0, "%s gemm_ex in %d out %d act %d bias %d: %zu outputs differ", isa, in,
                       od, act, bd, bad);
                EXPECT(cnt.nonzero == want.nonzero && cnt.underflow == want.underflow &&
                           cnt.overflow == want.overflow,
                       "%s gemm_ex counts in %d out %d act %d: %llu/%llu/%llu want %llu/%llu/%llu", isa,
                       in, od, act, cnt.nonzero, cnt.underflow, cnt.overflow, want.nonzero,
                       want.underflow, want.overflow);
                free(a), free(b), free(bias), free(acc), free(ref), free(out), free(aout);
            }
}

/* act_backward_round (dz over z, and with the FP32 copy) and quantize
 * against the per-element math. */
static void check_backward_ops(amp_backend *be) {
    const char *isa = be->info.isa;
    size_t n = 70001;
    for (int dt = 1; dt < 3; dt++)
        for (int act = 0; act <= AMP_ACT_GELU_TANH; act++) {
            float *da = malloc(n * 4), *f32 = malloc(n * 4);
            for (size_t i = 0; i < n; i++) da[i] = any_float() * (i % 3 ? 1e-3f : 1.0f);
            uint16_t *z = rand_array(n, dt, 8.0f), *z0 = malloc(n * 2);
            memcpy(z0, z, n * 2);
            amp_round_count cnt = {0, 0, 0}, want = {0, 0, 0};
            EXPECT(AMP_FUSED(be, act_backward_round,
                             &(amp_act_round_args){z, f32, da, z, (amp_dtype)dt, n, (amp_act)act,
                                                   &cnt, 0}) == 0,
                   "act_backward_round");
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) {
                unsigned f1, f2;
                float q = amp_widen16(amp_round16(da[i], dt, &f1), dt);
                uint16_t r = amp_round16(q * amp_act_grad(amp_widen16(z0[i], dt), act), dt, &f2);
                want.nonzero += (f1 & 1) + (f2 & 1);
                want.underflow += ((f1 & AMP_RF_UNDERFLOW) != 0) + ((f2 & AMP_RF_UNDERFLOW) != 0);
                want.overflow += ((f1 & AMP_RF_OVERFLOW) != 0) + ((f2 & AMP_RF_OVERFLOW) != 0);
                bad += z[i] != r || !same(f32[i], amp_widen16(r, dt));
            }
            EXPECT(bad == 0, "%s act_backward_round dt %d act %d: %zu differ", isa, dt, act, bad);
            EXPECT(cnt.nonzero == want.nonzero && cnt.underflow == want.underflow &&
                       cnt.overflow == want.overflow,
                   "%s act_backward_round counts dt %d act %d", isa, dt, act);
            /* quantize, accumulating */
            float *acc = malloc(n * 4), *acc0 = malloc(n * 4);
            for (size_t i = 0; i < n; i++) acc[i] = acc0[i] = any_float();
            amp_round_count qc = {0, 0, 0};
            EXPECT(be->ops->quantize(be, acc, da, n, (amp_dtype)dt, &qc, 1) == 0, "quantize");
            bad = 0;
            unsigned long long nz = 0;
            for (size_t i = 0; i < n; i++) {
                unsigned f;
                float q = amp_quantize(da[i], dt, &f);
                nz += f & 1;
                bad += !same(acc[i], q != q ? q + q : acc0[i] + q);
            }
            EXPECT(bad == 0 && qc.nonzero == nz, "%s quantize accumulate dt %d: %zu differ", isa, dt, bad);
            free(da), free(f32), free(z), free(z0), free(acc), free(acc0);
        }
}

/* optim_step_cast: the optimizer step's bits (sgd_step / adamw_step) and
 * the working copy that round or quantize would make of the result, with
 * their counts, for both stores. */
static void check_optim_step_cast(amp_backend *be) {
    const char *isa = be->info.isa;
    size_t n = 300007; /* several chunks and a tail */
    float *w = malloc(n * 4), *s0 = malloc(n * 4), *s1 = malloc(n * 4), *g = malloc(n * 4);
    float *w2 = malloc(n * 4), *t0 = malloc(n * 4), *t1 = malloc(n * 4), *wc = malloc(n * 4),
          *want = malloc(n * 4);
    for (int kind = 0; kind < 3; kind++)      /* SGD, SGD with momentum, AdamW */
        for (int dt = 1; dt < 3; dt++)
            for (int f32 = 0; f32 < 2; f32++) {
                for (size_t i = 0; i < n; i++) {
                    w[i] = w2[i] = finite_float() * (i % 5 ? 1e-3f : 1.0f);
                    g[i] = finite_float() * 1e-2f;
                    s0[i] = t0[i] = finite_float() * 1e-3f;
                    s1[i] = t1[i] = fabsf(finite_float()) * 1e-4f;
                }
                amp_optim_step o = {kind == 2, 0.01f, kind == 1 ? 0.9f : 0.0f, 1e-4f, 0.9f, 0.999f,
                                    1e-8f, 7};
                amp_round_count c = {0, 0, 0}, cw = {0, 0, 0};
                EXPECT(AMP_FUSED(be, optim_step_cast, &o, w, s0, kind == 2 ? s1 : NULL, g, n,
                                 &(amp_weight_copy){wc, (amp_dtype)dt, f32, &c}) == 0,
                       "optim_step_cast");
                if (kind == 2)
                    be->ops->optim_step(be,
                                        &(amp_optim_step){1, o.lr, 0.0f, o.weight_decay, o.beta1,
                                                          o.beta2, o.eps, o.t},
                                        w2, t0, t1, g, n);
                else
                    be->ops->optim_step(
                        be,
                        &(amp_optim_step){0, o.lr, o.momentum, o.weight_decay, 0.0f, 0.0f, 0.0f, 0},
                        w2, t0, NULL, g, n);
                if (f32)
                    be->ops->quantize(be, want, w2, n, (amp_dtype)dt, &cw, 0);
                else
                    be->ops->round(be, want, (amp_dtype)dt, w2, n, &cw);
                size_t bad = memcmp(w, w2, n * 4) != 0 || memcmp(s0, t0, n * 4) != 0 ||
                             (kind == 2 && memcmp(s1, t1, n * 4) != 0);
                EXPECT(bad == 0, "%s optim_step_cast kind %d: the step differs", isa, kind);
                EXPECT(memcmp(wc, want, n * (f32 ? 4 : 2)) == 0,
                       "%s optim_step_cast kind %d dt %d f32 %d: the working copy differs", isa, kind,
                       dt, f32);
                EXPECT(c.nonzero == cw.nonzero && c.underflow == cw.underflow &&
                           c.overflow == cw.overflow && c.nonzero > 0,
                       "%s optim_step_cast kind %d dt %d f32 %d: counts", isa, kind, dt, f32);
            }
    free(w), free(s0), free(s1), free(g), free(w2), free(t0), free(t1), free(wc), free(want);
}

/* Everything element-wise at 1, 2 and 3 threads: not one bit differs. */
static void check_threads(amp_backend *be) {
    const char *isa = be->info.isa;
    size_t n = 1000003;
    float *g = malloc(n * 4), *first = malloc(n * 4), *o = malloc(n * 4), *ofirst = malloc(n * 4);
    uint16_t *h = malloc(n * 2), *hfirst = malloc(n * 2);
    amp_step_stats s0;
    amp_round_count c0 = {0, 0, 0};
    for (int t = 1; t <= 3; t++) {
        omp_set_num_threads(t);
        rng_state = 12345;
        for (size_t i = 0; i < n; i++) g[i] = rnd32() % 1000 == 0 ? any_float() : finite_float();
        amp_step_stats s;
        memset(&s, 0, sizeof s);
        be->ops->unscale_check(be, g, &s, n, 1.0f / 1024.0f);
        amp_round_count c = {0, 0, 0};
        be->ops->round(be, h, AMP_DTYPE_F16, g, n, &c);
        AMP_FUSED(be, act_backward_round,
                  &(amp_act_round_args){h, o, g, h, AMP_DTYPE_F16, n, AMP_ACT_GELU, &c, 0});
        be->ops->quantize(be, o, g, n, AMP_DTYPE_BF16, &c, 1);
        be->ops->optim_step(be, &(amp_optim_step){0, 0.1f, 0.9f, 0.0f, 0.0f, 0.0f, 0.0f, 0}, o, g,
                            NULL, g, n);
        if (t == 1) {
            s0 = s, c0 = c;
            memcpy(first, g, n * 4), memcpy(ofirst, o, n * 4), memcpy(hfirst, h, n * 2);
            continue;
        }
        EXPECT(memcmp(&s0.sumsq, &s.sumsq, sizeof s.sumsq) == 0 && s0.nonfinite == s.nonfinite &&
                   same(s0.maxabs, s.maxabs),
               "%s unscale_check at %d threads: sumsq %.17g vs %.17g", isa, t, s.sumsq, s0.sumsq);
        EXPECT(memcmp(first, g, n * 4) == 0 && memcmp(ofirst, o, n * 4) == 0 &&
                   memcmp(hfirst, h, n * 2) == 0,
               "%s element-wise results at %d threads differ from 1 thread", isa, t);
        EXPECT(c.nonzero == c0.nonzero && c.underflow == c0.underflow && c.overflow == c0.overflow,
               "%s counts at %d threads", isa, t);
    }
    omp_set_num_threads(be->info.threads);
    free(g), free(first), free(o), free(ofirst), free(h), free(hfirst);
}

/* Tallies over runs longer than the kernels' counter blocks (the vector
 * counters are flushed before any lane can wrap): values of one kind, so
 * a count that wrapped would be off by a multiple of its lane width. */
static void check_long_tallies(const amp_cpu_kern *k) {
    const char *isa = amp_isa_name(k->isa);
    enum { N = (1 << 21) + 21 };
    float *src = malloc(N * sizeof *src);
    uint16_t *h = malloc(N * sizeof *h);
    static const float kinds[5] = {0.0f, 1e30f, 1e-30f, 1.5f, INFINITY};
    static const int dts[2] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++)
        for (int v = 0; v < 5; v++) {
            for (size_t i = 0; i < N; i++) src[i] = i % 3 ? kinds[v] : -kinds[v];
            unsigned f = 0;
            (void)amp_round16(kinds[v], dts[d], &f);
            unsigned long long want_nz = f & AMP_RF_NONZERO ? N : 0;
            unsigned long long want_uf = f & AMP_RF_UNDERFLOW ? N : 0;
            unsigned long long want_of = f & AMP_RF_OVERFLOW ? N : 0;
            amp_tally t = {0, 0, 0};
            k->round16(h, src, N, dts[d], &t);
            EXPECT(t.nz == want_nz && t.uf == want_uf && t.of == want_of,
                   "%s round16 dt %d of %d x %g: tally %llu/%llu/%llu, want %llu/%llu/%llu", isa,
                   dts[d], (int)N, kinds[v], t.nz, t.uf, t.of, want_nz, want_uf, want_of);
        }
    free(src);
    free(h);
}

/* Tallies where the specials are few: ordinary values with a +-0, +-inf,
 * an underflow or an overflow here and there, so that most blocks of the
 * vector paths' rounding have none and a few have one at any position,
 * first and last included; round16, round16_wide, quantize16 out of place
 * and in place against the scalar reference, over lengths around and past
 * the blocks' sizes. */
static void check_sparse_tallies(const amp_cpu_kern *k) {
    const char *isa = amp_isa_name(k->isa);
    enum { N = 70000 };
    static const size_t lens[] = {1, 15, 16, 17, 1023, 1024, 1025, 1039, 2048, 4111, 65536, N};
    static const int dts[2] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    float *src = malloc(N * sizeof *src), *w = malloc(N * sizeof *w), *q = malloc(N * sizeof *q);
    uint16_t *h = malloc(N * sizeof *h), *hw = malloc(N * sizeof *hw);
    for (int d = 0; d < 2; d++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int rep = 0; rep < 4; rep++) {
                size_t n = lens[li];
                const float special[6] = {0.0f, -0.0f, INFINITY, -INFINITY,
                                          dts[d] == AMP_DTYPE_F16 ? 1e-9f : 1e-45f,
                                          dts[d] == AMP_DTYPE_F16 ? 7e4f : 3.4028235e38f};
                for (size_t i = 0; i < n; i++) src[i] = ((float)rnd32() / 4294967296.0f + 0.5f);
                /* rep 0 none; else a few, at the ends on rep 3 */
                for (int j = 0; rep && j < rep * 2; j++) src[rnd32() % n] = special[rnd32() % 6];
                if (rep == 3) src[0] = special[rnd32() % 6], src[n - 1] = special[rnd32() % 6];
                amp_tally r = {0, 0, 0}, t = {0, 0, 0}, tw = {0, 0, 0}, tq = {0, 0, 0}, ti = {0, 0, 0};
                for (size_t i = 0; i < n; i++) {
                    unsigned f = 0;
                    (void)amp_round16(src[i], dts[d], &f);
                    r.nz += f & AMP_RF_NONZERO, r.uf += (f & AMP_RF_UNDERFLOW) != 0,
                        r.of += (f & AMP_RF_OVERFLOW) != 0;
                }
                k->round16(h, src, n, dts[d], &t);
                k->round16_wide(hw, w, src, n, dts[d], &tw);
                k->quantize16(q, src, n, dts[d], &tq);
                k->quantize16(src, src, n, dts[d], &ti);
                const amp_tally *got[4] = {&t, &tw, &tq, &ti};
                static const char *what[4] = {"round16", "round16_wide", "quantize16", "quantize16 in place"};
                for (int g = 0; g < 4; g++)
                    EXPECT(got[g]->nz == r.nz && got[g]->uf == r.uf && got[g]->of == r.of,
                           "%s %s sparse tally dt %d n %zu rep %d: %llu/%llu/%llu, want %llu/%llu/%llu",
                           isa, what[g], dts[d], n, rep, got[g]->nz, got[g]->uf, got[g]->of, r.nz,
                           r.uf, r.of);
            }
    free(src), free(w), free(q), free(h), free(hw);
}

int main(void) {
    amp_isa best = amp_isa_detect();
    char feat[160];
    amp_isa_features(feat, sizeof feat);
    printf("cpu features: %s; best path %s\n", feat, amp_isa_name(best));
    int tested = 0;
    for (int i = 0; i < AMP_ISA_COUNT; i++) {
        if ((amp_isa)i > best || i == AMP_ISA_AVX512_BF16) continue; /* bf16 shares avx512's table */
        const amp_cpu_kern *k = amp_cpu_kern_for((amp_isa)i);
        EXPECT(k != NULL, "path %s is not compiled in", amp_isa_name((amp_isa)i));
        if (!k) continue;
        check_table(k);
        check_long_tallies(k);
        check_sparse_tallies(k);
        check_gelu_specials(k);
        amp_backend *be = cpu_backend((amp_isa)i);
        if (be) {
            check_epilogue(be);
            check_backward_ops(be);
            check_threads(be);
            check_optim_step_cast(be);
            be->ops->destroy(be);
        }
        printf("%s: kernels, fused ops and thread counts checked\n", amp_isa_name((amp_isa)i));
        tested++;
    }
    /* an unknown or unsupported AMPTRAIN_ISA is an error, not a fallback */
    char err[512];
    setenv("AMPTRAIN_ISA", "sse9", 1);
    amp_isa isa;
    EXPECT(amp_isa_select(&isa, err, sizeof err) != 0 && strstr(err, "sse9"), "unknown path accepted");
    if (best < AMP_ISA_AVX512_BF16) {
        setenv("AMPTRAIN_ISA", "avx512_bf16", 1);
        EXPECT(amp_isa_select(&isa, err, sizeof err) != 0 && strstr(err, "supports up to"),
               "a path the CPU lacks was accepted");
    }
    printf("%d paths tested, %d failures\n", tested, amp_test_failures);
    return amp_test_failures ? 1 : 0;
}

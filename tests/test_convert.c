/* Checks core/backend/kernels/convert.h bit for bit:
 *   - every FP16 and BF16 pattern widens to the value its fields define
 *     (ldexp reference) and to what F16C vcvtph2ps gives;
 *   - FP32 -> FP16 / BF16 rounding agrees with the CPU's own instructions
 *     (F16C vcvtps2ph, AVX512-BF16 vcvtneps2bf16) over >= 10^8 inputs, and
 *     with a table-search reference (nearest by distance, ties to the even
 *     pattern) that shares no code with the bit tricks under test;
 *   - the round16 telemetry flags on hand-picked values and on every
 *     explicit input.
 * The hardware parts are skipped, with a line saying so, on CPUs without
 * the instructions; the reference parts always run. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/convert.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define BATCH 16
#define RANDOM_TOTAL 100000000ull /* hardware-compared random inputs */
#define REF_EVERY 16              /* also check every 16th random batch against the table */
#define SHOW_MAX 6                /* mismatches printed per check */

/* ------------------------------------------------------------ reporting */

typedef struct check {
    const char *name;
    int in16; /* inputs are 16-bit patterns, not floats */
    unsigned long long count, bad;
} check;

static check c_widen_h = {"half->float", 1, 0, 0}, c_widen_b = {"bf16->float", 1, 0, 0},
             c_widen_h_hw = {"half->float vs vcvtph2ps", 1, 0, 0},
             c_trip = {"round trip 16->32->16", 1, 0, 0},
             c_h_hw = {"float->half vs vcvtps2ph", 0, 0, 0},
             c_b_hw = {"float->bf16 vs vcvtneps2bf16", 0, 0, 0},
             c_h_ref = {"float->half vs reference", 0, 0, 0},
             c_b_ref = {"float->bf16 vs reference", 0, 0, 0},
             c_flags = {"round16 bits+flags", 0, 0, 0}, c_quant = {"quantize", 0, 0, 0},
             c_picked = {"hand-picked", 0, 0, 0};

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t u_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Counts one comparison; prints the first few failures with their bits. */
static void expect(check *c, int ok, uint32_t in, unsigned got, unsigned want) {
    c->count++;
    if (ok) return;
    if (c->bad++ >= SHOW_MAX) return;
    if (c->in16)
        fprintf(stderr, "MISMATCH %s: input 0x%04x: got 0x%x, expected 0x%x\n", c->name, in,
                got, want);
    else
        fprintf(stderr, "MISMATCH %s: input 0x%08x (%.9g): got 0x%x, expected 0x%x\n", c->name,
                in, (double)f_of(in), got, want);
}

/* ------------------------------------------------------------ reference */

/* Value of a pattern from its fields, in double (exact). Finite only. */
static double ref_half_value(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}
static double ref_bf16_value(uint16_t b) {
    int e = (b >> 7) & 0xff, m = b & 0x7f;
    double v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    return (b & 0x8000) ? -v : v;
}

/* Magnitudes of the non-negative patterns 0..inf_bits, ascending (the
 * patterns are ordered like their values). The inf slot holds the value
 * the next binade would start at, so rounding "as if the exponent were
 * unbounded" sends everything from max + ulp/2 upward to inf. */
static double half_mag[0x7c01], bf16_mag[0x7f81];

static void ref_tables_init(void) {
    for (uint32_t i = 0; i < 0x7c00; i++) half_mag[i] = ref_half_value((uint16_t)i);
    half_mag[0x7c00] = 65536.0;
    for (uint32_t i = 0; i < 0x7f80; i++) bf16_mag[i] = ref_bf16_value((uint16_t)i);
    bf16_mag[0x7f80] = ldexp(1.0, 128);
}

/* Nearest entry of tab[0..top] to |x|, ties to the even pattern; values
 * past tab[top] go to top (inf). */
static uint16_t ref_round_mag(const double *tab, uint32_t top, double a) {
    if (a >= tab[top]) return (uint16_t)top;
    uint32_t lo = 0, hi = top; /* tab[lo] <= a < tab[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tab[mid] <= a) lo = mid;
        else hi = mid;
    }
    double dl = a - tab[lo], dh = tab[hi] - a;
    if (dl < dh) return (uint16_t)lo;
    if (dh < dl) return (uint16_t)hi;
    return (uint16_t)((lo & 1) ? hi : lo);
}

/* NaN results follow the instructions: top payload bits kept, quiet bit set. */
static uint16_t ref_to_half(uint32_t u) {
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffff;
    if (a > 0x7f800000) return (uint16_t)(sign | 0x7c00 | 0x200 | ((a >> 13) & 0x3ff));
    if (a == 0x7f800000) return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | ref_round_mag(half_mag, 0x7c00, fabs((double)f_of(u))));
}
static uint16_t ref_to_bf16(uint32_t u) {
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffff;
    if (a > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
    if (a == 0x7f800000) return (uint16_t)(sign | 0x7f80);
    return (uint16_t)(sign | ref_round_mag(bf16_mag, 0x7f80, fabs((double)f_of(u))));
}

/* The flags definition applied to a reference result. */
static unsigned ref_flags(uint32_t u, uint16_t r, int bf) {
    uint32_t a = u & 0x7fffffff, ra = r & 0x7fffu;
    unsigned f = a ? AMP_RF_NONZERO : 0;
    if (a && a < 0x7f800000) {
        if (ra == 0) f |= AMP_RF_UNDERFLOW;
        if (ra == (bf ? 0x7f80u : 0x7c00u)) f |= AMP_RF_OVERFLOW;
    }
    return f;
}

/* ------------------------------------------------------------- hardware */

typedef void (*cvt16_fn)(uint16_t *out, const float *in); /* 16 floats -> 16 x 16 bits */
typedef void (*widen_fn)(float *out, const uint16_t *in); /* 16 halves -> 16 floats */

static cvt16_fn hw_to_half, hw_to_bf16;
static widen_fn hw_half_widen;

#if HAVE_X86
__attribute__((target("avx,f16c"))) static void f16c_to_half(uint16_t *out, const float *in) {
    __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT);
    __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(in + 8), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)out, a);
    _mm_storeu_si128((__m128i *)(out + 8), b);
}
__attribute__((target("avx,f16c"))) static void f16c_half_widen(float *out, const uint16_t *in) {
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)in)));
    _mm256_storeu_ps(out + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + 8))));
}
__attribute__((target("avx512bf16,avx512f,avx512vl"))) static void avx512_to_bf16(
    uint16_t *out, const float *in) {
    __m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(in));
    memcpy(out, &r, sizeof r);
}
#endif

#if HAVE_X86
/* CPUID.1:ECX.F16C[bit 29]; read directly because clang's
 * __builtin_cpu_supports does not know "f16c". The AVX check that goes
 * with it (OS saves the YMM state) is __builtin_cpu_supports("avx"). */
static int cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

static void hw_detect(void) {
#if HAVE_X86
    __builtin_cpu_init();
    if (cpu_has_f16c() && __builtin_cpu_supports("avx")) {
        hw_to_half = f16c_to_half;
        hw_half_widen = f16c_half_widen;
    }
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl"))
        hw_to_bf16 = avx512_to_bf16;
#endif
    if (!hw_to_half)
        printf("SKIPPED: F16C not available; FP16 checked against the reference only\n");
    if (!hw_to_bf16)
        printf("SKIPPED: AVX512-BF16 not available; BF16 checked against the reference only\n");
}

/* ------------------------------------------------------------- widening */

static void check_widen_all(void) {
    static uint16_t hs[65536];
    static float hw[65536];
    for (uint32_t i = 0; i < 65536; i++) hs[i] = (uint16_t)i;
    if (hw_half_widen)
        for (uint32_t i = 0; i < 65536; i += BATCH) hw_half_widen(hw + i, hs + i);

    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        uint32_t got = u_of(amp_half_to_float(h)), want;
        uint32_t sign = (i & 0x8000u) << 16, m = i & 0x3ff;
        if ((i & 0x7c00) == 0x7c00)
            want = sign | 0x7f800000u | (m ? (0x400000u | (m << 13)) : 0); /* inf / quiet NaN */
        else
            want = sign | u_of((float)fabs(ref_half_value(h)));
        expect(&c_widen_h, got == want, i, got, want);
        if (hw_half_widen) expect(&c_widen_h_hw, got == u_of(hw[i]), i, got, u_of(hw[i]));
        uint16_t back = amp_float_to_half(amp_half_to_float(h));
        uint16_t wantb = (uint16_t)(((i & 0x7c00) == 0x7c00 && m) ? (i | 0x200) : i);
        expect(&c_trip, back == wantb, i, back, wantb);
        if (u_of(amp_widen16(h, AMP_DTYPE_F16)) != got)
            expect(&c_widen_h, 0, i, u_of(amp_widen16(h, AMP_DTYPE_F16)), got);

        uint16_t b = (uint16_t)i;
        got = u_of(amp_bf16_to_float(b));
        if ((i & 0x7f80) == 0x7f80)
            want = i << 16; /* inf / NaN payload passes unchanged */
        else
            want = sign | u_of((float)fabs(ref_bf16_value(b)));
        expect(&c_widen_b, got == want, i, got, want);
        if (u_of(amp_widen16(b, AMP_DTYPE_BF16)) != got)
            expect(&c_widen_b, 0, i, u_of(amp_widen16(b, AMP_DTYPE_BF16)), got);
        back = amp_float_to_bf16(amp_bf16_to_float(b));
        wantb = (uint16_t)(((i & 0x7f80) == 0x7f80 && (i & 0x7f)) ? (i | 0x40) : i);
        expect(&c_trip, back == wantb, i, back, wantb);
    }
}

/* ------------------------------------------------------------- rounding */

static int is_f32_denormal(uint32_t u) { return (u & 0x7f800000u) == 0 && (u & 0x7fffffu); }

/* Rounds 16 inputs in software and compares with the hardware; with_ref
 * also compares with the table reference and checks flags and quantize. */
static void check_batch(const uint32_t *in, int with_ref) {
    float f[BATCH];
    uint16_t sh[BATCH], sb[BATCH], hh[BATCH], hb[BATCH];
    memcpy(f, in, sizeof f);
    for (int i = 0; i < BATCH; i++) {
        sh[i] = amp_float_to_half(f[i]);
        sb[i] = amp_float_to_bf16(f[i]);
    }
    if (hw_to_half) {
        hw_to_half(hh, f);
        if (memcmp(hh, sh, sizeof sh) != 0)
            for (int i = 0; i < BATCH; i++) expect(&c_h_hw, sh[i] == hh[i], in[i], sh[i], hh[i]);
        else
            c_h_hw.count += BATCH;
    }
    if (hw_to_bf16) {
        hw_to_bf16(hb, f);
        /* vcvtneps2bf16 reads FP32 denormal inputs as zero (DAZ) instead of
         * rounding them to BF16 subnormals, so they are excluded here and
         * checked against the reference instead (explicit sets). */
        for (int i = 0; i < BATCH; i++)
            if (!is_f32_denormal(in[i])) expect(&c_b_hw, sb[i] == hb[i], in[i], sb[i], hb[i]);
    }
    if (!with_ref) return;
    for (int i = 0; i < BATCH; i++) {
        uint16_t rh = ref_to_half(in[i]), rb = ref_to_bf16(in[i]);
        expect(&c_h_ref, sh[i] == rh, in[i], sh[i], rh);
        expect(&c_b_ref, sb[i] == rb, in[i], sb[i], rb);
        for (int bf = 0; bf < 2; bf++) {
            int dt = bf ? AMP_DTYPE_BF16 : AMP_DTYPE_F16;
            uint16_t want = bf ? rb : rh;
            unsigned fl = 99, fq = 99, wf = ref_flags(in[i], want, bf);
            uint16_t r = amp_round16(f[i], dt, &fl);
            /* got/expected printed as (bits << 8 | flags) */
            expect(&c_flags, r == want && fl == wf, in[i], (unsigned)r << 8 | fl,
                   (unsigned)want << 8 | wf);
            float q = amp_quantize(f[i], dt, &fq);
            float wq = bf ? amp_bf16_to_float(want) : amp_half_to_float(want);
            expect(&c_quant, u_of(q) == u_of(wq), in[i], u_of(q), u_of(wq));
            expect(&c_quant, fq == wf, in[i], fq, wf);
        }
        unsigned f32fl = 99;
        float q32 = amp_quantize(f[i], AMP_DTYPE_F32, &f32fl);
        expect(&c_quant, u_of(q32) == in[i] && f32fl == 0, in[i], u_of(q32), in[i]);
    }
}

typedef struct vec {
    uint32_t *v;
    size_t n, cap;
} vec;

static void push(vec *s, uint32_t u) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1 << 16;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    s->v[s->n++] = u;
}

/* u and its neighbours u-2..u+2, both signs. */
static void push_near(vec *s, uint32_t u) {
    for (int d = -2; d <= 2; d++) {
        uint32_t w = (u & 0x7fffffffu) + (uint32_t)d;
        push(s, w);
        push(s, w ^ 0x80000000u);
    }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t xorshift32(void) { /* xorshift64, upper half */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

static size_t build_explicit(vec *s) {
    for (uint32_t e = 0; e < 256; e++) {
        /* FP16 tie points of this binade: the dropped bits are exactly one
         * half unit. Normal halves drop 13 bits; binades 102..112 land in
         * the half subnormals and drop 126 - e bits of the significand. */
        uint32_t shift = (e >= 102 && e <= 112) ? 126 - e : 13;
        if (shift == 24) {
            push_near(s, e << 23); /* 2^-25 exactly: halfway between 0 and 2^-24 */
        } else {
            for (uint32_t k = 0; k < (1u << (23 - shift)); k++)
                push_near(s, (e << 23) | (k << shift) | (1u << (shift - 1)));
        }
        /* BF16 tie points: 16 dropped bits in every binade. */
        for (uint32_t k = 0; k < 128; k++) push_near(s, (e << 23) | (k << 16) | 0x8000u);
        /* binade edges */
        push_near(s, e << 23);
    }
    /* FP32 denormals: the smallest, the largest, random ones. */
    for (uint32_t u = 1; u <= 1024; u++) {
        push(s, u);
        push(s, u | 0x80000000u);
        push(s, 0x800000u - u);
        push(s, (0x800000u - u) | 0x80000000u);
    }
    for (int i = 0; i < (1 << 18); i++) push(s, xorshift32() & 0x807fffffu);
    /* zeros, infinities, NaNs with assorted payloads (quiet and signalling) */
    static const uint32_t payload[] = {1,        2,        0x1fff,   0x2000,   0x2001,
                                       0xffff,   0x10000,  0x12345,  0x3fffff, 0x400000,
                                       0x400001, 0x7fe000, 0x7fffff, 0x2aaaaa, 0x555555};
    push(s, 0);
    push(s, 0x80000000u);
    push(s, 0x7f800000u);
    push(s, 0xff800000u);
    for (size_t i = 0; i < sizeof payload / sizeof payload[0]; i++) {
        push(s, 0x7f800000u | payload[i]);
        push(s, 0xff800000u | payload[i]);
    }
    /* FP16: max 65504, 65520 (first value rounding to inf), 65536, 2^-24,
     * 2^-25, smallest normal 2^-14 and the subnormal tie just below it. */
    static const uint32_t edges[] = {0x477fe000u, 0x477ff000u, 0x47800000u, 0x33800000u,
                                     0x33000000u, 0x38800000u, 0x387fe000u, 0x7f7f0000u,
                                     0x7f7f8000u, 0x7f7fffffu, 0x00800000u, 0x007f8000u};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) push_near(s, edges[i]);
    while (s->n % BATCH) push(s, 0);
    return s->n;
}

static void check_explicit(void) {
    vec s = {0, 0, 0};
    size_t n = build_explicit(&s);
    for (size_t i = 0; i < n; i += BATCH) check_batch(s.v + i, 1);
    printf("explicit inputs: %zu (ties +-2 ulp in every binade, denormals, specials, edges)\n",
           n);
    free(s.v);
}

/* Random sign and mantissa; the exponent walks all 256 values in the first
 * two thirds and stays in the FP16 range (binades 100..143) in the rest. */
static void check_random(void) {
    uint32_t in[BATCH];
    unsigned long long n = 0, nb = 0;
    uint32_t e = 0;
    while (n < RANDOM_TOTAL) {
        int half_window = n >= RANDOM_TOTAL / 3 * 2;
        for (int i = 0; i < BATCH; i++) {
            uint32_t r = xorshift32();
            uint32_t ex = half_window ? 100 + (xorshift32() % 44) : (e++ & 0xff);
            in[i] = (r & 0x807fffffu) | (ex << 23);
        }
        check_batch(in, nb++ % REF_EVERY == 0);
        n += BATCH;
    }
    printf("random inputs: %llu (seeded xorshift64)\n", n);
}

/* ------------------------------------------------------- hand-picked flags */

static void picked(const char *what, float x, int dt, unsigned want_flags, uint16_t want_bits) {
    unsigned fl = 99;
    uint16_t r = amp_round16(x, dt, &fl);
    c_picked.count++;
    if (fl != want_flags || r != want_bits) {
        c_picked.bad++;
        fprintf(stderr,
                "MISMATCH hand-picked %s: %s(%.9g) gave bits 0x%04x flags %u, expected 0x%04x "
                "flags %u\n",
                what, dt == AMP_DTYPE_BF16 ? "bf16" : "fp16", (double)x, r, fl, want_bits,
                want_flags);
    }
}

static void check_picked(void) {
    const unsigned NZ = AMP_RF_NONZERO, UF = AMP_RF_UNDERFLOW, OF = AMP_RF_OVERFLOW;
    const int H = AMP_DTYPE_F16, B = AMP_DTYPE_BF16;
    picked("1e-8 flushes", 1e-8f, H, NZ | UF, 0x0000);
    picked("-1e-8 flushes to -0", -1e-8f, H, NZ | UF, 0x8000);
    picked("70000 overflows", 70000.0f, H, NZ | OF, 0x7c00);
    picked("-70000 overflows", -70000.0f, H, NZ | OF, 0xfc00);
    picked("65519 stays finite", 65519.0f, H, NZ, 0x7bff);
    picked("65520 overflows (tie to even)", 65520.0f, H, NZ | OF, 0x7c00);
    picked("65504 is the max", 65504.0f, H, NZ, 0x7bff);
    picked("2^-25 ties to even 0", ldexpf(1.0f, -25), H, NZ | UF, 0x0000);
    picked("just above 2^-25 rounds up", nextafterf(ldexpf(1.0f, -25), 1.0f), H, NZ, 0x0001);
    picked("2^-24 is the min subnormal", ldexpf(1.0f, -24), H, NZ, 0x0001);
    picked("3*2^-25 ties to even 2^-23", 3.0f * ldexpf(1.0f, -25), H, NZ, 0x0002);
    picked("largest subnormal tie rounds to min normal", f_of(0x387fe000u), H, NZ, 0x0400);
    picked("1 + 2^-11 ties to even 1", 1.0f + ldexpf(1.0f, -11), H, NZ, 0x3c00);
    picked("1 + 3*2^-11 ties to even 1 + 2^-9", 1.0f + 3.0f * ldexpf(1.0f, -11), H, NZ,
           0x3c02);
    picked("0 sets nothing", 0.0f, H, 0, 0x0000);
    picked("-0 sets nothing", -0.0f, H, 0, 0x8000);
    picked("NaN is nonzero only", f_of(0x7fc00000u), H, NZ, 0x7e00);
    picked("inf is not an overflow", f_of(0x7f800000u), H, NZ, 0x7c00);
    picked("1e-8 is fine in bf16", 1e-8f, B, NZ, 0x322c); /* 1e-8f = 0x322bcc77 */
    picked("70000 is fine in bf16", 70000.0f, B, NZ, 0x4789); /* 70144 */
    picked("FLT_MAX rounds to inf in bf16", f_of(0x7f7fffffu), B, NZ | OF, 0x7f80);
    picked("min FP32 denormal flushes in bf16", f_of(0x00000001u), B, NZ | UF, 0x0000);
    picked("FP32 denormal rounds to bf16 subnormal", f_of(0x00018000u), B, NZ, 0x0002);
    picked("1 + 2^-8 ties to even 1", 1.0f + ldexpf(1.0f, -8), B, NZ, 0x3f80);
    picked("0 sets nothing (bf16)", 0.0f, B, 0, 0x0000);
    picked("NaN is nonzero only (bf16)", f_of(0xff800001u), B, NZ, 0xffc0);

    /* quantize: F32 passes through; 16-bit widens the rounded value. */
    unsigned fl = 99;
    float q = amp_quantize(1e-8f, AMP_DTYPE_F32, &fl);
    c_picked.count++;
    if (q != 1e-8f || fl != 0) {
        c_picked.bad++;
        fprintf(stderr, "MISMATCH quantize F32 changed 1e-8 to %g flags %u\n", (double)q, fl);
    }
    q = amp_quantize(1.0f + ldexpf(1.0f, -10) + ldexpf(1.0f, -12), AMP_DTYPE_F16, &fl);
    c_picked.count++;
    if (q != 1.0f + ldexpf(1.0f, -10) || fl != AMP_RF_NONZERO) {
        c_picked.bad++;
        fprintf(stderr, "MISMATCH quantize F16 gave %.9g flags %u\n", (double)q, fl);
    }
}

/* ----------------------------------------------------------------- main */

int main(void) {
    ref_tables_init();
    hw_detect();
    check_widen_all();
    check_picked();
    check_explicit();
    check_random();

    check *all[] = {&c_widen_h, &c_widen_b, &c_widen_h_hw, &c_trip, &c_h_hw, &c_b_hw,
                    &c_h_ref,   &c_b_ref,   &c_flags,      &c_quant, &c_picked};
    unsigned long long bad = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        printf("%-30s %12llu checked %8llu mismatches%s\n", all[i]->name, all[i]->count,
               all[i]->bad, all[i]->count ? "" : "  (skipped)");
        bad += all[i]->bad;
    }
    if (bad) {
        fprintf(stderr, "FAIL: %llu mismatches\n", bad);
        return 1;
    }
    printf("PASS\n");
    return 0;
}

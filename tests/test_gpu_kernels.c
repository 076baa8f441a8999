/* CUDA backend ops against the CPU backend on the same random inputs. Output
 * buffers are poisoned with a NaN pattern first, so an element the GPU never
 * writes is caught. Exact (bitwise) equality where the math is element-wise
 * identical -- which for SGD/AdamW needs the CUDA sources compiled with
 * --fmad=false, as gcc does not contract a*b+c in ISO C mode -- and stated
 * tolerances where libm differs (erff/expf/logf) or reductions run in a
 * different order. The floating-point reductions (loss sum, sum of squares)
 * must also be repeatable: their fixed order (core/backend/kernels/reduce.h)
 * is checked bit for bit against the same function on the CPU, and the
 * sum of squares against a CPU replay of the kernel's whole reduction.
 * Skips (77) without a visible device, saying why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/convert.h"
#include "backend/kernels/reduce.h"
#include "backend/kernels/unscale.h"
#include "rng.h"
#include "expect.h"
#include "op_rows.h"
#if AMP_HAVE_CUDA
#include "backend/cuda/cuda_testing.h"
#endif

static amp_backend *cpu, *gpu;
static amp_rng rng;


#define POISON32 0x7fbadbadu /* a NaN no op produces */
#define POISON16 0xffffu     /* a NaN in both FP16 and BF16 */

#define FMAD_HINT " (GPU/CPU parity of a*b+c needs the CUDA sources built with --fmad=false)"

/* ---- helpers ------------------------------------------------------------------ */

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

static uint32_t bits32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_bits32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float *poisoned_f32(size_t n) {
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = from_bits32(POISON32);
    return p;
}

static float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)amp_rng_uniform(&rng);
}

static float *random_f32(size_t n, float lo, float hi) {
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = uniform(lo, hi);
    return p;
}

/* Copies host data into a fresh GPU buffer (a failure ends the op row, op_rows.h). */
static void *to_gpu(const void *host, size_t bytes) {
    void *d = gpu->ops->alloc(gpu, bytes);
    if (!d || gpu->ops->upload(gpu, d, host, bytes))
        amp_op_abort("GPU alloc/upload of %zu bytes: %s", bytes, gpu->err);
    return d;
}

/* Downloads a GPU buffer into a new host buffer and frees the GPU one. */
static void *from_gpu(void *dev, size_t bytes) {
    void *h = xmalloc(bytes);
    if (gpu->ops->download(gpu, h, dev, bytes)) amp_op_abort("GPU download: %s", gpu->err);
    gpu->ops->release(gpu, dev);
    return h;
}

/* Host copy of the same bytes, for the CPU backend (its memory is host). */
static void *dup_host(const void *src, size_t bytes) {
    void *p = xmalloc(bytes);
    memcpy(p, src, bytes);
    return p;
}

static void op_ok(int rc, amp_backend *be, const char *what) {
    EXPECT(rc == 0, "%s on %s: %s", what, be->ops->name, be->err);
}

enum { EXACT_BITS, EXACT_NAN_EQ, TOL };

/* Compares float arrays: bit-for-bit, bit-for-bit but any NaN == any NaN
 * (x86 and CUDA produce different NaN payloads from float arithmetic), or
 * |g - c| <= atol + rtol*|c|. */
static void cmp_f32(const char *what, const float *g, const float *c, size_t n, int mode,
                    double atol, double rtol) {
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        int ok;
        if (mode == EXACT_BITS)
            ok = bits32(g[i]) == bits32(c[i]);
        else if (isnan(g[i]) || isnan(c[i]))
            ok = isnan(g[i]) && isnan(c[i]) && bits32(g[i]) != POISON32;
        else if (mode == EXACT_NAN_EQ)
            ok = bits32(g[i]) == bits32(c[i]);
        else {
            double d = fabs((double)g[i] - (double)c[i]);
            ok = d <= atol + rtol * fabs((double)c[i]);
            if (d > worst) worst = d;
        }
        if (!ok && bad++ < 5)
            EXPECT(0, "%s[%zu]: gpu %.9g (0x%08x) cpu %.9g (0x%08x)", what, i, g[i],
                  (unsigned)bits32(g[i]), c[i], (unsigned)bits32(c[i]));
    }
    if (bad > 5) EXPECT(0, "%s: %d mismatches of %zu", what, bad, n);
    if (!bad) {
        if (mode == TOL)
            printf("ok  %-40s n=%zu max|gpu-cpu| %.2e\n", what, n, worst);
        else
            printf("ok  %-40s n=%zu exact\n", what, n);
    }
}

static void cmp_counts(const char *what, const amp_round_count *g, const amp_round_count *c) {
    EXPECT(g->nonzero == c->nonzero && g->underflow == c->underflow && g->overflow == c->overflow,
          "%s counts: gpu nz=%llu uf=%llu of=%llu, cpu nz=%llu uf=%llu of=%llu", what, g->nonzero,
          g->underflow, g->overflow, c->nonzero, c->underflow, c->overflow);
}

/* Values across every binade of FP32 with zeros, denormals, exact FP16/BF16
 * ties, inf, NaN and near-FLT_MAX values, so both underflow and overflow
 * counts fire for FP16 and for BF16. */
static float *wide_range_f32(size_t n) {
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float s = (amp_rng_next(&rng) & 1) ? -1.0f : 1.0f;
        switch (amp_rng_below(&rng, 16)) {
        case 0: p[i] = s * 0.0f; break;
        case 1: p[i] = s * INFINITY; break;
        case 2: p[i] = NAN; break;
        case 3: p[i] = s * from_bits32((uint32_t)amp_rng_below(&rng, 0x800000u)); break; /* denormal */
        case 4: p[i] = s * from_bits32(0x7f7fffffu - (uint32_t)amp_rng_below(&rng, 0x10000u)); break;
        case 5: p[i] = s * (1.0f + 0x1p-11f) * ldexpf(1.0f, (int)amp_rng_below(&rng, 40) - 24); break;
        case 6: p[i] = s * (1.0f + 0x1p-8f) * ldexpf(1.0f, (int)amp_rng_below(&rng, 40) - 20); break;
        default:
            p[i] = s * uniform(1.0f, 2.0f) * ldexpf(1.0f, (int)amp_rng_below(&rng, 277) - 149);
        }
    }
    return p;
}

/* ---- ops ------------------------------------------------------------------------ */

static void test_round(size_t n) {
    float *src = wide_range_f32(n);
    float *dsrc = to_gpu(src, n * sizeof(float));
    const amp_dtype dts[] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        amp_dtype dt = dts[d];
        for (int with_cnt = 0; with_cnt < 2; with_cnt++) {
            uint16_t *pz = xmalloc(n * 2);
            for (size_t i = 0; i < n; i++) pz[i] = POISON16;
            uint16_t *cdst = dup_host(pz, n * 2);
            void *gdst = to_gpu(pz, n * 2);
            /* Counts accumulate: start from nonzero values. */
            amp_round_count c0 = {5, 7, 11}, ccnt = c0;
            amp_round_count *gcnt = to_gpu(&c0, sizeof c0);
            op_ok(cpu->ops->round(cpu, cdst, dt, src, n, with_cnt ? &ccnt : NULL), cpu, "round");
            op_ok(gpu->ops->round(gpu, gdst, dt, dsrc, n, with_cnt ? gcnt : NULL), gpu, "round");
            uint16_t *gh = from_gpu(gdst, n * 2);
            amp_round_count *gc = from_gpu(gcnt, sizeof c0);
            int bad = 0;
            for (size_t i = 0; i < n; i++)
                if (gh[i] != cdst[i] && bad++ < 5)
                    EXPECT(0, "round %d [%zu]: x=%.9g gpu 0x%04x cpu 0x%04x", (int)dt, i, src[i],
                          gh[i], cdst[i]);
            if (with_cnt) {
                cmp_counts(dt == AMP_DTYPE_F16 ? "round f16" : "round bf16", gc, &ccnt);
                /* The data must exercise both counters (a test that can fail). */
                EXPECT(ccnt.underflow > c0.underflow && ccnt.overflow > c0.overflow,
                      "round test data does not trigger underflow and overflow");
            } else {
                EXPECT(memcmp(gc, &c0, sizeof c0) == 0, "round with cnt=NULL touched counts");
            }
            if (!bad)
                printf("ok  round %-4s cnt=%-3s n=%zu exact (uf %llu of %llu nz %llu)\n",
                       dt == AMP_DTYPE_F16 ? "f16" : "bf16", with_cnt ? "yes" : "no", n,
                       ccnt.underflow - c0.underflow, ccnt.overflow - c0.overflow,
                       ccnt.nonzero - c0.nonzero);
            free(pz);
            free(cdst);
            free(gh);
            free(gc);
        }
    }
    /* F32: a plain copy. */
    float *cd = poisoned_f32(n);
    float *gd = to_gpu(cd, n * sizeof(float));
    op_ok(cpu->ops->round(cpu, cd, AMP_DTYPE_F32, src, n, NULL), cpu, "round f32");
    op_ok(gpu->ops->round(gpu, gd, AMP_DTYPE_F32, dsrc, n, NULL), gpu, "round f32");
    float *gh = from_gpu(gd, n * sizeof(float));
    cmp_f32("round f32 (copy)", gh, cd, n, EXACT_BITS, 0, 0);
    free(cd);
    free(gh);
    gpu->ops->release(gpu, dsrc);
    free(src);
}

static void test_quantize(size_t n) {
    float *src = wide_range_f32(n);
    float *dsrc = to_gpu(src, n * sizeof(float));
    float *base = random_f32(n, -4.0f, 4.0f);
    const amp_dtype dts[] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 3; d++) {
        for (int acc = 0; acc < 2; acc++) {
            float *cd = acc ? dup_host(base, n * sizeof(float)) : poisoned_f32(n);
            float *gd = to_gpu(cd, n * sizeof(float));
            amp_round_count c0 = {1, 2, 3}, ccnt = c0;
            amp_round_count *gcnt = to_gpu(&c0, sizeof c0);
            op_ok(cpu->ops->quantize(cpu, cd, src, n, dts[d], &ccnt, acc), cpu, "quantize");
            op_ok(gpu->ops->quantize(gpu, gd, dsrc, n, dts[d], gcnt, acc), gpu, "quantize");
            float *gh = from_gpu(gd, n * sizeof(float));
            amp_round_count *gc = from_gpu(gcnt, sizeof c0);
            char what[64];
            snprintf(what, sizeof what, "quantize dt=%d acc=%d", (int)dts[d], acc);
            /* acc adds inf + -inf: NaN payloads differ between x86 and CUDA. */
            cmp_f32(what, gh, cd, n, acc ? EXACT_NAN_EQ : EXACT_BITS, 0, 0);
            cmp_counts(what, gc, &ccnt);
            free(cd);
            free(gh);
            free(gc);
        }
    }
    free(base);
    gpu->ops->release(gpu, dsrc);
    free(src);
}

static void test_widen(void) {
    size_t n = 65536; /* every 16-bit pattern: subnormals, inf, NaN payloads */
    uint16_t *src = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) src[i] = (uint16_t)i;
    void *dsrc = to_gpu(src, n * 2);
    const amp_dtype dts[] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        float *cd = poisoned_f32(n);
        float *gd = to_gpu(cd, n * sizeof(float));
        op_ok(cpu->ops->widen(cpu, cd, src, dts[d], n), cpu, "widen");
        op_ok(gpu->ops->widen(gpu, gd, dsrc, dts[d], n), gpu, "widen");
        float *gh = from_gpu(gd, n * sizeof(float));
        cmp_f32(dts[d] == AMP_DTYPE_F16 ? "widen f16 (all patterns)" : "widen bf16 (all patterns)",
                gh, cd, n, EXACT_BITS, 0, 0);
        free(cd);
        free(gh);
    }
    gpu->ops->release(gpu, dsrc);
    free(src);
}

static void test_col_sum(int rows, int cols) {
    size_t n = (size_t)rows * cols;
    float *y = random_f32(n, -3.0f, 3.0f);

    /* Same summation order (rows in sequence per column): exact. */
    float *cs = poisoned_f32((size_t)cols);
    float *gs = to_gpu(cs, (size_t)cols * sizeof(float));
    float *gin = to_gpu(y, n * sizeof(float));
    op_ok(cpu->ops->col_sum(cpu, cs, y, rows, cols), cpu, "col_sum");
    op_ok(gpu->ops->col_sum(gpu, gs, gin, rows, cols), gpu, "col_sum");
    float *gsh = from_gpu(gs, (size_t)cols * sizeof(float));
    cmp_f32("col_sum", gsh, cs, (size_t)cols, EXACT_BITS, 0, 0);
    gpu->ops->release(gpu, gin);
    free(y);
    free(cs);
    free(gsh);
}

static void test_act(size_t n) {
    float *in = random_f32(n, -6.0f, 6.0f), *da = random_f32(n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i += 97) in[i] = 0.0f; /* relu' at exactly 0 */
    float *gin = to_gpu(in, n * sizeof(float)), *gda = to_gpu(da, n * sizeof(float));
    for (int act = AMP_ACT_NONE; act <= AMP_ACT_GELU_TANH; act++) {
        /* GELU goes through expf (act.h's erf takes one too): CUDA's is
         * within 2 ulp, glibc's within 1; |x| <= 6 keeps |gelu| <= 6, so 1e-6 absolute covers the
         * cancellation in 1 + erf(x/sqrt2) for negative x. */
        int mode = act >= AMP_ACT_GELU ? TOL : EXACT_BITS;
        char what[64];
        float *co = poisoned_f32(n);
        float *go = to_gpu(co, n * sizeof(float));
        op_ok(cpu->ops->act_forward(cpu, co, in, n, (amp_act)act), cpu, "act_forward");
        op_ok(gpu->ops->act_forward(gpu, go, gin, n, (amp_act)act), gpu, "act_forward");
        float *goh = from_gpu(go, n * sizeof(float));
        snprintf(what, sizeof what, "act_forward act=%d", act);
        cmp_f32(what, goh, co, n, mode, 1e-6, 1e-5);

        /* In place (out == in). */
        float *cip = dup_host(in, n * sizeof(float));
        float *gip = to_gpu(in, n * sizeof(float));
        op_ok(cpu->ops->act_forward(cpu, cip, cip, n, (amp_act)act), cpu, "act_forward");
        op_ok(gpu->ops->act_forward(gpu, gip, gip, n, (amp_act)act), gpu, "act_forward");
        float *giph = from_gpu(gip, n * sizeof(float));
        snprintf(what, sizeof what, "act_forward in-place act=%d", act);
        cmp_f32(what, giph, cip, n, mode, 1e-6, 1e-5);

        float *cdz = poisoned_f32(n);
        float *gdz = to_gpu(cdz, n * sizeof(float));
        op_ok(cpu->ops->act_backward(cpu, cdz, da, in, n, (amp_act)act), cpu, "act_backward");
        op_ok(gpu->ops->act_backward(gpu, gdz, gda, gin, n, (amp_act)act), gpu, "act_backward");
        float *gdzh = from_gpu(gdz, n * sizeof(float));
        snprintf(what, sizeof what, "act_backward act=%d", act);
        cmp_f32(what, gdzh, cdz, n, mode, 1e-6, 1e-5);
        free(co);
        free(goh);
        free(cip);
        free(giph);
        free(cdz);
        free(gdzh);
    }
    gpu->ops->release(gpu, gin);
    gpu->ops->release(gpu, gda);
    free(in);
    free(da);
}

static void test_softmax_xent(int rows, int cols, float grad_scale) {
    size_t n = (size_t)rows * cols;
    float *logits = random_f32(n, -8.0f, 8.0f);
    int32_t *labels = xmalloc((size_t)rows * sizeof(int32_t));
    for (int r = 0; r < rows; r++) labels[r] = (int32_t)amp_rng_below(&rng, (uint64_t)cols);
    /* A tie for the max: the first index must win on both. */
    if (cols > 3) logits[0] = logits[2] = 9.0f;
    float *gl = to_gpu(logits, n * sizeof(float));
    int32_t *glab = to_gpu(labels, (size_t)rows * sizeof(int32_t));
    for (int with_grad = 0; with_grad < 2; with_grad++) {
        amp_step_stats s0;
        memset(&s0, 0, sizeof s0);
        s0.loss_sum = 1.5;
        s0.correct = 3;
        s0.nonfinite = 42; /* untouched by softmax_xent */
        amp_step_stats cs = s0;
        amp_step_stats *gs = to_gpu(&s0, sizeof s0);
        float *cd = with_grad ? poisoned_f32(n) : NULL;
        float *gd = with_grad ? to_gpu(cd, n * sizeof(float)) : NULL;
        op_ok(cpu->ops->softmax_xent(cpu, cd, &cs, logits, labels, rows, cols, grad_scale), cpu,
              "softmax_xent");
        op_ok(gpu->ops->softmax_xent(gpu, gd, gs, gl, glab, rows, cols, grad_scale), gpu,
              "softmax_xent");
        amp_step_stats *gsh = from_gpu(gs, sizeof s0);
        char what[96];
        snprintf(what, sizeof what, "softmax_xent %dx%d gs=%g grad=%d", rows, cols, grad_scale,
                 with_grad);
        /* Repeatable: the same inputs again give the same bits (the block
         * partials are added in a fixed order, not by atomics). */
        for (int rep = 0; rep < 3; rep++) {
            amp_step_stats *gs2 = to_gpu(&s0, sizeof s0);
            op_ok(gpu->ops->softmax_xent(gpu, gd, gs2, gl, glab, rows, cols, grad_scale), gpu,
                  "softmax_xent");
            amp_step_stats *g2 = from_gpu(gs2, sizeof s0);
            EXPECT(memcmp(&g2->loss_sum, &gsh->loss_sum, sizeof(double)) == 0,
                   "%s: run %d gave loss_sum %.17g, the first run %.17g", what, rep + 2,
                   g2->loss_sum, gsh->loss_sum);
            free(g2);
        }
        /* argmax is comparisons only: exact. */
        EXPECT(gsh->correct == cs.correct, "%s correct: gpu %llu cpu %llu", what, gsh->correct,
              cs.correct);
        EXPECT(gsh->nonfinite == 42, "%s touched stats->nonfinite", what);
        /* Per-row losses differ by a few ulp of lse (expf/logf; lse < 20 so
         * an ulp is < 2e-6), and the double sums run in another order. */
        double dl = fabs(gsh->loss_sum - cs.loss_sum);
        EXPECT(dl <= 1e-5 * fabs(cs.loss_sum) + 8e-6 * rows, "%s loss_sum: gpu %.12g cpu %.12g",
              what, gsh->loss_sum, cs.loss_sum);
        if (with_grad) {
            float *gdh = from_gpu(gd, n * sizeof(float));
            /* p = expf(l - lse): relative error ~ the lse error plus 2 ulp;
             * p <= 1, so an absolute 4e-6 (times grad_scale) covers p - 1. */
            cmp_f32(what, gdh, cd, n, TOL, 4e-6 * fabs(grad_scale), 1e-5);
            free(gdh);
            free(cd);
        }
        printf("    %s loss_sum gpu %.9f cpu %.9f correct %llu\n", what, gsh->loss_sum,
               cs.loss_sum, cs.correct);
        free(gsh);
    }
    gpu->ops->release(gpu, gl);
    gpu->ops->release(gpu, glab);
    free(logits);
    free(labels);
}

/* amp_block_reduce's tree for one warp of 32 lanes: __shfl_down_sync(v, o)
 * gives lane l the value of lane l+o (its own value past lane 31), and every
 * lane adds at once; lane 0 ends with the warp's result. */
static double replay_warp(double *v) {
    for (int o = 16; o > 0; o >>= 1) {
        double nv[32];
        for (int l = 0; l < 32; l++) nv[l] = v[l] + (l + o < 32 ? v[l + o] : v[l]);
        memcpy(v, nv, sizeof nv);
    }
    return v[0];
}

/* The sum of squares amp_k_unscale_check computes for g[n] (host, before
 * unscaling), replayed on the CPU: 256-thread blocks, amp_reduce_blocks(n)
 * of them, each thread summing its grid-stride elements in order, the
 * block's shuffle tree (warps, then the warp results in warp 0), and the
 * block partials added by amp_sum_partials. */
#define REPLAY_BLOCK 256
static double replay_sumsq(const float *g, size_t n, float inv_scale) {
    unsigned blocks = amp_reduce_blocks(n, REPLAY_BLOCK);
    size_t stride = (size_t)blocks * REPLAY_BLOCK;
    double *partials = xmalloc(blocks * sizeof(double));
    for (unsigned b = 0; b < blocks; b++) {
        double warp_sums[32] = {0};
        for (int w = 0; w < REPLAY_BLOCK / 32; w++) {
            double lane[32];
            for (int l = 0; l < 32; l++) {
                double s = 0.0;
                float mx = 0.0f;
                for (size_t i = (size_t)b * REPLAY_BLOCK + (size_t)w * 32 + (size_t)l; i < n;
                     i += stride) {
                    float v = g[i];
                    amp_unscale_element(&v, inv_scale, &s, &mx);
                }
                lane[l] = s;
            }
            warp_sums[w] = replay_warp(lane);
        }
        partials[b] = replay_warp(warp_sums); /* lanes past the warp count hold 0 */
    }
    double total = amp_sum_partials(partials, blocks);
    free(partials);
    return total;
}

/* The device adds given partials with reduce.h's fixed order: the same bits
 * as the very function run here. Partials of mixed magnitudes and signs, so
 * another order would round differently. */
static void test_sum_partials(void) {
#if AMP_HAVE_CUDA
    static const unsigned sizes[] = {0, 1, 2, 7, 33, 257, 1000, AMP_REDUCE_MAX_BLOCKS};
    double *p = xmalloc(AMP_REDUCE_MAX_BLOCKS * sizeof(double));
    int same = 0, order_matters = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned n = sizes[k];
        for (unsigned i = 0; i < n; i++)
            p[i] = ldexp(uniform(-1.0f, 1.0f), (int)amp_rng_below(&rng, 80) - 40);
        double got = 0.0, want = amp_sum_partials(p, n);
        int rc = amp_cuda_test_sum_partials(gpu, &got, p, n);
        op_ok(rc, gpu, "amp_cuda_test_sum_partials");
        if (rc != 0) break;
        EXPECT(memcmp(&got, &want, sizeof got) == 0,
               "sum of %u partials: device %.17g, amp_sum_partials on the CPU %.17g", n, got, want);
        same += memcmp(&got, &want, sizeof got) == 0;
        double rev = 0.0;
        for (unsigned i = n; i-- > 0;) rev += p[i];
        order_matters += rev != want;
    }
    EXPECT(order_matters > 0, "no size had an order-dependent sum: the check proves nothing");
    printf("ok  fixed-order sum of partials: device == CPU for %d sizes (%d of them differ when "
           "added in reverse)\n", same, order_matters);
    free(p);
#endif
}

static void test_unscale_check(size_t n, float inv_scale, int with_nonfinite, float maxabs0) {
    float *g = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float m = ldexpf(uniform(-1.0f, 1.0f), (int)amp_rng_below(&rng, 40) - 10);
        g[i] = m;
        if (with_nonfinite && amp_rng_below(&rng, 5000) == 0) {
            uint64_t k = amp_rng_below(&rng, 3);
            g[i] = k == 0 ? INFINITY : k == 1 ? -INFINITY : NAN;
        }
    }
    amp_step_stats s0;
    memset(&s0, 0, sizeof s0);
    s0.nonfinite = 2;
    s0.checked = 10;
    s0.sumsq = 3.0;
    s0.maxabs = maxabs0;
    s0.loss_sum = 7.0; /* untouched by unscale_check */
    amp_step_stats cs = s0;
    float *gg = to_gpu(g, n * sizeof(float));
    amp_step_stats *gs = to_gpu(&s0, sizeof s0);
    /* Before the CPU op unscales g in place. */
    double want = s0.sumsq + replay_sumsq(g, n, inv_scale);
    op_ok(cpu->ops->unscale_check(cpu, g, &cs, n, inv_scale), cpu, "unscale_check");
    op_ok(gpu->ops->unscale_check(gpu, gg, gs, n, inv_scale), gpu, "unscale_check");
    float *gh = from_gpu(gg, n * sizeof(float));
    amp_step_stats *gsh = from_gpu(gs, sizeof s0);
    char what[96];
    snprintf(what, sizeof what, "unscale_check inv=%g nonfinite=%d max0=%g", inv_scale,
             with_nonfinite, maxabs0);
    /* Non-finite elements are left as they are: bitwise, NaN payload too. */
    cmp_f32(what, gh, g, n, EXACT_BITS, 0, 0);
    EXPECT(gsh->nonfinite == cs.nonfinite && gsh->checked == cs.checked,
          "%s: nonfinite gpu %llu cpu %llu, checked gpu %llu cpu %llu", what, gsh->nonfinite,
          cs.nonfinite, gsh->checked, cs.checked);
    EXPECT(!with_nonfinite || cs.nonfinite > s0.nonfinite, "%s: test data has no inf/NaN", what);
    /* max is order-independent: exact. */
    EXPECT(bits32(gsh->maxabs) == bits32(cs.maxabs), "%s maxabs: gpu %.9g cpu %.9g", what,
          gsh->maxabs, cs.maxabs);
    /* Each square is exact in double; only the summation order differs:
     * |err| <= n * 2^-53 * sum, far below 1e-9 relative. */
    EXPECT(fabs(gsh->sumsq - cs.sumsq) <= 1e-9 * cs.sumsq, "%s sumsq: gpu %.17g cpu %.17g", what,
          gsh->sumsq, cs.sumsq);
    /* And the order is the kernel's fixed one: replayed on the CPU, bit for bit. */
    EXPECT(memcmp(&gsh->sumsq, &want, sizeof want) == 0,
           "%s sumsq: gpu %.17g, the CPU replay of the kernel's fixed order %.17g", what,
           gsh->sumsq, want);
    EXPECT(gsh->loss_sum == 7.0, "%s touched stats->loss_sum", what);
    printf("    %s: nonfinite %llu maxabs %g sumsq %.6g\n", what, cs.nonfinite, cs.maxabs,
           cs.sumsq);
    free(g);
    free(gh);
    free(gsh);
}

static void test_scale(size_t n) {
    float *x = random_f32(n, -100.0f, 100.0f);
    float *gx = to_gpu(x, n * sizeof(float));
    op_ok(cpu->ops->scale(cpu, x, n, 0.125f * 3.0f), cpu, "scale");
    op_ok(gpu->ops->scale(gpu, gx, n, 0.125f * 3.0f), gpu, "scale");
    float *gh = from_gpu(gx, n * sizeof(float));
    cmp_f32("scale", gh, x, n, EXACT_BITS, 0, 0);
    free(x);
    free(gh);
}

static void test_sgd(size_t n, float momentum, float wd) {
    float *w = random_f32(n, -1.0f, 1.0f), *mom = xmalloc(n * sizeof(float));
    memset(mom, 0, n * sizeof(float));
    float *gw = to_gpu(w, n * sizeof(float)), *gm = to_gpu(mom, n * sizeof(float));
    for (int step = 0; step < 3; step++) {
        float *g = random_f32(n, -0.5f, 0.5f);
        float *gg = to_gpu(g, n * sizeof(float));
        op_ok(cpu->ops->optim_step(cpu,
                                   &(amp_optim_step){0, 0.05f, momentum, wd, 0.0f, 0.0f, 0.0f, 0},
                                   w, mom, NULL, g, n),
              cpu, "sgd_step");
        op_ok(gpu->ops->optim_step(gpu,
                                   &(amp_optim_step){0, 0.05f, momentum, wd, 0.0f, 0.0f, 0.0f, 0},
                                   gw, gm, NULL, gg, n),
              gpu, "sgd_step");
        gpu->ops->release(gpu, gg);
        free(g);
    }
    float *gwh = from_gpu(gw, n * sizeof(float)), *gmh = from_gpu(gm, n * sizeof(float));
    char what[96];
    int before = amp_test_failures;
    snprintf(what, sizeof what, "sgd w (mom=%g wd=%g)", momentum, wd);
    cmp_f32(what, gwh, w, n, EXACT_BITS, 0, 0);
    snprintf(what, sizeof what, "sgd mom (mom=%g wd=%g)", momentum, wd);
    cmp_f32(what, gmh, mom, n, EXACT_BITS, 0, 0);
    if (amp_test_failures != before) fprintf(stderr, "hint:%s\n", FMAD_HINT);
    free(w);
    free(mom);
    free(gwh);
    free(gmh);
}

static void test_adamw(size_t n) {
    float *w = random_f32(n, -1.0f, 1.0f);
    float *m = xmalloc(n * sizeof(float)), *v = xmalloc(n * sizeof(float));
    memset(m, 0, n * sizeof(float));
    memset(v, 0, n * sizeof(float));
    float *gw = to_gpu(w, n * sizeof(float)), *gm = to_gpu(m, n * sizeof(float));
    float *gv = to_gpu(v, n * sizeof(float));
    for (int64_t t = 1; t <= 3; t++) {
        float *g = random_f32(n, -0.5f, 0.5f);
        float *gg = to_gpu(g, n * sizeof(float));
        op_ok(cpu->ops->optim_step(cpu,
                                   &(amp_optim_step){1, 1e-3f, 0.0f, 0.01f, 0.9f, 0.999f, 1e-8f, t},
                                   w, m, v, g, n),
              cpu, "adamw_step");
        op_ok(gpu->ops->optim_step(gpu,
                                   &(amp_optim_step){1, 1e-3f, 0.0f, 0.01f, 0.9f, 0.999f, 1e-8f, t},
                                   gw, gm, gv, gg, n),
              gpu, "adamw_step");
        gpu->ops->release(gpu, gg);
        free(g);
    }
    float *gwh = from_gpu(gw, n * sizeof(float)), *gmh = from_gpu(gm, n * sizeof(float));
    float *gvh = from_gpu(gv, n * sizeof(float));
    int before = amp_test_failures;
    cmp_f32("adamw w", gwh, w, n, EXACT_BITS, 0, 0);
    cmp_f32("adamw m", gmh, m, n, EXACT_BITS, 0, 0);
    cmp_f32("adamw v", gvh, v, n, EXACT_BITS, 0, 0);
    if (amp_test_failures != before) fprintf(stderr, "hint:%s\n", FMAD_HINT);
    free(w);
    free(m);
    free(v);
    free(gwh);
    free(gmh);
    free(gvh);
}

static void test_memory(void) {
    size_t n = 1000;
    float *x = random_f32(n, -1.0f, 1.0f);
    float *d = to_gpu(x, n * sizeof(float));
    float *back = xmalloc(n * sizeof(float));
    op_ok(gpu->ops->download(gpu, back, d, n * sizeof(float)), gpu, "download");
    EXPECT(memcmp(back, x, n * sizeof(float)) == 0, "upload/download round trip differs");
    op_ok(gpu->ops->zero(gpu, d + 10, 100 * sizeof(float)), gpu, "zero");
    op_ok(gpu->ops->download(gpu, back, d, n * sizeof(float)), gpu, "download");
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= bits32(back[i]) == ((i >= 10 && i < 110) ? 0u : bits32(x[i]));
    EXPECT(ok, "zero() wrote outside [10, 110) or missed part of it");
    EXPECT(gpu->ops->device_bytes_used(gpu) > 0, "device_bytes_used is 0 on the GPU");
    gpu->ops->release(gpu, d);
    free(x);
    free(back);
    if (ok) printf("ok  upload/download/zero, device_bytes_used %zu\n",
                   gpu->ops->device_bytes_used(gpu));
}

int main(void) {
    if (!amp_backend_cuda_available()) {
        printf("no CUDA device visible (%s): skipped\n", amp_backend_cuda_unavailable_reason());
        return 77;
    }
    char err[512];
    gpu = amp_backend_cuda_create(err, sizeof err);
    if (!gpu) {
        fprintf(stderr, "FAIL: amp_backend_cuda_create: %s\n", err);
        return 1;
    }
    cpu = amp_backend_cpu_create(err, sizeof err);
    if (!cpu) {
        fprintf(stderr, "FAIL: amp_backend_cpu_create: %s\n", err);
        return 1;
    }
    amp_rng_seed(&rng, 7);

    /* Large n also exercises the grid-stride loops (the grid is capped at
     * 8 blocks per SM) and many per-block atomics. */
    const size_t big = (1u << 21) + 17;
    AMP_OP_CALL(test_memory());
    AMP_OP_CALL(test_sum_partials());
    AMP_OP_CALL(test_round(big));
    AMP_OP_CALL(test_round(1000));
    AMP_OP_CALL(test_quantize(big));
    AMP_OP_CALL(test_widen());
    AMP_OP_CALL(test_col_sum(1000, 300));
    AMP_OP_CALL(test_col_sum(3, 1));
    AMP_OP_CALL(test_act(100003));
    AMP_OP_CALL(test_softmax_xent(1000, 10, 1.0f / 1000.0f));
    AMP_OP_CALL(test_softmax_xent(64, 1000, 65536.0f / 64.0f));
    AMP_OP_CALL(test_softmax_xent(1, 1, 1.0f));
    AMP_OP_CALL(test_unscale_check(big, 1.0f / 65536.0f, 1, 0.0f));
    AMP_OP_CALL(test_unscale_check(big, 1.0f, 0, 0.0f));
    AMP_OP_CALL(test_unscale_check(1000, 0.5f, 0, 1e30f));
    /* inv_scale 2^100 overflows the larger gradients: both must count them */
    AMP_OP_CALL(test_unscale_check(big, 0x1p100f, 0, 0.0f));
    AMP_OP_CALL(test_scale(big));
    AMP_OP_CALL(test_sgd(100003, 0.9f, 1e-4f));
    AMP_OP_CALL(test_sgd(100003, 0.0f, 0.0f));
    AMP_OP_CALL(test_adamw(100003));

    gpu->ops->destroy(gpu);
    cpu->ops->destroy(cpu);
    return amp_op_finish("test_gpu_kernels");
}

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
#include "gpu_rows.h"
#if AMP_HAVE_CUDA
#include "backend/cuda/cuda_testing.h"
#endif

#define POISON16 0xffffu /* a NaN in both FP16 and BF16 */

#define FMAD_HINT " (GPU/CPU parity of a*b+c needs the CUDA sources built with --fmad=false)"

static const rows_tol NAN_EQ = {ROWS_NAN_EQ, 0, 0};

static float *poisoned_f32(size_t n) { return rows_poisoned(n * sizeof(float)); }

static void cmp_f32(const char *what, const float *g, const float *c, size_t n, rows_tol tol) {
    rows_cmp(what, g, c, n, AMP_DTYPE_F32, tol);
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
    float *p = rows_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float s = (amp_rng_next(&rows_rng) & 1) ? -1.0f : 1.0f;
        switch (amp_rng_below(&rows_rng, 16)) {
        case 0: p[i] = s * 0.0f; break;
        case 1: p[i] = s * INFINITY; break;
        case 2: p[i] = NAN; break;
        case 3:
            p[i] = s * rows_from_bits((uint32_t)amp_rng_below(&rows_rng, 0x800000u));
            break; /* denormal */
        case 4:
            p[i] = s * rows_from_bits(0x7f7fffffu - (uint32_t)amp_rng_below(&rows_rng, 0x10000u));
            break;
        case 5:
            p[i] = s * (1.0f + 0x1p-11f) * ldexpf(1.0f, (int)amp_rng_below(&rows_rng, 40) - 24);
            break;
        case 6:
            p[i] = s * (1.0f + 0x1p-8f) * ldexpf(1.0f, (int)amp_rng_below(&rows_rng, 40) - 20);
            break;
        default:
            p[i] = s * rows_uniform(1.0f, 2.0f) *
                   ldexpf(1.0f, (int)amp_rng_below(&rows_rng, 277) - 149);
        }
    }
    return p;
}

/* ---- ops ------------------------------------------------------------------------ */

static void test_round(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float *src = wide_range_f32(n);
    float *dsrc = rows_to_dev(src, n * sizeof(float));
    const amp_dtype dts[] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        amp_dtype dt = dts[d];
        for (int with_cnt = 0; with_cnt < 2; with_cnt++) {
            uint16_t *pz = rows_alloc(n * 2);
            for (size_t i = 0; i < n; i++) pz[i] = POISON16;
            uint16_t *cdst = rows_dup(pz, n * 2);
            void *gdst = rows_to_dev(pz, n * 2);
            /* Counts accumulate: start from nonzero values. */
            amp_round_count c0 = {5, 7, 11}, ccnt = c0;
            amp_round_count *gcnt = rows_to_dev(&c0, sizeof c0);
            rows_ok(rows_cpu->ops->round(rows_cpu, cdst, dt, src, n, with_cnt ? &ccnt : NULL),
                    rows_cpu, "round");
            rows_ok(rows_dev->ops->round(rows_dev, gdst, dt, dsrc, n, with_cnt ? gcnt : NULL),
                    rows_dev, "round");
            uint16_t *gh = rows_take_dev(gdst, n * 2);
            amp_round_count *gc = rows_take_dev(gcnt, sizeof c0);
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
    float *gd = rows_to_dev(cd, n * sizeof(float));
    rows_ok(rows_cpu->ops->round(rows_cpu, cd, AMP_DTYPE_F32, src, n, NULL), rows_cpu, "round f32");
    rows_ok(rows_dev->ops->round(rows_dev, gd, AMP_DTYPE_F32, dsrc, n, NULL), rows_dev,
            "round f32");
    float *gh = rows_take_dev(gd, n * sizeof(float));
    cmp_f32("round f32 (copy)", gh, cd, n, ROWS_EXACT);
    free(cd);
    free(gh);
    rows_release(dsrc);
    free(src);
}

static void test_quantize(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float *src = wide_range_f32(n);
    float *dsrc = rows_to_dev(src, n * sizeof(float));
    float *base = rows_random(n, -4.0f, 4.0f);
    const amp_dtype dts[] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 3; d++) {
        for (int acc = 0; acc < 2; acc++) {
            float *cd = acc ? rows_dup(base, n * sizeof(float)) : poisoned_f32(n);
            float *gd = rows_to_dev(cd, n * sizeof(float));
            amp_round_count c0 = {1, 2, 3}, ccnt = c0;
            amp_round_count *gcnt = rows_to_dev(&c0, sizeof c0);
            rows_ok(rows_cpu->ops->quantize(rows_cpu, cd, src, n, dts[d], &ccnt, acc), rows_cpu,
                    "quantize");
            rows_ok(rows_dev->ops->quantize(rows_dev, gd, dsrc, n, dts[d], gcnt, acc), rows_dev,
                    "quantize");
            float *gh = rows_take_dev(gd, n * sizeof(float));
            amp_round_count *gc = rows_take_dev(gcnt, sizeof c0);
            char what[64];
            snprintf(what, sizeof what, "quantize dt=%d acc=%d", (int)dts[d], acc);
            /* acc adds inf + -inf: NaN payloads differ between x86 and CUDA. */
            cmp_f32(what, gh, cd, n, acc ? NAN_EQ : ROWS_EXACT);
            cmp_counts(what, gc, &ccnt);
            free(cd);
            free(gh);
            free(gc);
        }
    }
    free(base);
    rows_release(dsrc);
    free(src);
}

static void test_widen(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0]; /* 65536: every 16-bit pattern: subnormals, inf, NaN payloads */
    uint16_t *src = rows_alloc(n * 2);
    for (size_t i = 0; i < n; i++) src[i] = (uint16_t)i;
    void *dsrc = rows_to_dev(src, n * 2);
    const amp_dtype dts[] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        float *cd = poisoned_f32(n);
        float *gd = rows_to_dev(cd, n * sizeof(float));
        rows_ok(rows_cpu->ops->widen(rows_cpu, cd, src, dts[d], n), rows_cpu, "widen");
        rows_ok(rows_dev->ops->widen(rows_dev, gd, dsrc, dts[d], n), rows_dev, "widen");
        float *gh = rows_take_dev(gd, n * sizeof(float));
        cmp_f32(dts[d] == AMP_DTYPE_F16 ? "widen f16 (all patterns)" : "widen bf16 (all patterns)",
                gh, cd, n, ROWS_EXACT);
        free(cd);
        free(gh);
    }
    rows_release(dsrc);
    free(src);
}

static void test_col_sum(const amp_gpu_row *r) {
    int rows = r->shape[0], cols = r->shape[1];
    size_t n = (size_t)rows * cols;
    float *y = rows_random(n, -3.0f, 3.0f);

    /* Same summation order (rows in sequence per column): exact. */
    float *cs = poisoned_f32((size_t)cols);
    float *gs = rows_to_dev(cs, (size_t)cols * sizeof(float));
    float *gin = rows_to_dev(y, n * sizeof(float));
    rows_ok(rows_cpu->ops->col_sum(rows_cpu, cs, y, rows, cols), rows_cpu, "col_sum");
    rows_ok(rows_dev->ops->col_sum(rows_dev, gs, gin, rows, cols), rows_dev, "col_sum");
    float *gsh = rows_take_dev(gs, (size_t)cols * sizeof(float));
    cmp_f32("col_sum", gsh, cs, (size_t)cols, ROWS_EXACT);
    rows_release(gin);
    free(y);
    free(cs);
    free(gsh);
}

static void test_act(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float *in = rows_random(n, -6.0f, 6.0f), *da = rows_random(n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i += 97) in[i] = 0.0f; /* relu' at exactly 0 */
    float *gin = rows_to_dev(in, n * sizeof(float)), *gda = rows_to_dev(da, n * sizeof(float));
    for (int act = AMP_ACT_NONE; act <= AMP_ACT_GELU_TANH; act++) {
        /* GELU goes through expf (act.h's erf takes one too): CUDA's is
         * within 2 ulp, glibc's within 1; |x| <= 6 keeps |gelu| <= 6, so 1e-6 absolute covers the
         * cancellation in 1 + erf(x/sqrt2) for negative x. */
        rows_tol tol = act >= AMP_ACT_GELU ? r->tol : ROWS_EXACT;
        char what[64];
        float *co = poisoned_f32(n);
        float *go = rows_to_dev(co, n * sizeof(float));
        rows_ok(rows_cpu->ops->act_forward(rows_cpu, co, in, n, (amp_act)act), rows_cpu,
                "act_forward");
        rows_ok(rows_dev->ops->act_forward(rows_dev, go, gin, n, (amp_act)act), rows_dev,
                "act_forward");
        float *goh = rows_take_dev(go, n * sizeof(float));
        snprintf(what, sizeof what, "act_forward act=%d", act);
        cmp_f32(what, goh, co, n, tol);

        /* In place (out == in). */
        float *cip = rows_dup(in, n * sizeof(float));
        float *gip = rows_to_dev(in, n * sizeof(float));
        rows_ok(rows_cpu->ops->act_forward(rows_cpu, cip, cip, n, (amp_act)act), rows_cpu,
                "act_forward");
        rows_ok(rows_dev->ops->act_forward(rows_dev, gip, gip, n, (amp_act)act), rows_dev,
                "act_forward");
        float *giph = rows_take_dev(gip, n * sizeof(float));
        snprintf(what, sizeof what, "act_forward in-place act=%d", act);
        cmp_f32(what, giph, cip, n, tol);

        float *cdz = poisoned_f32(n);
        float *gdz = rows_to_dev(cdz, n * sizeof(float));
        rows_ok(rows_cpu->ops->act_backward(rows_cpu, cdz, da, in, n, (amp_act)act), rows_cpu,
                "act_backward");
        rows_ok(rows_dev->ops->act_backward(rows_dev, gdz, gda, gin, n, (amp_act)act), rows_dev,
                "act_backward");
        float *gdzh = rows_take_dev(gdz, n * sizeof(float));
        snprintf(what, sizeof what, "act_backward act=%d", act);
        cmp_f32(what, gdzh, cdz, n, tol);
        free(co);
        free(goh);
        free(cip);
        free(giph);
        free(cdz);
        free(gdzh);
    }
    rows_release(gin);
    rows_release(gda);
    free(in);
    free(da);
}

static void test_softmax_xent(const amp_gpu_row *r) {
    int rows = r->shape[0], cols = r->shape[1];
    float grad_scale = r->arg[0];
    size_t n = (size_t)rows * cols;
    float *logits = rows_random(n, -8.0f, 8.0f);
    int32_t *labels = rows_alloc((size_t)rows * sizeof(int32_t));
    for (int i = 0; i < rows; i++) labels[i] = (int32_t)amp_rng_below(&rows_rng, (uint64_t)cols);
    /* A tie for the max: the first index must win on both. */
    if (cols > 3) logits[0] = logits[2] = 9.0f;
    float *gl = rows_to_dev(logits, n * sizeof(float));
    int32_t *glab = rows_to_dev(labels, (size_t)rows * sizeof(int32_t));
    for (int with_grad = 0; with_grad < 2; with_grad++) {
        amp_step_stats s0;
        memset(&s0, 0, sizeof s0);
        s0.loss_sum = 1.5;
        s0.correct = 3;
        s0.nonfinite = 42; /* untouched by softmax_xent */
        amp_step_stats cs = s0;
        amp_step_stats *gs = rows_to_dev(&s0, sizeof s0);
        float *cd = with_grad ? poisoned_f32(n) : NULL;
        float *gd = with_grad ? rows_to_dev(cd, n * sizeof(float)) : NULL;
        rows_ok(
            rows_cpu->ops->softmax_xent(rows_cpu, cd, &cs, logits, labels, rows, cols, grad_scale),
            rows_cpu, "softmax_xent");
        rows_ok(rows_dev->ops->softmax_xent(rows_dev, gd, gs, gl, glab, rows, cols, grad_scale),
                rows_dev, "softmax_xent");
        amp_step_stats *gsh = rows_take_dev(gs, sizeof s0);
        char what[96];
        snprintf(what, sizeof what, "softmax_xent %dx%d gs=%g grad=%d", rows, cols, grad_scale,
                 with_grad);
        /* Repeatable: the same inputs again give the same bits (the block
         * partials are added in a fixed order, not by atomics). */
        for (int rep = 0; rep < 3; rep++) {
            amp_step_stats *gs2 = rows_to_dev(&s0, sizeof s0);
            rows_ok(
                rows_dev->ops->softmax_xent(rows_dev, gd, gs2, gl, glab, rows, cols, grad_scale),
                rows_dev, "softmax_xent");
            amp_step_stats *g2 = rows_take_dev(gs2, sizeof s0);
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
            float *gdh = rows_take_dev(gd, n * sizeof(float));
            /* p = expf(l - lse): relative error ~ the lse error plus 2 ulp;
             * p <= 1, so an absolute 4e-6 (times grad_scale) covers p - 1. */
            cmp_f32(what, gdh, cd, n, ROWS_WITHIN(r->tol.atol * fabs(grad_scale), r->tol.rtol));
            free(gdh);
            free(cd);
        }
        printf("    %s loss_sum gpu %.9f cpu %.9f correct %llu\n", what, gsh->loss_sum,
               cs.loss_sum, cs.correct);
        free(gsh);
    }
    rows_release(gl);
    rows_release(glab);
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
    double *partials = rows_alloc(blocks * sizeof(double));
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
static void test_sum_partials(const amp_gpu_row *r) {
#if AMP_HAVE_CUDA
    static const unsigned sizes[] = {0, 1, 2, 7, 33, 257, 1000, AMP_REDUCE_MAX_BLOCKS};
    double *p = rows_alloc(AMP_REDUCE_MAX_BLOCKS * sizeof(double));
    int same = 0, order_matters = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned n = sizes[k];
        for (unsigned i = 0; i < n; i++)
            p[i] = ldexp(rows_uniform(-1.0f, 1.0f), (int)amp_rng_below(&rows_rng, 80) - 40);
        double got = 0.0, want = amp_sum_partials(p, n);
        int rc = amp_cuda_test_sum_partials(rows_dev, &got, p, n);
        rows_ok(rc, rows_dev, "amp_cuda_test_sum_partials");
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

static void test_unscale_check(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    int with_nonfinite = r->shape[1];
    float inv_scale = r->arg[0], maxabs0 = r->arg[1];
    float *g = rows_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float m = ldexpf(rows_uniform(-1.0f, 1.0f), (int)amp_rng_below(&rows_rng, 40) - 10);
        g[i] = m;
        if (with_nonfinite && amp_rng_below(&rows_rng, 5000) == 0) {
            uint64_t k = amp_rng_below(&rows_rng, 3);
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
    float *gg = rows_to_dev(g, n * sizeof(float));
    amp_step_stats *gs = rows_to_dev(&s0, sizeof s0);
    /* Before the CPU op unscales g in place. */
    double want = s0.sumsq + replay_sumsq(g, n, inv_scale);
    rows_ok(rows_cpu->ops->unscale_check(rows_cpu, g, &cs, n, inv_scale), rows_cpu,
            "unscale_check");
    rows_ok(rows_dev->ops->unscale_check(rows_dev, gg, gs, n, inv_scale), rows_dev,
            "unscale_check");
    float *gh = rows_take_dev(gg, n * sizeof(float));
    amp_step_stats *gsh = rows_take_dev(gs, sizeof s0);
    char what[96];
    snprintf(what, sizeof what, "unscale_check inv=%g nonfinite=%d max0=%g", inv_scale,
             with_nonfinite, maxabs0);
    /* Non-finite elements are left as they are: bitwise, NaN payload too. */
    cmp_f32(what, gh, g, n, ROWS_EXACT);
    EXPECT(gsh->nonfinite == cs.nonfinite && gsh->checked == cs.checked,
          "%s: nonfinite gpu %llu cpu %llu, checked gpu %llu cpu %llu", what, gsh->nonfinite,
          cs.nonfinite, gsh->checked, cs.checked);
    EXPECT(!with_nonfinite || cs.nonfinite > s0.nonfinite, "%s: test data has no inf/NaN", what);
    /* max is order-independent: exact. */
    EXPECT(rows_bits(gsh->maxabs) == rows_bits(cs.maxabs), "%s maxabs: gpu %.9g cpu %.9g", what,
          gsh->maxabs, cs.maxabs);
    /* Each square is exact in double; only the summation order differs:
     * |err| <= n * 2^-53 * sum, far below 1e-9 relative. */
    EXPECT(fabs(gsh->sumsq - cs.sumsq) <= 1e-9 * cs.sumsq, "%s sumsq: gpu %.17g cpu %.17g", what,
          gsh->sumsq, cs.sumsq);
    /* And the order is the CUDA kernel's fixed one: replayed on the CPU, bit
     * for bit (the CPU backend's own order is another: not under --self-check). */
    EXPECT(rows_self_check || memcmp(&gsh->sumsq, &want, sizeof want) == 0,
           "%s sumsq: gpu %.17g, the CPU replay of the kernel's fixed order %.17g", what,
           gsh->sumsq, want);
    EXPECT(gsh->loss_sum == 7.0, "%s touched stats->loss_sum", what);
    printf("    %s: nonfinite %llu maxabs %g sumsq %.6g\n", what, cs.nonfinite, cs.maxabs,
           cs.sumsq);
    free(g);
    free(gh);
    free(gsh);
}

static void test_scale(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float *x = rows_random(n, -100.0f, 100.0f);
    float *gx = rows_to_dev(x, n * sizeof(float));
    rows_ok(rows_cpu->ops->scale(rows_cpu, x, n, 0.125f * 3.0f), rows_cpu, "scale");
    rows_ok(rows_dev->ops->scale(rows_dev, gx, n, 0.125f * 3.0f), rows_dev, "scale");
    float *gh = rows_take_dev(gx, n * sizeof(float));
    cmp_f32("scale", gh, x, n, ROWS_EXACT);
    free(x);
    free(gh);
}

static void test_sgd(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float momentum = r->arg[0], wd = r->arg[1];
    float *w = rows_random(n, -1.0f, 1.0f), *mom = rows_alloc(n * sizeof(float));
    memset(mom, 0, n * sizeof(float));
    float *gw = rows_to_dev(w, n * sizeof(float)), *gm = rows_to_dev(mom, n * sizeof(float));
    for (int step = 0; step < 3; step++) {
        float *g = rows_random(n, -0.5f, 0.5f);
        float *gg = rows_to_dev(g, n * sizeof(float));
        rows_ok(rows_cpu->ops->optim_step(rows_cpu,
                                   &(amp_optim_step){0, 0.05f, momentum, wd, 0.0f, 0.0f, 0.0f, 0},
                                   w, mom, NULL, g, n),
              rows_cpu, "sgd_step");
        rows_ok(rows_dev->ops->optim_step(rows_dev,
                                   &(amp_optim_step){0, 0.05f, momentum, wd, 0.0f, 0.0f, 0.0f, 0},
                                   gw, gm, NULL, gg, n),
              rows_dev, "sgd_step");
        rows_release(gg);
        free(g);
    }
    float *gwh = rows_take_dev(gw, n * sizeof(float)), *gmh = rows_take_dev(gm, n * sizeof(float));
    char what[96];
    int before = amp_test_failures;
    snprintf(what, sizeof what, "sgd w (mom=%g wd=%g)", momentum, wd);
    cmp_f32(what, gwh, w, n, ROWS_EXACT);
    snprintf(what, sizeof what, "sgd mom (mom=%g wd=%g)", momentum, wd);
    cmp_f32(what, gmh, mom, n, ROWS_EXACT);
    if (amp_test_failures != before) fprintf(stderr, "hint:%s\n", FMAD_HINT);
    free(w);
    free(mom);
    free(gwh);
    free(gmh);
}

static void test_adamw(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float *w = rows_random(n, -1.0f, 1.0f);
    float *m = rows_alloc(n * sizeof(float)), *v = rows_alloc(n * sizeof(float));
    memset(m, 0, n * sizeof(float));
    memset(v, 0, n * sizeof(float));
    float *gw = rows_to_dev(w, n * sizeof(float)), *gm = rows_to_dev(m, n * sizeof(float));
    float *gv = rows_to_dev(v, n * sizeof(float));
    for (int64_t t = 1; t <= 3; t++) {
        float *g = rows_random(n, -0.5f, 0.5f);
        float *gg = rows_to_dev(g, n * sizeof(float));
        rows_ok(rows_cpu->ops->optim_step(rows_cpu,
                                   &(amp_optim_step){1, 1e-3f, 0.0f, 0.01f, 0.9f, 0.999f, 1e-8f, t},
                                   w, m, v, g, n),
              rows_cpu, "adamw_step");
        rows_ok(rows_dev->ops->optim_step(rows_dev,
                                   &(amp_optim_step){1, 1e-3f, 0.0f, 0.01f, 0.9f, 0.999f, 1e-8f, t},
                                   gw, gm, gv, gg, n),
              rows_dev, "adamw_step");
        rows_release(gg);
        free(g);
    }
    float *gwh = rows_take_dev(gw, n * sizeof(float)), *gmh = rows_take_dev(gm, n * sizeof(float));
    float *gvh = rows_take_dev(gv, n * sizeof(float));
    int before = amp_test_failures;
    cmp_f32("adamw w", gwh, w, n, ROWS_EXACT);
    cmp_f32("adamw m", gmh, m, n, ROWS_EXACT);
    cmp_f32("adamw v", gvh, v, n, ROWS_EXACT);
    if (amp_test_failures != before) fprintf(stderr, "hint:%s\n", FMAD_HINT);
    free(w);
    free(m);
    free(v);
    free(gwh);
    free(gmh);
    free(gvh);
}

static void test_memory(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    float *x = rows_random(n, -1.0f, 1.0f);
    float *d = rows_to_dev(x, n * sizeof(float));
    float *back = rows_alloc(n * sizeof(float));
    rows_ok(rows_dev->ops->download(rows_dev, back, d, n * sizeof(float)), rows_dev, "download");
    EXPECT(memcmp(back, x, n * sizeof(float)) == 0, "upload/download round trip differs");
    rows_ok(rows_dev->ops->zero(rows_dev, d + 10, 100 * sizeof(float)), rows_dev, "zero");
    rows_ok(rows_dev->ops->download(rows_dev, back, d, n * sizeof(float)), rows_dev, "download");
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= rows_bits(back[i]) == ((i >= 10 && i < 110) ? 0u : rows_bits(x[i]));
    EXPECT(ok, "zero() wrote outside [10, 110) or missed part of it");
    EXPECT(rows_dev->ops->device_bytes_used(rows_dev) > 0, "device_bytes_used is 0 on the GPU");
    rows_release(d);
    free(x);
    free(back);
    if (ok) printf("ok  upload/download/zero, device_bytes_used %zu\n",
                   rows_dev->ops->device_bytes_used(rows_dev));
}

/* Large n (BIG) also exercises the grid-stride loops (the grid is capped at
 * 8 blocks per SM) and many per-block atomics. */
#define BIG ((1 << 21) + 17)
#define EXACT ROWS_EXACT

static const amp_gpu_row rows[] = {
    {"memory upload/download/zero n1000", test_memory, {1000}, .tol = EXACT, .cuda_only = 1},
    {"fixed-order sum of partials", test_sum_partials, {0}, .tol = EXACT, .cuda_only = 1},
    {"round n2097169", test_round, {BIG}, .tol = EXACT},
    {"round n1000", test_round, {1000}, .tol = EXACT},
    {"quantize n2097169", test_quantize, {BIG}, .tol = EXACT},
    {"widen n65536 (all patterns)", test_widen, {65536}, .tol = EXACT},
    {"col_sum 1000x300", test_col_sum, {1000, 300}, .tol = EXACT},
    {"col_sum 3x1", test_col_sum, {3, 1}, .tol = EXACT},
    /* GELU goes through expf (act.h's erf takes one too): CUDA's is within 2
     * ulp, glibc's within 1; |x| <= 6 keeps |gelu| <= 6, so 1e-6 absolute
     * covers the cancellation in 1 + erf(x/sqrt2) for negative x. The other
     * activations: exact. */
    {"act n100003", test_act, {100003}, .tol = ROWS_WITHIN(1e-6, 1e-5)},
    /* the gradient: p = expf(l - lse), relative error ~ the lse error plus 2
     * ulp; p <= 1, so an absolute 4e-6 (times grad_scale) covers p - 1 */
    {"softmax_xent 1000x10 gs=1/1000",
     test_softmax_xent,
     {1000, 10},
     .tol = ROWS_WITHIN(4e-6, 1e-5),
     .arg = {1.0f / 1000.0f}},
    {"softmax_xent 64x1000 gs=65536/64",
     test_softmax_xent,
     {64, 1000},
     .tol = ROWS_WITHIN(4e-6, 1e-5),
     .arg = {65536.0f / 64.0f}},
    {"softmax_xent 1x1 gs=1",
     test_softmax_xent,
     {1, 1},
     .tol = ROWS_WITHIN(4e-6, 1e-5),
     .arg = {1.0f}},
    {"unscale_check n2097169 inv=2^-16 nonfinite",
     test_unscale_check,
     {BIG, 1},
     .tol = EXACT,
     .arg = {1.0f / 65536.0f, 0.0f}},
    {"unscale_check n2097169 inv=1",
     test_unscale_check,
     {BIG, 0},
     .tol = EXACT,
     .arg = {1.0f, 0.0f}},
    {"unscale_check n1000 inv=0.5 max0=1e30",
     test_unscale_check,
     {1000, 0},
     .tol = EXACT,
     .arg = {0.5f, 1e30f}},
    /* inv_scale 2^100 overflows the larger gradients: both must count them */
    {"unscale_check n2097169 inv=2^100",
     test_unscale_check,
     {BIG, 0},
     .tol = EXACT,
     .arg = {0x1p100f, 0.0f}},
    {"scale n2097169", test_scale, {BIG}, .tol = EXACT},
    {"sgd n100003 mom=0.9 wd=1e-4", test_sgd, {100003}, .tol = EXACT, .arg = {0.9f, 1e-4f}},
    {"sgd n100003 mom=0 wd=0", test_sgd, {100003}, .tol = EXACT, .arg = {0.0f, 0.0f}},
    {"adamw n100003", test_adamw, {100003}, .tol = EXACT},
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_kernels", argc, argv, rows, sizeof rows / sizeof rows[0], 7);
}

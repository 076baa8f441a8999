/* The GPU tests as tables, after ggml's test-backend-ops: each op (or model
 * run) is a row with its shapes, its stated tolerance and a function that
 * runs it on the CPU backend (the reference, `rows_cpu`) and on the device
 * under test (`rows_dev`) and compares. amp_gpu_rows_main does the setup
 * every GPU test shares: it skips (77) saying why when no CUDA device is
 * visible, creates both backends, runs every row (op_rows.h: a failed row is
 * listed and the next one runs) and prints the summary.
 *
 * Options every such program takes:
 *   --self-check      the device under test is a second CPU backend, so the
 *                     rows, comparisons and summary run on a machine without
 *                     a GPU (rows marked cuda_only are skipped, saying so)
 *   --perturb OP      with --self-check: the device's OP (act_forward,
 *                     scale, or the scaled family's fp8_quantize,
 *                     mx_qdq or nvfp4_qdq) returns a wrong element, so the rows using it
 *                     must fail and every other row still pass
 *   --only PREFIX     only the rows whose name starts with PREFIX
 * A row with `needs` runs only where the device has that op family
 * (amp_backend_supports); when no row could run so, the test skips (77).
 * Header only (its state is op_rows.h's, one per test program). */
#ifndef AMP_TESTS_GPU_ROWS_H
#define AMP_TESTS_GPU_ROWS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "op_rows.h"
#include "util/rng.h"

#if AMP_HAVE_CUDA
#include "backend/cuda/cuda_testing.h"
#endif

/* How a row compares the device's values with the CPU's. */
typedef enum {
    ROWS_BITS,   /* bit for bit */
    ROWS_NAN_EQ, /* bit for bit, but any NaN equals any NaN (payloads differ) */
    ROWS_TOL,    /* |dev - cpu| <= atol + rtol |cpu|; NaN only matches NaN */
    ROWS_FINITE, /* as ROWS_TOL, and a NaN on either side fails */
} rows_mode;

typedef struct rows_tol {
    rows_mode mode;
    double atol, rtol;
} rows_tol;

#define ROWS_EXACT ((rows_tol){ROWS_BITS, 0, 0})
#define ROWS_WITHIN(a, r) ((rows_tol){ROWS_TOL, (a), (r)})

typedef struct amp_gpu_row amp_gpu_row;
struct amp_gpu_row {
    const char *name;                  /* op and shape: the row's label */
    void (*run)(const amp_gpu_row *r); /* runs both sides and compares */
    int shape[12];                     /* the op's sizes, in the order run reads them */
    amp_dtype dt;                      /* the op's dtype where it has one */
    rows_tol tol;                      /* the stated tolerance of its main output */
    float arg[2];                      /* the op's scalar arguments (scales, momentum) */
    int cuda_only;                     /* needs the CUDA backend itself: not in --self-check */
    const char *needs;                 /* an optional op family (amp_backend_supports) */
};

static amp_backend *rows_cpu, *rows_dev; /* the reference and the device under test */
static amp_rng rows_rng;
static int rows_self_check;
static int rows_unsupported; /* rows skipped: the device lacks their family */

#define ROWS_POISON32 0x7fbadbadu /* a NaN no op produces */

static inline void *rows_alloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

static inline uint32_t rows_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float rows_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A backend call that failed ends the row (op_rows.h), not the test. */
static inline void rows_ok(int rc, amp_backend *be, const char *what) {
    if (rc != 0) amp_op_abort("%s on %s: %s", what, be->ops->name, be->err);
}

static inline float rows_uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)amp_rng_uniform(&rows_rng);
}

static inline float *rows_random(size_t n, float lo, float hi) {
    float *p = rows_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = rows_uniform(lo, hi);
    return p;
}

static inline float *rows_randn(size_t n, float scale) {
    float *p = rows_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = (float)amp_rng_normal(&rows_rng) * scale;
    return p;
}

/* n floats of the NaN pattern ROWS_POISON32 (bytes rounded up to floats). */
static inline void *rows_poisoned(size_t bytes) {
    uint32_t *p = rows_alloc(bytes + 4);
    for (size_t i = 0; i < bytes / 4 + 1; i++) p[i] = ROWS_POISON32;
    return p;
}

static inline void *rows_dup(const void *src, size_t bytes) {
    void *p = rows_alloc(bytes);
    memcpy(p, src, bytes);
    return p;
}

static inline size_t rows_esize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

static inline const char *rows_dt_name(amp_dtype dt) {
    return dt == AMP_DTYPE_F32 ? "f32" : dt == AMP_DTYPE_F16 ? "f16" : "bf16";
}

/* src stored in dt (the floats, or their 16-bit roundings) in a new buffer. */
static inline void *rows_as_dt(const float *src, size_t n, amp_dtype dt) {
    void *p = rows_alloc(n * rows_esize(dt));
    for (size_t i = 0; i < n; i++) {
        if (dt == AMP_DTYPE_F32)
            ((float *)p)[i] = src[i];
        else
            ((uint16_t *)p)[i] = amp_round16(src[i], dt, NULL);
    }
    return p;
}

/* A fresh device buffer holding host's bytes. */
static inline void *rows_to_dev(const void *host, size_t bytes) {
    void *d = rows_dev->ops->alloc(rows_dev, bytes);
    if (!d || rows_dev->ops->upload(rows_dev, d, host, bytes))
        amp_op_abort("device alloc/upload of %zu bytes: %s", bytes, rows_dev->err);
    return d;
}

/* A device buffer of 0xff bytes: NaN in FP32, FP16 and BF16. */
static inline void *rows_nan_dev(size_t bytes) {
    void *h = rows_alloc(bytes);
    memset(h, 0xff, bytes);
    void *d = rows_to_dev(h, bytes);
    free(h);
    return d;
}

/* A new host copy of a device buffer (which stays). */
static inline void *rows_from_dev(const void *dev, size_t bytes) {
    void *h = rows_alloc(bytes);
    if (rows_dev->ops->download(rows_dev, h, dev, bytes))
        amp_op_abort("device download: %s", rows_dev->err);
    return h;
}

/* rows_from_dev, then the device buffer is released. */
static inline void *rows_take_dev(void *dev, size_t bytes) {
    void *h = rows_from_dev(dev, bytes);
    rows_dev->ops->release(rows_dev, dev);
    return h;
}

static inline void rows_release(void *dev) { rows_dev->ops->release(rows_dev, dev); }

static inline float rows_elem(const void *p, size_t i, amp_dtype dt) {
    return dt == AMP_DTYPE_F32 ? ((const float *)p)[i] : amp_widen16(((const uint16_t *)p)[i], dt);
}

/* Compares n elements of dtype dt, the device's against the CPU's, under
 * tol; reports the first five differences and a count. */
static inline void rows_cmp(const char *what, const void *dev, const void *cpu, size_t n,
                            amp_dtype dt, rows_tol tol) {
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        float g = rows_elem(dev, i, dt), c = rows_elem(cpu, i, dt);
        int good;
        if (tol.mode == ROWS_BITS)
            good = dt == AMP_DTYPE_F32 ? rows_bits(g) == rows_bits(c)
                                       : ((const uint16_t *)dev)[i] == ((const uint16_t *)cpu)[i];
        else if (isnan(g) || isnan(c))
            good = tol.mode != ROWS_FINITE && isnan(g) && isnan(c) &&
                   !(dt == AMP_DTYPE_F32 && rows_bits(g) == ROWS_POISON32);
        else if (tol.mode == ROWS_NAN_EQ)
            good = rows_bits(g) == rows_bits(c);
        else {
            double d = fabs((double)g - (double)c);
            good = d <= tol.atol + tol.rtol * fabs((double)c);
            if (d > worst) worst = d;
        }
        if (!good && bad++ < 5)
            EXPECT(0, "%s[%zu]: device (%s) %.9g (0x%08x) cpu %.9g (0x%08x)", what, i,
                   rows_dev->ops->name, g, (unsigned)rows_bits(g), c, (unsigned)rows_bits(c));
    }
    if (bad > 5) EXPECT(0, "%s: %d of %zu elements differ", what, bad, n);
    if (bad) return;
    if (tol.mode == ROWS_TOL || tol.mode == ROWS_FINITE)
        printf("ok  %-52s n=%-7zu max|dev-cpu| %.2e (tol %.1e + %.1e|cpu|)\n", what, n, worst,
               tol.atol, tol.rtol);
    else
        printf("ok  %-52s n=%-7zu exact\n", what, n);
}

/* Compares n bytes (codes, scale bytes) bit for bit, the device's against
 * the CPU's; reports the first difference and a count. */
static inline void rows_cmp_bytes(const char *what, const uint8_t *dev, const uint8_t *cpu,
                                  size_t n) {
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (dev[i] != cpu[i] && diff++ == 0) first = i;
    EXPECT(diff == 0, "%s: %zu of %zu bytes differ (first [%zu]: device 0x%02x cpu 0x%02x)", what,
           diff, n, first, diff ? dev[first] : 0, diff ? cpu[first] : 0);
    if (!diff) printf("ok  %-52s n=%-7zu exact\n", what, n);
}

/* ---- the deliberately broken op of --perturb ----------------------------- */

static amp_backend_ops rows_perturbed_ops;
static const amp_backend_ops *rows_real_ops;

/* The real op, then one element (the middle one) moved by 0.5. */
static inline int rows_bad_act_forward(amp_backend *be, float *out, const float *in, size_t n,
                                amp_act act) {
    int rc = rows_real_ops->act_forward(be, out, in, n, act);
    if (rc == 0 && n) out[n / 2] += 0.5f;
    return rc;
}

static inline int rows_bad_scale(amp_backend *be, float *x, size_t n, float s) {
    int rc = rows_real_ops->scale(be, x, n, s);
    if (rc == 0 && n) x[n / 2] += 0.5f;
    return rc;
}

static amp_scaled_ops rows_perturbed_scaled;

/* One code (the middle one) off by one. */
static inline int rows_bad_fp8_quantize(amp_backend *be, uint8_t *q, const float *x, size_t n,
                                        float scale, int fmt, amp_fp8_stats *st) {
    int rc = rows_real_ops->scaled->fp8_quantize(be, q, x, n, scale, fmt, st);
    if (rc == 0 && n) q[n / 2] ^= 1u;
    return rc;
}

static inline int rows_bad_mx_qdq(amp_backend *be, float *y, const float *x, const amp_mx_desc *d,
                                  amp_fp8_stats *st) {
    int rc = rows_real_ops->scaled->mx_qdq(be, y, x, d, st);
    size_t n = (size_t)d->rows * (size_t)d->cols;
    if (rc == 0 && n) y[n / 2] += 0.5f;
    return rc;
}

static inline int rows_bad_nvfp4_qdq(amp_backend *be, float *y, const float *x,
                                     const amp_nvfp4_desc *d, float *s_enc_host,
                                     amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    int rc = rows_real_ops->scaled->nvfp4_qdq(be, y, x, d, s_enc_host, st, nv);
    size_t n = (size_t)d->rows * (size_t)d->cols;
    if (rc == 0 && n) y[n / 2] += 0.5f;
    return rc;
}

/* The device backend (a CPU one: --perturb needs --self-check) with op broken. */
static inline int rows_perturb(const char *op) {
    rows_real_ops = rows_dev->ops;
    rows_perturbed_ops = *rows_dev->ops;
    if (strcmp(op, "act_forward") == 0)
        rows_perturbed_ops.act_forward = rows_bad_act_forward;
    else if (strcmp(op, "scale") == 0)
        rows_perturbed_ops.scale = rows_bad_scale;
    else if (strcmp(op, "fp8_quantize") == 0 || strcmp(op, "mx_qdq") == 0 ||
             strcmp(op, "nvfp4_qdq") == 0) {
        rows_perturbed_scaled = *rows_dev->ops->scaled;
        if (op[0] == 'f')
            rows_perturbed_scaled.fp8_quantize = rows_bad_fp8_quantize;
        else if (op[0] == 'm')
            rows_perturbed_scaled.mx_qdq = rows_bad_mx_qdq;
        else
            rows_perturbed_scaled.nvfp4_qdq = rows_bad_nvfp4_qdq;
        rows_perturbed_ops.scaled = &rows_perturbed_scaled;
    } else
        return -1;
    rows_dev->ops = &rows_perturbed_ops;
    return 0;
}

/* A Linear's forward y[m, n] = a[m, k] . b[n, k]^T on FP32 (or, for
 * fp8_gemm and nvfp4_gemm, FP8 or FP4 codes) operands, bias and GELU in the epilogue, the
 * pre-activation into out (GELU's tanh is not bitwise across devices). */
static inline amp_gemm_desc rows_linear_gemm(float *acc, const void *a, const void *b, int m,
                                             int n, int k, const void *bias, void *out,
                                             void *act_out) {
    amp_gemm_desc g = amp_gemm_plain(acc, a, b, AMP_DTYPE_F32, AMP_GEMM_NT, m, n, k);
    g.bias = bias;
    g.bias_dtype = AMP_DTYPE_F32;
    g.act = AMP_ACT_GELU_TANH;
    g.out = out;
    g.act_out = act_out;
    g.out_dtype = AMP_DTYPE_F32;
    return g;
}

/* The end of a block-scaled GEMM row (fp8_gemm on MX32, nvfp4_gemm): where
 * `require` (test_gpu_{mx,nvfp4}_gemm, not the self-check; `blocked` is NULL
 * in a build without CUDA, which never requires it), that the GEMM
 * ran on cuBLASLt's block-scaled unit exactly when the shape fits (`fits`;
 * `blocked` is what the device reports), then the pre-activation dpre
 * [nc] against the CPU's `want` within 2e-5 * k. Frees the downloaded values. */
static inline void rows_block_scaled_end(const char *name, const char *op, int require,
                                         int (*blocked)(amp_backend *), int fits, float *dpre,
                                         const float *want, size_t nc, int k) {
    if (require && blocked && !rows_self_check) {
        int on = blocked(rows_dev);
        EXPECT(on == fits,
               "%s: %s %s cuBLASLt's block-scaled GEMM, expected %s (the log names why)", name,
               op, on ? "ran on" : "did not run on",
               fits ? "the block-scaled path (sm_100 and later, the shape fits)"
                    : "the emulated path (the shape does not fit)");
    }
    float *got = rows_take_dev(dpre, nc * 4);
    char what[96];
    snprintf(what, sizeof what, "%s pre-activation", name);
    rows_cmp(what, got, want, nc, AMP_DTYPE_F32, ROWS_WITHIN(2e-5 * k, 1e-6));
    free(got);
}

/* The gate of the tests of cuBLASLt's block-scaled GEMMs (sm_100 and
 * later): 0 when such a device is visible (the test then requires the
 * path), else 77 after saying why `test` skips (no device, an older GPU:
 * `elsewhere` runs its rows on the emulated path there; a build without
 * CUDA), or 1 when the CUDA backend cannot be made. gemm names the GEMM. */
static inline int rows_block_scaled_gate(const char *test, const char *gemm,
                                         const char *elsewhere) {
    if (!amp_backend_cuda_available()) {
        printf("%s: skipped: no CUDA device visible (%s)\n", test,
               amp_backend_cuda_unavailable_reason());
        return 77;
    }
#if AMP_HAVE_CUDA
    char err[512];
    amp_backend *be = amp_backend_cuda_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "%s: FAIL: creating the CUDA backend: %s\n", test, err);
        return 1;
    }
    int cc = amp_cuda_test_compute_capability(be);
    be->ops->destroy(be);
    if (cc >= 100) return 0;
    printf("%s: skipped: the GPU is sm_%d; cuBLASLt's block-scaled %s GEMM needs sm_100 or later "
           "(%s runs these rows on the emulated path)\n",
           test, cc, gemm, elsewhere);
#else
    (void)gemm, (void)elsewhere;
    printf("%s: skipped: built without CUDA\n", test);
#endif
    return 77;
}

/* ---- the program ------------------------------------------------------------- */

static inline int rows_usage(const char *test, const char *why) {
    fprintf(stderr,
            "%s: %s\nusage: %s [--self-check [--perturb "
            "act_forward|scale|fp8_quantize|mx_qdq|nvfp4_qdq]] [--only PREFIX]\n",
            test, why, test);
    return 2;
}

/* Every row of the table (or those whose name starts with only). The rows'
 * setjmp (op_rows.h) may clobber what is not volatile or static. */
static inline void rows_run_all(const amp_gpu_row *rows, size_t nrows, const char *only) {
    static const amp_gpu_row *table;
    static size_t count;
    static const char *prefix;
    table = rows, count = nrows, prefix = only;
    for (volatile size_t i = 0; i < count; i++) {
        const amp_gpu_row *r = &table[i];
        if (prefix && strncmp(r->name, prefix, strlen(prefix)) != 0) continue;
        if (r->cuda_only && rows_self_check) {
            printf("skip %s (needs the CUDA backend itself)\n", r->name);
            continue;
        }
        if (r->needs && !amp_backend_supports(rows_dev, r->needs)) {
            printf("skip %s (the %s backend has no %s ops)\n", r->name, rows_dev->ops->name,
                   r->needs);
            rows_unsupported++;
            continue;
        }
        AMP_OP_ROW(table[i].run(&table[i]), "%s", table[i].name);
    }
}

/* Runs the table: the exit status of a test program (0, 1, 2 usage, 77 skipped). */
static inline int amp_gpu_rows_main(const char *test, int argc, char **argv,
                                    const amp_gpu_row *rows, size_t nrows, uint64_t seed) {
    const char *perturb = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--self-check") == 0)
            rows_self_check = 1;
        else if (strcmp(argv[i], "--perturb") == 0 && i + 1 < argc)
            perturb = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else
            return rows_usage(test, "unknown or incomplete option");
    }
    if (perturb && !rows_self_check) return rows_usage(test, "--perturb needs --self-check");
    if (!rows_self_check && !amp_backend_cuda_available()) {
        printf("%s: skipped: no CUDA device visible (%s)\n", test,
               amp_backend_cuda_unavailable_reason());
        return 77;
    }
    char err[512];
    rows_cpu = amp_backend_cpu_create(err, sizeof err);
    if (rows_cpu)
        rows_dev = rows_self_check ? amp_backend_cpu_create(err, sizeof err)
                                   : amp_backend_cuda_create(err, sizeof err);
    if (!rows_cpu || !rows_dev) {
        fprintf(stderr, "%s: FAIL: creating the %s backend: %s\n", test,
                !rows_cpu ? "CPU" : rows_self_check ? "second CPU" : "CUDA", err);
        return 1;
    }
    if (perturb && rows_perturb(perturb) != 0) return rows_usage(test, "--perturb: no such op");
    printf("%s: %s against the CPU%s%s\n", test,
           rows_self_check ? "the CPU (--self-check)" : "CUDA", perturb ? ", perturbed op " : "",
           perturb ? perturb : "");
    amp_rng_seed(&rows_rng, seed);
    rows_run_all(rows, nrows, only);
    rows_dev->ops = rows_real_ops ? rows_real_ops : rows_dev->ops;
    rows_dev->ops->destroy(rows_dev);
    rows_cpu->ops->destroy(rows_cpu);
    if (amp_op_rows == 0 && rows_unsupported > 0) {
        printf("%s: skipped: the device supports none of the rows' op families\n", test);
        return 77;
    }
    return amp_op_finish(test);
}

#endif

/* The CPU backend's GEMMs: which library and which operand width runs each
 * GEMM shape (cpu_gemm_tune.h chooses by measurement), and running it.
 *
 * The candidates give autocast's math, FP32 sums of exact products:
 * oneDNN's or OpenBLAS's FP32 GEMM (16-bit operands widened exactly
 * first), and oneDNN's native bf16 x bf16 -> f32 or f16 x f16 -> f32
 * matmul where the instruction-set path has a kernel for it (probed: a
 * "ref" implementation does not count). Pins: AMPTRAIN_GEMM names the
 * library (reference: the FP64 test GEMM), [run] gemm_path /
 * AMPTRAIN_GEMM_PATH = widened or native the operand width, and an explicit
 * AMPTRAIN_ISA=avx512_bf16 means native bf16, as it always has. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend/cpu_dnnl.h"
#include "backend/cpu_gemm_ref.h"
#include "backend/cpu_gemm_tune.h"
#include "backend/cpu_internal.h"
#include "process/env.h"
#include "util/log.h"

const char *const amp_gemm_path_names[AMP_GEMM_PATH_COUNT + 1] = {"auto", "widened", "native",
                                                                  NULL};

struct amp_cpu_gemm {
    amp_cpu_gemm_host host; /* the backend's widening scratch and scratch accounting */
    amp_isa isa;
    amp_dnnl *dnnl;         /* NULL on the generic path, without oneDNN, or when not allowed */
    int lib_pin;            /* AMPTRAIN_GEMM's candidate, or -1 */
    unsigned native;        /* bit (1u << dtype): oneDNN has a native kernel for it here */
    amp_gemm_path path;
    amp_gemm_tuner *tuner;
    int tuning;             /* timing candidates: record no kernel in be->info */
    int openblas_ok;        /* OpenBLAS is a candidate beside oneDNN (amp_cpu_gemm_create) */
    int split;              /* OpenMP threads that share an OpenBLAS call (1: it runs whole) */
};

static int is_native(amp_gemm_cand c) { return c == AMP_GEMM_ONEDNN_BF16 || c == AMP_GEMM_ONEDNN_F16; }

static amp_gemm_cand native_of(amp_dtype dt) {
    return dt == AMP_DTYPE_BF16 ? AMP_GEMM_ONEDNN_BF16 : AMP_GEMM_ONEDNN_F16;
}

/* ---- running one candidate ------------------------------------------------- */

/* Records the kernel that ran for dtype dt in be->info (distinct names). */
static void note_gemm(amp_backend *be, amp_dtype dt, const char *what) {
    char *s = be->info.gemm[dt];
    size_t len = strlen(s), cap = sizeof be->info.gemm[dt];
    const char *p = s;
    size_t wl = strlen(what);
    while ((p = strstr(p, what)) != NULL) { /* already listed? */
        if ((p == s || p[-1] == ',') && (p[wl] == '\0' || p[wl] == ',')) return;
        p += wl;
    }
    snprintf(s + len, cap - len, "%s%s", len ? "," : "", what);
}

/* OpenBLAS's sgemm on d's operands at c, a, b. Beside oneDNN, OpenBLAS
 * runs single-threaded (amp_cpu_gemm_create), so with g->split threads
 * each OpenMP thread of the backend's one pool multiplies a slice of C:
 * rows when C is taller than wide, else columns, cut at multiples of 16
 * (the width of its AVX2 and AVX-512 kernels' register blocks). A slice
 * is the same sgemm on sub-matrices: every element of C sums its k
 * products as it would in one call. */
static void openblas_sgemm(const amp_cpu_gemm *g, const amp_gemm_desc *d, float *c, const float *a,
                           const float *b) {
    CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
    int rows = d->m >= d->n, len = rows ? d->m : d->n;
    int parts = g->split;
    if (parts > (len + 15) / 16) parts = (len + 15) / 16;
    if (parts <= 1) {
        cblas_sgemm(CblasRowMajor, ta, tb, d->m, d->n, d->k, d->alpha, a, d->lda, b, d->ldb,
                    d->beta, c, d->ldc);
        return;
    }
    int per = (len + parts - 1) / parts;
    per = (per + 15) / 16 * 16;
#pragma omp parallel for schedule(static, 1) num_threads(parts)
    for (int p = 0; p < parts; p++) {
        int lo = p * per, hi = lo + per < len ? lo + per : len;
        if (lo >= hi) continue;
        if (rows) { /* C[lo:hi, :] = A[lo:hi, :] . B */
            const float *ap = a + (d->trans_a ? (size_t)lo : (size_t)lo * (size_t)d->lda);
            cblas_sgemm(CblasRowMajor, ta, tb, hi - lo, d->n, d->k, d->alpha, ap, d->lda, b,
                        d->ldb, d->beta, c + (size_t)lo * (size_t)d->ldc, d->ldc);
        } else { /* C[:, lo:hi] = A . B[:, lo:hi] */
            const float *bp = b + (d->trans_b ? (size_t)lo * (size_t)d->ldb : (size_t)lo);
            cblas_sgemm(CblasRowMajor, ta, tb, d->m, hi - lo, d->k, d->alpha, a, d->lda, bp,
                        d->ldb, d->beta, c + lo, d->ldc);
        }
    }
}

/* `batch` matrices of d from c, a, b (of dtype dt: FP32, or the native
 * dtype) through candidate cand. */
static int lib_run(amp_backend *be, amp_cpu_gemm *g, const amp_gemm_desc *d, amp_gemm_cand cand,
                   float *c, const void *a, const void *b, amp_dtype dt, int batch) {
    const char *prefix = dt != d->in_dtype ? "widen+" : "";
    char what[128];
    if (cand == AMP_GEMM_OPENBLAS_F32 || cand == AMP_GEMM_REFERENCE) {
        if (batch != 1) return amp_backend_missing(be, "gemm", "batched library call");
        if (cand == AMP_GEMM_REFERENCE) {
            if (amp_gemm_ref(d, c, a, b) != 0) {
                snprintf(be->err, sizeof be->err, "out of host memory in the reference GEMM");
                return 1;
            }
            snprintf(what, sizeof what, "%sreference-f64", prefix);
        } else {
            openblas_sgemm(g, d, c, a, b);
            const char *core = openblas_get_corename();
            snprintf(what, sizeof what, "%sopenblas-sgemm %s%s", prefix, core ? core : "?",
                     g->split > 1 ? " split" : "");
        }
    } else {
        const char *impl = "?";
        amp_dnnl_operands ops = {c, a, b, dt, batch};
        if (amp_dnnl_gemm(g->dnnl, d, &ops, &impl, be->err, sizeof be->err) != 0) return 1;
        g->host.note_scratch(be);
        snprintf(what, sizeof what, "%sonednn-%s %s", prefix,
                 dt == AMP_DTYPE_BF16 ? "bf16" : dt == AMP_DTYPE_F16 ? "f16" : "f32", impl);
    }
    if (!g->tuning) note_gemm(be, d->in_dtype, what);
    return 0;
}

/* Every matrix of d into d->acc through cand: a batch of FP32 or native
 * operands through oneDNN is one call (its threads split the matrices);
 * otherwise one GEMM per matrix, 16-bit operands widened first. */
static int run_cand(amp_backend *be, amp_cpu_gemm *g, const amp_gemm_desc *d, amp_gemm_cand cand) {
    amp_dtype dt = d->in_dtype;
    int as_is = dt == AMP_DTYPE_F32 || is_native(cand);
    if (as_is && d->batch > 1 && cand != AMP_GEMM_OPENBLAS_F32 && cand != AMP_GEMM_REFERENCE)
        return lib_run(be, g, d, cand, d->acc, d->a, d->b, dt, d->batch);
    size_t in_size = dt == AMP_DTYPE_F32 ? 4 : 2;
    size_t na = (size_t)(d->trans_a ? d->k : d->m) * (size_t)d->lda;
    size_t nb = (size_t)(d->trans_b ? d->n : d->k) * (size_t)d->ldb;
    for (int i = 0; i < d->batch; i++) {
        const void *a = (const char *)d->a + (size_t)i * (size_t)d->stride_a * in_size;
        const void *b = (const char *)d->b + (size_t)i * (size_t)d->stride_b * in_size;
        float *acc = d->acc + (size_t)i * (size_t)d->stride_c;
        amp_dtype run_dt = dt;
        if (!as_is) {
            a = g->host.widened(be, 0, a, dt, na);
            b = g->host.widened(be, 1, b, dt, nb);
            if (!a || !b) return 1;
            run_dt = AMP_DTYPE_F32;
        }
        if (lib_run(be, g, d, cand, acc, a, b, run_dt, 1) != 0) return 1;
    }
    return 0;
}

/* ---- choosing ---------------------------------------------------------------- */

/* The candidates for GEMMs with inputs of dtype dt under g's pins. */
static int candidates(const amp_cpu_gemm *g, amp_dtype dt, amp_gemm_cand *c) {
    int n = 0;
    int native_ok = dt != AMP_DTYPE_F32 && ((g->native >> dt) & 1u) &&
                    g->path != AMP_GEMM_PATH_WIDENED &&
                    (g->lib_pin < 0 || g->lib_pin == AMP_GEMM_ONEDNN_F32);
    if (native_ok) {
        c[n++] = native_of(dt);
        if (g->path == AMP_GEMM_PATH_NATIVE) return n;
    }
    if (g->lib_pin >= 0) {
        c[n++] = (amp_gemm_cand)g->lib_pin;
        return n;
    }
    if (g->dnnl) c[n++] = AMP_GEMM_ONEDNN_F32;
    if (g->openblas_ok || !g->dnnl) c[n++] = AMP_GEMM_OPENBLAS_F32;
    return n;
}

/* The tuning operands: d's layout over buffers of its sizes, filled with
 * values that are exact in its dtype (no subnormals, no infinities). */
typedef struct tune_ctx {
    amp_backend *be;
    amp_cpu_gemm *g;
    amp_gemm_desc d; /* its a, b, acc: the tuning operands once made */
    void *a, *b;
    float *c;
} tune_ctx;

static size_t span(int batch, long long stride, size_t one) {
    return batch > 1 ? (size_t)(batch - 1) * (size_t)stride + one : one;
}

static void fill(void *p, amp_dtype dt, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v = (unsigned)(i * 37u % 101u);
        if (dt == AMP_DTYPE_F32) ((float *)p)[i] = 1.0f + (float)v / 128.0f;
        else if (dt == AMP_DTYPE_BF16) ((uint16_t *)p)[i] = (uint16_t)(0x3f80u | (v & 0x7fu));
        else ((uint16_t *)p)[i] = (uint16_t)(0x3c00u | (v & 0x3ffu));
    }
}

/* The tuning operands, made when the first candidate is timed: a shape
 * already chosen (every GEMM call but a shape's first) allocates and fills
 * nothing. 0, or -1 with be->err. */
static int tune_operands(tune_ctx *t) {
    if (t->c) return 0;
    const amp_gemm_desc *d = &t->d;
    size_t in_size = d->in_dtype == AMP_DTYPE_F32 ? 4 : 2;
    size_t na = span(d->batch, d->stride_a, (size_t)(d->trans_a ? d->k : d->m) * (size_t)d->lda);
    size_t nb = span(d->batch, d->stride_b, (size_t)(d->trans_b ? d->n : d->k) * (size_t)d->ldb);
    size_t nc = span(d->batch, d->stride_c, (size_t)d->m * (size_t)d->ldc);
    t->a = malloc(na * in_size);
    t->b = malloc(nb * in_size);
    t->c = calloc(nc, sizeof *t->c);
    if (!t->a || !t->b || !t->c) {
        snprintf(t->be->err, sizeof t->be->err, "out of host memory timing a GEMM");
        return -1;
    }
    fill(t->a, d->in_dtype, na);
    fill(t->b, d->in_dtype, nb);
    t->d.a = t->a;
    t->d.b = t->b;
    t->d.acc = t->c;
    return 0;
}

static double time_cand(void *vctx, amp_gemm_cand cand) {
    tune_ctx *t = vctx;
    if (tune_operands(t) != 0) return -1.0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (run_cand(t->be, t->g, &t->d, cand) != 0) return -1.0;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

static int choose(amp_backend *be, amp_cpu_gemm *g, const amp_gemm_desc *d, amp_gemm_cand *out) {
    amp_gemm_cand cands[AMP_GEMM_MAX_CANDS];
    int n = candidates(g, d->in_dtype, cands);
    char key[128];
    amp_gemm_tune_key(d, be->info.threads, key, sizeof key);
    tune_ctx t = {be, g, *d, NULL, NULL, NULL};
    g->tuning = 1;
    int rc = amp_gemm_tuner_choose(g->tuner, key, cands, n, time_cand, &t, out, be->err,
                                   sizeof be->err) != 0;
    g->tuning = 0;
    free(t.a);
    free(t.b);
    free(t.c);
    be->info.gemm_choices = amp_gemm_tuner_choices(g->tuner, &be->info.n_gemm_choices);
    return rc;
}

int amp_cpu_gemm_run(amp_backend *be, amp_cpu_gemm *g, const amp_gemm_desc *d) {
    amp_gemm_cand cand;
    if (choose(be, g, d, &cand) != 0) return 1;
    return run_cand(be, g, d, cand);
}

/* ---- set-up ------------------------------------------------------------------ */

/* be->info.widened_gemm from the path setting and the native kernels. */
static void set_widened(amp_backend *be, const amp_cpu_gemm *g) {
    unsigned w = 0;
    amp_gemm_cand c[AMP_GEMM_MAX_CANDS];
    for (int dt = AMP_DTYPE_F16; dt <= AMP_DTYPE_BF16; dt++) {
        candidates(g, (amp_dtype)dt, c);
        if (!is_native(c[0])) w |= 1u << dt; /* no native candidate: FP32 copies pay */
    }
    be->info.widened_gemm = w;
    be->info.native_gemm = g->native;
    snprintf(be->info.gemm_path, sizeof be->info.gemm_path, "%s", amp_gemm_path_names[g->path]);
}

int amp_cpu_gemm_set_path(amp_backend *be, amp_cpu_gemm *g, amp_gemm_path path, const char *what,
                          char *err, size_t errlen) {
    if (path == AMP_GEMM_PATH_NATIVE && !g->native) {
        char feat[160];
        amp_isa_features(feat, sizeof feat);
        snprintf(err, errlen,
                 "%s = native: this CPU has no native 16-bit GEMM here (oneDNN %s on the '%s' path "
                 "makes no bf16 or f16 matmul kernel; the CPU has: %s); use auto or widened",
                 what, amp_dnnl_version(), amp_isa_name(g->isa), feat);
        return -1;
    }
    if (path == AMP_GEMM_PATH_NATIVE && g->lib_pin >= 0 && g->lib_pin != AMP_GEMM_ONEDNN_F32) {
        snprintf(err, errlen, "%s = native needs oneDNN, but AMPTRAIN_GEMM=%s pins another library",
                 what, amp_env_get("AMPTRAIN_GEMM"));
        return -1;
    }
    g->path = path;
    set_widened(be, g);
    if (path == AMP_GEMM_PATH_NATIVE)
        for (int dt = AMP_DTYPE_F16; dt <= AMP_DTYPE_BF16; dt++)
            if (!((g->native >> dt) & 1u))
                amp_log(AMP_LOG_INFO, "%s = native: no native %s GEMM on this CPU; %s GEMMs widen "
                        "their operands to FP32", what, dt == AMP_DTYPE_BF16 ? "bf16" : "f16",
                        dt == AMP_DTYPE_BF16 ? "bf16" : "fp16");
    return 0;
}

int amp_cpu_gemm_preload(amp_backend *be, amp_cpu_gemm *g, const char *key, const char *path,
                         char *err, size_t errlen) {
    if (amp_gemm_tuner_preload(g->tuner, key, path, err, errlen) != 0) return -1;
    be->info.gemm_choices = amp_gemm_tuner_choices(g->tuner, &be->info.n_gemm_choices);
    return 0;
}

/* What makes a cached choice invalid elsewhere: the CPU, the path, the libraries. */
static void machine_text(amp_isa isa, char *out, size_t len) {
    char cpu[160];
    amp_isa_cpu_model(cpu, sizeof cpu);
    const char *core = openblas_get_corename();
    /* v2: OpenBLAS beside oneDNN shares a GEMM among the OpenMP threads */
    snprintf(out, len, "v2|%s|%s|onednn %s|openblas %s %s", cpu, amp_isa_name(isa),
             amp_dnnl_version(), core ? core : "?", openblas_get_config());
}

amp_cpu_gemm *amp_cpu_gemm_create(amp_isa isa, int threads, const amp_cpu_gemm_host *host,
                                  char *err, size_t errlen) {
    int want;
    int got = amp_env_choice("AMPTRAIN_GEMM", amp_env_gemm_libs, &want, err, errlen);
    if (got < 0) return NULL;
    int lib_pin = -1;
    if (got && want == AMP_ENV_GEMM_OPENBLAS) lib_pin = AMP_GEMM_OPENBLAS_F32;
    if (got && want == AMP_ENV_GEMM_REFERENCE) lib_pin = AMP_GEMM_REFERENCE;
    if (got && want == AMP_ENV_GEMM_ONEDNN) {
        if (!amp_dnnl_available()) {
            snprintf(err, errlen, "AMPTRAIN_GEMM=onednn: this amptrain was built without oneDNN "
                                  "(install libdnnl-dev and rebuild)");
            return NULL;
        }
        if (isa == AMP_ISA_GENERIC) {
            snprintf(err, errlen, "AMPTRAIN_GEMM=onednn needs AMPTRAIN_ISA avx2 or higher (the "
                                  "generic path runs OpenBLAS)");
            return NULL;
        }
        lib_pin = AMP_GEMM_ONEDNN_F32;
    }
    int path;
    got = amp_env_choice("AMPTRAIN_GEMM_PATH", amp_gemm_path_names, &path, err, errlen);
    if (got < 0) return NULL;
    amp_cpu_gemm *g = calloc(1, sizeof *g);
    char machine[512];
    machine_text(isa, machine, sizeof machine);
    if (!g || !(g->tuner = amp_gemm_tuner_create(machine))) {
        free(g);
        snprintf(err, errlen, "out of host memory creating the CPU backend");
        return NULL;
    }
    g->host = *host;
    g->isa = isa;
    g->lib_pin = lib_pin;
    g->split = 1;
    int use_dnnl = amp_dnnl_available() && isa != AMP_ISA_GENERIC &&
                   (lib_pin < 0 || lib_pin == AMP_GEMM_ONEDNN_F32);
    if (use_dnnl) {
        if (!(g->dnnl = amp_dnnl_create(isa, err, errlen))) {
            amp_cpu_gemm_destroy(g);
            return NULL;
        }
        for (int dt = AMP_DTYPE_F16; dt <= AMP_DTYPE_BF16; dt++) {
            char impl[64] = "none";
            int native = amp_dnnl_native(g->dnnl, (amp_dtype)dt, impl, sizeof impl);
            g->native |= (unsigned)native << dt;
            amp_log(AMP_LOG_DEBUG, "oneDNN %s x %s matmul on the '%s' path: %s%s",
                    dt == AMP_DTYPE_BF16 ? "bf16" : "f16", dt == AMP_DTYPE_BF16 ? "bf16" : "f16",
                    amp_isa_name(isa), impl, native ? "" : " (no native candidate)");
        }
    }
    if (g->dnnl && lib_pin < 0) {
        /* OpenBLAS beside oneDNN runs in the calling thread: its own pthread
         * pool would take turns with OpenMP's (oneDNN's and the element-wise
         * kernels'), each spinning or sleeping while the other works, which a
         * shape timed alone never shows. OpenMP's threads share its calls
         * instead (openblas_sgemm). And not under an address-space
         * limit (ulimit -v), where its 128 MiB buffer may fail to map and it
         * retries for ever (core/process/mem_limit.h). */
        struct rlimit rl;
        g->openblas_ok = getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY;
        g->split = threads;
        threads = 1;
    }
    openblas_set_num_threads(threads);
    const char *isa_env = amp_env_get("AMPTRAIN_ISA");
    /* an explicit avx512_bf16 has always meant native bf16 GEMMs (where the
     * library pin allows oneDNN) */
    int implied = isa_env && strcmp(isa_env, "avx512_bf16") == 0 &&
                  (lib_pin < 0 || lib_pin == AMP_GEMM_ONEDNN_F32);
    g->path = got ? (amp_gemm_path)path : implied ? AMP_GEMM_PATH_NATIVE : AMP_GEMM_PATH_AUTO;
    return g;
}

int amp_cpu_gemm_configure(amp_backend *be, amp_cpu_gemm *g, char *err, size_t errlen) {
    const char *what = amp_env_get("AMPTRAIN_GEMM_PATH") ? "AMPTRAIN_GEMM_PATH" : "AMPTRAIN_ISA";
    if (g->path == AMP_GEMM_PATH_NATIVE) return amp_cpu_gemm_set_path(be, g, g->path, what, err, errlen);
    set_widened(be, g);
    return 0;
}

void amp_cpu_gemm_destroy(amp_cpu_gemm *g) {
    if (!g) return;
    amp_dnnl_destroy(g->dnnl);
    amp_gemm_tuner_destroy(g->tuner);
    free(g);
}

size_t amp_cpu_gemm_scratch_bytes(const amp_cpu_gemm *g) { return amp_dnnl_scratch_bytes(g->dnnl); }

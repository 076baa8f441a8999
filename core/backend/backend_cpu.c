/* CPU backend. The instruction-set path (cpu_isa.h: generic, avx2, avx512,
 * avx512_bf16) is chosen once, from CPUID or AMPTRAIN_ISA; it selects the
 * element-wise kernel table (cpu_kern.h) and caps the GEMM library.
 *
 * GEMMs (cpu_gemm.c): oneDNN's matmul or OpenBLAS sgemm, FP32 accumulation
 * always, 16-bit inputs widened exactly to FP32 or, where oneDNN has a
 * kernel for them, multiplied natively; which of these runs a GEMM shape is
 * measured once (cpu_gemm_tune.h) unless AMPTRAIN_GEMM / [run] gemm_path
 * pin it. AMPTRAIN_GEMM=reference (cpu_gemm_ref.h: FP64 sums in a fixed
 * order) gives the bits pinned tests compare, on every CPU.
 * be->info.widened_gemm says which 16-bit dtypes have no native kernel, so
 * models keep FP32 copies of those working weights instead of widening
 * them at every GEMM.
 *
 * Threads: OpenMP, the same team oneDNN uses (AMPTRAIN_THREADS, else
 * OMP_NUM_THREADS, else the cores of the affinity mask: cpu_threads.h).
 * Element-wise work is cut into chunks whose size depends on the problem
 * only, and the one floating-point reduction (unscale's sum of squares)
 * adds the chunks' partial sums in chunk order, so results do not depend
 * on the thread count. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/backend.h"
#include "backend/backend_cpu_cnn.h"
#include "process/env.h"
#include "backend/cpu_internal.h"
#include "backend/cpu_fp8.h"
#include "backend/cpu_threads.h"
#include "backend/cpu_kern.h"
#include "backend/kernels/act.h"
#include "backend/kernels/convert.h"
#include "backend/kernels/xent.h"

/* Elements per chunk of element-wise work (a multiple of 64), and columns
 * per tile inside a row (stack buffers, L1-resident). */
#define CHUNK 16384
/* Element-wise work runs on several threads only from this many chunks
 * (256Ki elements) up. A parallel region costs a few microseconds on an
 * idle machine but up to a scheduler tick when another process holds a
 * core, which once made a 16-bit step 3x slower on 2 threads than on 1; a
 * smaller op is faster on one thread anyway. The chunks, and so the bits,
 * do not depend on this. */
#define PAR_MIN_CHUNKS 16
#define TILE 1024
#define MAX_UNSCALE_CHUNKS 4096

typedef struct cpu_impl {
    amp_isa isa;
    const amp_cpu_kern *k;
    amp_cpu_gemm *gemm; /* the GEMMs' libraries and paths (cpu_gemm.c) */
    /* widened operands (16-bit inputs without a native kernel); slots 0-1
     * the GEMMs', 2-4 the transformer ops' (cpu_internal.h) */
    float *scratch[AMP_CPU_SCRATCH_SLOTS];
    size_t scratch_len[AMP_CPU_SCRATCH_SLOTS];
    amp_unscale_acc *uacc; /* [MAX_UNSCALE_CHUNKS] */
} cpu_impl;

static cpu_impl *impl_of(amp_backend *be) { return (cpu_impl *)be->impl; }

const amp_cpu_kern *amp_cpu_kern_of(amp_backend *be) { return impl_of(be)->k; }

/* The CPU backend's GEMM state, or NULL for another backend. */
static amp_cpu_gemm *gemm_of(amp_backend *be) {
    return be && be->device == AMP_DEVICE_CPU ? impl_of(be)->gemm : NULL;
}

int amp_backend_gemm_path(amp_backend *be, amp_gemm_path path, const char *what, char *err,
                          size_t errlen) {
    amp_cpu_gemm *g = gemm_of(be);
    return g ? amp_cpu_gemm_set_path(be, g, path, what, err, errlen) : 0;
}

int amp_backend_gemm_preload(amp_backend *be, const char *key, const char *path, char *err,
                             size_t errlen) {
    amp_cpu_gemm *g = gemm_of(be);
    return g ? amp_cpu_gemm_preload(be, g, key, path, err, errlen) : 0;
}

const amp_cpu_fp8 *amp_cpu_fp8_of(amp_backend *be) { return amp_cpu_fp8_for(impl_of(be)->isa); }

/* Chunks for n elements: CHUNK each, or more when n is huge (so at most
 * MAX_UNSCALE_CHUNKS), always a multiple of 64. Depends on n only. */
static size_t chunk_size(size_t n) {
    size_t c = CHUNK, need = (n + MAX_UNSCALE_CHUNKS - 1) / MAX_UNSCALE_CHUNKS;
    if (need > c) c = (need + 63) / 64 * 64;
    return c;
}

static void *cpu_alloc(amp_backend *be, size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        snprintf(be->err, sizeof be->err, "out of host memory allocating %zu bytes", bytes);
        return NULL;
    }
    return p;
}

static void cpu_release(amp_backend *be, void *p) { free(p); }

static int cpu_copy(amp_backend *be, void *dst, const void *src, size_t bytes) {
    memcpy(dst, src, bytes);
    return 0;
}

/* upload and download: a copy that stands for a host round trip (counted
 * as the CUDA backend's are) */
static int cpu_transfer(amp_backend *be, void *dst, const void *src, size_t bytes) {
    be->host_round_trips++;
    return cpu_copy(be, dst, src, bytes);
}

static int cpu_zero(amp_backend *be, void *dst, size_t bytes) {
    memset(dst, 0, bytes);
    return 0;
}

/* ---- element-wise ops ------------------------------------------------------ */

/* dst(dt)[n] = round(src[n]), counted when t is non-NULL. */
static void par_round16(amp_backend *be, uint16_t *dst, const float *src, size_t n, amp_dtype dt,
                        amp_tally *t) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for schedule(static) reduction(+ : nz, uf, of) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        amp_tally l = {0, 0, 0};
        k->round16(dst + i0, src + i0, len, (int)dt, t ? &l : NULL);
        nz += l.nz;
        uf += l.uf;
        of += l.of;
    }
    if (t) {
        t->nz += nz;
        t->uf += uf;
        t->of += of;
    }
}

static void par_widen16(amp_backend *be, float *dst, const uint16_t *src, size_t n, amp_dtype dt) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        k->widen16(dst + i0, src + i0, len, (int)dt);
    }
}

static int cpu_round(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                     amp_round_count *cnt) {
    if (dt == AMP_DTYPE_F32) {
        if (dst != src) memmove(dst, src, n * sizeof(float));
        return 0;
    }
    amp_tally t = {0, 0, 0};
    par_round16(be, dst, src, n, dt, cnt ? &t : NULL);
    amp_cpu_count_add(cnt, t.nz, t.uf, t.of);
    return 0;
}

/* Host memory is the device's here, so the batch rounds straight from the
 * caller's staging buffer. */
static int cpu_upload_round(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                            amp_round_count *cnt) {
    be->host_round_trips++; /* the upload it stands for */
    return cpu_round(be, dst, dt, src, n, cnt);
}

static int cpu_widen(amp_backend *be, float *dst, const void *src, amp_dtype dt, size_t n) {
    if (dt == AMP_DTYPE_F32) {
        if (dst != src) memmove(dst, src, n * sizeof(float));
        return 0;
    }
    par_widen16(be, dst, src, n, dt);
    return 0;
}

/* dst[n] = (accumulate ? dst : 0) + widen(round_dt(src)), counted: per tile,
 * round into a 16-bit tile, widen it back, store or add. dst may equal src. */
static int cpu_quantize(amp_backend *be, float *dst, const float *src, size_t n, amp_dtype dt,
                        amp_round_count *cnt, int accumulate) {
    const amp_cpu_kern *k = impl_of(be)->k;
    if (dt == AMP_DTYPE_F32) { /* amp_quantize is the identity and counts nothing */
        if (accumulate) {
            size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
            for (size_t c = 0; c < nch; c++) {
                size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
                k->acc_add(dst + i0, src + i0, len);
            }
        } else if (dst != src) {
            memmove(dst, src, n * sizeof(float));
        }
        return 0;
    }
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for schedule(static) reduction(+ : nz, uf, of) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        float q[TILE];
        amp_tally l = {0, 0, 0};
        size_t end = (c + 1) * cs < n ? (c + 1) * cs : n;
        if (!accumulate) {
            k->quantize16(dst + c * cs, src + c * cs, end - c * cs, (int)dt, &l);
        } else {
            for (size_t i = c * cs; i < end; i += TILE) {
                size_t len = end - i < TILE ? end - i : TILE;
                k->quantize16(q, src + i, len, (int)dt, &l);
                k->acc_add(dst + i, q, len);
            }
        }
        nz += l.nz;
        uf += l.uf;
        of += l.of;
    }
    amp_cpu_count_add(cnt, nz, uf, of);
    return 0;
}

static int cpu_act_forward(amp_backend *be, float *out, const float *in, size_t n, amp_act act) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        k->act(out + i0, in + i0, len, (int)act);
    }
    return 0;
}

static int cpu_act_backward(amp_backend *be, float *dz, const float *da, const float *z, size_t n,
                            amp_act act) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        k->act_grad_mul(dz + i0, da + i0, z + i0, len, (int)act);
    }
    return 0;
}

/* dz(dt) = round(quantize(da) * act'(widen(z(dt)))), one pass in tiles. */
static int cpu_act_backward_round(amp_backend *be, const amp_act_round_args *a) {
    const amp_cpu_kern *k = impl_of(be)->k;
    void *dz = a->dz;
    float *dz_f32 = a->dz_f32;
    const float *da = a->da;
    const void *z = a->z;
    amp_dtype dt = a->dt;
    size_t n = a->n;
    amp_act act = a->act;
    amp_round_count *cnt = a->cnt;
    if (a->exact && (act != AMP_ACT_RELU || cnt)) {
        snprintf(be->err, sizeof be->err, "act_backward_round: exact needs ReLU and no counts");
        return 1;
    }
    if (dt == AMP_DTYPE_F32) {
        float *out = dz ? dz : dz_f32;
        cpu_act_backward(be, out, da, z, n, act);
        if (dz_f32 && dz_f32 != out) memmove(dz_f32, out, n * sizeof(float));
        return 0;
    }
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for schedule(static) reduction(+ : nz, uf, of) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        float q[TILE], zf[TILE];
        amp_tally l = {0, 0, 0};
        size_t end = (c + 1) * cs < n ? (c + 1) * cs : n;
        for (size_t i = c * cs; i < end; i += TILE) {
            size_t len = end - i < TILE ? end - i : TILE;
            uint16_t *out = dz ? (uint16_t *)dz + i : NULL; /* NULL: the FP32 copy alone */
            k->widen16(zf, (const uint16_t *)z + i, len, (int)dt);
            if (a->exact && !out) { /* both roundings the identity: da * act'(z) is dz */
                k->act_grad_mul(dz_f32 + i, da + i, zf, len, (int)act);
                continue;
            }
            k->quantize16(q, da + i, len, (int)dt, &l);
            k->act_grad_mul(q, q, zf, len, (int)act);
            k->round16_wide(out, dz_f32 ? dz_f32 + i : NULL, q, len, (int)dt, &l);
        }
        nz += l.nz;
        uf += l.uf;
        of += l.of;
    }
    amp_cpu_count_add(cnt, nz, uf, of);
    return 0;
}

/* dst(dt) = round(act(quantize(src))), wide = widen(dst): per tile, the
 * counted rounding, the activation and the exact store, one pass over
 * memory instead of three. */
static int cpu_round_act(amp_backend *be, const amp_round_act_args *a) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t n = a->n, cs = chunk_size(n), nch = (n + cs - 1) / cs;
    int dt = (int)a->dt;
    if (a->dt == AMP_DTYPE_F32 || (a->act != AMP_ACT_NONE && a->act != AMP_ACT_RELU)) {
        snprintf(be->err, sizeof be->err, "round_act: needs a 16-bit dtype and ReLU or no activation");
        return 1;
    }
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for schedule(static) reduction(+ : nz, uf, of) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        float q[TILE];
        amp_tally l = {0, 0, 0};
        size_t end = (c + 1) * cs < n ? (c + 1) * cs : n;
        for (size_t i = c * cs; i < end; i += TILE) {
            size_t len = end - i < TILE ? end - i : TILE;
            k->quantize16(q, a->src + i, len, dt, &l);
            if (a->act != AMP_ACT_NONE) k->act(q, q, len, (int)a->act);
            k->round16_wide((uint16_t *)a->dst + i, a->wide ? a->wide + i : NULL, q, len, dt, NULL);
        }
        nz += l.nz;
        uf += l.uf;
        of += l.of;
    }
    amp_cpu_count_add(a->cnt, nz, uf, of);
    return 0;
}

static int cpu_col_sum(amp_backend *be, float *out, const float *in, int rows, int cols) {
    const amp_cpu_kern *k = impl_of(be)->k;
    /* split the columns: every column still sums its rows in order */
    size_t per = 256, nch = ((size_t)cols + per - 1) / per;
    if ((size_t)rows * (size_t)cols < CHUNK) nch = nch > 0 ? 1 : 0, per = (size_t)cols;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t j0 = c * per, len = (size_t)cols - j0 < per ? (size_t)cols - j0 : per;
        k->col_sum(out + j0, in + j0, (size_t)rows, len, (size_t)cols);
    }
    return 0;
}

static int cpu_softmax_xent(amp_backend *be, float *dlogits, amp_step_stats *stats,
                            const float *logits, const int32_t *labels, int rows, int cols,
                            float grad_scale) {
    double loss = 0.0;
    unsigned long long correct = 0;
    for (int r = 0; r < rows; r++) {
        int hit = 0;
        loss += amp_xent_row(dlogits ? dlogits + (size_t)r * cols : NULL, &hit,
                             logits + (size_t)r * cols, labels[r], cols, grad_scale);
        correct += (unsigned long long)hit;
    }
    stats->loss_sum += loss;
    stats->correct += correct;
    return 0;
}

/* Per chunk: lanes of squares (cpu_kern.h); the chunks' sums are then added
 * in chunk order, each chunk's lanes as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). */
static int cpu_unscale_check(amp_backend *be, float *g, amp_step_stats *stats, size_t n,
                             float inv_scale) {
    cpu_impl *im = impl_of(be);
    const amp_cpu_kern *k = im->k;
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        amp_unscale_acc *a = &im->uacc[c];
        memset(a, 0, sizeof *a);
        k->unscale(g + i0, len, inv_scale, a);
    }
    double sumsq = 0.0;
    float mx = stats->maxabs;
    unsigned long long bad = 0;
    for (size_t c = 0; c < nch; c++) {
        const double *l = im->uacc[c].lane;
        sumsq += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
        if (im->uacc[c].maxabs > mx) mx = im->uacc[c].maxabs;
        bad += im->uacc[c].bad;
    }
    stats->nonfinite += bad;
    stats->checked += n;
    stats->sumsq += sumsq;
    stats->maxabs = mx;
    return 0;
}

static int cpu_scale(amp_backend *be, float *x, size_t n, float s) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        k->scale(x + i0, len, s);
    }
    return 0;
}

/* AdamW's bias corrections for step o->t, in double as adamw_step has them
 * (1 and 1 for SGD). */
static void bias_corrections(const amp_optim_step *o, float *bc1, float *bc2_sqrt) {
    *bc1 = *bc2_sqrt = 1.0f;
    if (!o->adamw) return;
    *bc1 = (float)(1.0 - pow((double)o->beta1, (double)o->t));
    *bc2_sqrt = (float)sqrt(1.0 - pow((double)o->beta2, (double)o->t));
}

/* The optimizer over chunks; with wc, each chunk's working copy follows
 * its update while the chunk is still in cache (optim_step_cast), so the
 * master weights are read once. */
static int cpu_optim_step_cast(amp_backend *be, const amp_optim_step *o, float *w, float *s0,
                               float *s1, const float *g, size_t n, const amp_weight_copy *copy) {
    const amp_cpu_kern *k = impl_of(be)->k;
    void *wc = copy ? copy->dst : NULL;
    amp_dtype dt = copy ? copy->dt : AMP_DTYPE_F32;
    int wc_f32 = copy ? copy->f32 : 0;
    amp_round_count *cnt = copy ? copy->cnt : NULL;
    float bc1, bc2_sqrt;
    bias_corrections(o, &bc1, &bc2_sqrt);
    size_t cs = chunk_size(n), nch = (n + cs - 1) / cs;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for schedule(static) reduction(+ : nz, uf, of) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * cs, len = n - i0 < cs ? n - i0 : cs;
        if (o->adamw)
            k->adamw(w + i0, s0 + i0, s1 + i0, g + i0, len, o->lr, o->beta1, o->beta2, o->eps,
                     o->weight_decay, bc1, bc2_sqrt);
        else
            k->sgd(w + i0, s0 ? s0 + i0 : NULL, g + i0, len, o->lr, o->momentum, o->weight_decay);
        if (!wc) continue;
        amp_tally l = {0, 0, 0};
        if (wc_f32)
            k->quantize16((float *)wc + i0, w + i0, len, (int)dt, &l);
        else
            k->round16((uint16_t *)wc + i0, w + i0, len, (int)dt, &l);
        nz += l.nz;
        uf += l.uf;
        of += l.of;
    }
    amp_cpu_count_add(cnt, nz, uf, of);
    return 0;
}

static int cpu_optim_step(amp_backend *be, const amp_optim_step *o, float *w, float *s0, float *s1,
                          const float *g, size_t n) {
    return cpu_optim_step_cast(be, o, w, s0, s1, g, n, NULL);
}

/* Every span's chunks (cut as optim_step cuts that span alone, so the bits
 * are its) in one parallel section: a GPT's tensors alternate decay and no
 * decay, and a section per run woke the threads a dozen times a step. */
static int cpu_optim_multi_step(amp_backend *be, const amp_optim_step *o, float *w, float *s0,
                                float *s1, const float *g, const amp_optim_span *spans,
                                int nspans) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t total = 0;
    for (int i = 0; i < nspans; i++) total += (spans[i].n + chunk_size(spans[i].n) - 1) /
                                              chunk_size(spans[i].n);
    if (total == 0) return 0;
    struct chunk {
        size_t off, len;
        float wd;
    } *tab = malloc(total * sizeof *tab);
    if (!tab) {
        snprintf(be->err, sizeof be->err, "optimizer step: out of memory for %zu chunks", total);
        return 1;
    }
    size_t nch = 0;
    for (int i = 0; i < nspans; i++) {
        size_t cs = chunk_size(spans[i].n);
        for (size_t c = 0; c < spans[i].n; c += cs)
            tab[nch++] = (struct chunk){spans[i].off + c, spans[i].n - c < cs ? spans[i].n - c : cs,
                                        spans[i].weight_decay};
    }
    float bc1, bc2_sqrt;
    bias_corrections(o, &bc1, &bc2_sqrt);
#pragma omp parallel for schedule(static) if (nch >= PAR_MIN_CHUNKS)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = tab[c].off, len = tab[c].len;
        if (o->adamw)
            k->adamw(w + i0, s0 + i0, s1 + i0, g + i0, len, o->lr, o->beta1, o->beta2, o->eps,
                     tab[c].wd, bc1, bc2_sqrt);
        else
            k->sgd(w + i0, s0 ? s0 + i0 : NULL, g + i0, len, o->lr, o->momentum, tab[c].wd);
    }
    free(tab);
    return 0;
}

/* ---- GEMMs ------------------------------------------------------------------ */

void amp_cpu_note_scratch(amp_backend *be) {
    cpu_impl *im = impl_of(be);
    size_t bytes = amp_cpu_gemm_scratch_bytes(im->gemm);
    for (int i = 0; i < AMP_CPU_SCRATCH_SLOTS; i++) bytes += im->scratch_len[i] * sizeof(float);
    if (bytes > be->info.scratch_bytes) be->info.scratch_bytes = bytes;
}

float *amp_cpu_scratch(amp_backend *be, int slot, size_t n) {
    cpu_impl *im = impl_of(be);
    if (im->scratch_len[slot] < n) {
        free(im->scratch[slot]);
        im->scratch[slot] = cpu_alloc(be, n * sizeof(float));
        im->scratch_len[slot] = im->scratch[slot] ? n : 0;
        if (!im->scratch[slot]) return NULL;
        amp_cpu_note_scratch(be);
    }
    return im->scratch[slot];
}


/* Widened copy of a stored 16-bit matrix in scratch slot `slot`. */
static const float *widened(amp_backend *be, int slot, const void *src, amp_dtype dt, size_t n) {
    float *w = amp_cpu_scratch(be, slot, n);
    if (w) par_widen16(be, w, src, n, dt);
    return w;
}

const float *amp_cpu_widened(amp_backend *be, int slot, const void *src, amp_dtype dt, size_t n) {
    if (dt == AMP_DTYPE_F32) return src;
    return widened(be, slot, src, dt, n);
}

/* The epilogue over rows [r0, r1) of one batch matrix (ldc == n), in tiles
 * of a row: v = acc + bias; out = round(v); act_out = round(act(widen(out))).
 * The per-element math is that of add_bias + round + widen + act_forward +
 * round, so the bits are those of the separate ops. */
typedef struct epi_args {
    float *acc;
    const float *bias; /* FP32 (widened) or NULL */
    void *out, *act_out;
    amp_dtype out_dtype;
    amp_act act;
    int n;
} epi_args;

static void epilogue_rows(const amp_cpu_kern *k, const epi_args *e, size_t r0, size_t r1,
                          amp_tally *t) {
    float v[TILE], w[TILE];
    size_t n = (size_t)e->n;
    int dt = (int)e->out_dtype;
    for (size_t r = r0; r < r1; r++) {
        for (size_t j = 0; j < n; j += TILE) {
            size_t len = n - j < TILE ? n - j : TILE, off = r * n + j;
            float *acc = e->acc + off;
            const float *x = acc;
            if (e->bias) {
                k->add(e->out ? v : acc, acc, e->bias + j, len);
                x = e->out ? v : acc;
            }
            if (!e->out) continue;
            if (dt == AMP_DTYPE_F32) {
                float *o = (float *)e->out + off;
                if (o != x) memcpy(o, x, len * sizeof(float));
                if (e->act != AMP_ACT_NONE) k->act((float *)e->act_out + off, x, len, (int)e->act);
            } else {
                uint16_t *o = (uint16_t *)e->out + off;
                if (e->act == AMP_ACT_NONE) {
                    k->round16(o, x, len, dt, t);
                    continue;
                }
                k->round16_wide(o, w, x, len, dt, t);
                k->act(w, w, len, (int)e->act);
                k->round16((uint16_t *)e->act_out + off, w, len, dt, t);
            }
        }
    }
}

/* The descriptor GEMM: the GEMMs on the shape's path (cpu_gemm.c), then
 * each batch matrix's epilogue in one threaded pass over its output. */
static int cpu_gemm_ex(amp_backend *be, const amp_gemm_desc *d) {
    const amp_cpu_kern *k = impl_of(be)->k;
    size_t out_size = d->out_dtype == AMP_DTYPE_F32 ? 4 : 2;
    int has_epilogue = d->bias || d->out;
    if (amp_gemm_desc_check(be, d) != 0) return 1;
    float *bias = NULL;
    if (d->bias) {
        bias = d->bias_dtype == AMP_DTYPE_F32 ? (float *)d->bias : malloc((size_t)d->n * sizeof *bias);
        if (!bias) {
            snprintf(be->err, sizeof be->err, "out of host memory");
            return 1;
        }
        if (d->bias_dtype != AMP_DTYPE_F32) k->widen16(bias, d->bias, (size_t)d->n, (int)d->bias_dtype);
    }
    int rc = amp_cpu_gemm_run(be, impl_of(be)->gemm, d);
    amp_tally t = {0, 0, 0};
    for (int i = 0; i < d->batch && rc == 0 && has_epilogue; i++) {
        float *acc = d->acc + (size_t)i * (size_t)d->stride_c;
        size_t off = (size_t)i * (size_t)d->stride_c * out_size;
        epi_args e = {acc,
                      bias,
                      d->out ? (char *)d->out + off : NULL,
                      d->act_out ? (char *)d->act_out + off : NULL,
                      d->out_dtype,
                      d->act,
                      d->n};
        size_t rows = (size_t)d->m, per = CHUNK / (size_t)d->n + 1, nch = (rows + per - 1) / per;
        unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for schedule(static) reduction(+ : nz, uf, of) if (nch >= PAR_MIN_CHUNKS)
        for (size_t c = 0; c < nch; c++) {
            amp_tally l = {0, 0, 0};
            size_t r1 = (c + 1) * per < rows ? (c + 1) * per : rows;
            epilogue_rows(k, &e, c * per, r1, &l);
            nz += l.nz;
            uf += l.uf;
            of += l.of;
        }
        t.nz += nz;
        t.uf += uf;
        t.of += of;
    }
    if (d->out && d->out_dtype != AMP_DTYPE_F32) amp_cpu_count_add(d->cnt, t.nz, t.uf, t.of);
    if (bias && bias != d->bias) free(bias);
    return rc;
}

static size_t cpu_device_bytes_used(amp_backend *be) { return 0; }

static double cpu_overcommit_limit(amp_backend *be) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

static void cpu_destroy(amp_backend *be) {
    if (!be) return;
    cpu_impl *im = be->impl;
    if (im) {
        amp_cpu_gemm_destroy(im->gemm);
        for (int i = 0; i < AMP_CPU_SCRATCH_SLOTS; i++) free(im->scratch[i]);
        free(im->uacc);
        free(im);
    }
    free(be);
}

static const amp_fused_ops cpu_fused_ops = {
    .optim_step_cast = cpu_optim_step_cast,
    .optim_multi_step = cpu_optim_multi_step,
    .upload_round = cpu_upload_round,
    .act_backward_round = cpu_act_backward_round,
    .round_act = cpu_round_act,
};

static const amp_backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_transfer,
    .download = cpu_transfer,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .gemm_ex = cpu_gemm_ex,
    .round = cpu_round,
    .quantize = cpu_quantize,
    .widen = cpu_widen,
    .act_forward = cpu_act_forward,
    .act_backward = cpu_act_backward,
    .col_sum = cpu_col_sum,
    .softmax_xent = cpu_softmax_xent,
    .unscale_check = cpu_unscale_check,
    .scale = cpu_scale,
    .optim_step = cpu_optim_step,
    .device_bytes_used = cpu_device_bytes_used,
    .overcommit_limit = cpu_overcommit_limit,
    .transformer = &amp_cpu_transformer_ops,
    .conv = &amp_cpu_conv_ops,
    .fused = &cpu_fused_ops,
    .scaled = &amp_cpu_scaled_ops,
};

/* AMPTRAIN_THREADS (1..1024), else OMP_NUM_THREADS (OpenMP's own reading of
 * it), else the cores this process may run on (cpu_threads.h). 0 or -1
 * with err. */
static int thread_count(int *out, char *err, size_t errlen) {
    long t;
    int got = amp_env_int("AMPTRAIN_THREADS", 1, 1024, &t, err, errlen);
    if (got < 0) return -1;
    if (got) {
        *out = (int)t;
        return 0;
    }
#ifdef _OPENMP
    *out = amp_env_get("OMP_NUM_THREADS") ? omp_get_max_threads() : amp_cpu_usable_cores();
#else
    *out = 1;
#endif
    return 0;
}

amp_backend *amp_backend_cpu_create(char *err, size_t errlen) {
    amp_isa isa;
    int threads;
    if (amp_isa_select(&isa, err, errlen) != 0 || thread_count(&threads, err, errlen) != 0)
        return NULL;
    const amp_cpu_kern *k = amp_cpu_kern_for(isa);
    if (!k) {
        snprintf(err, errlen,
                 "the '%s' path was not compiled into this amptrain (a compiler without its "
                 "flags); set AMPTRAIN_ISA to a lower path",
                 amp_isa_name(isa));
        return NULL;
    }
    amp_backend *be = calloc(1, sizeof *be);
    cpu_impl *im = calloc(1, sizeof *im);
    amp_unscale_acc *uacc = calloc(MAX_UNSCALE_CHUNKS, sizeof *uacc);
    if (!be || !im || !uacc) {
        free(be);
        free(im);
        free(uacc);
        snprintf(err, errlen, "out of host memory creating the CPU backend");
        return NULL;
    }
    im->isa = isa;
    im->k = k;
    im->uacc = uacc;
    static const amp_cpu_gemm_host host = {amp_cpu_widened, amp_cpu_note_scratch};
    im->gemm = amp_cpu_gemm_create(isa, threads, &host, err, errlen);
    if (!im->gemm) {
        free(uacc);
        free(im);
        free(be);
        return NULL;
    }
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    be->ops = &cpu_ops;
    be->device = AMP_DEVICE_CPU;
    be->impl = im;
    snprintf(be->info.isa, sizeof be->info.isa, "%s", amp_isa_name(isa));
    snprintf(be->info.isa_available, sizeof be->info.isa_available, "%s",
             amp_isa_name(amp_isa_detect()));
    be->info.threads = threads;
    if (amp_cpu_gemm_configure(be, im->gemm, err, errlen) != 0) {
        cpu_destroy(be);
        return NULL;
    }
    return be;
}

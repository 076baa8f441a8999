/* oneDNN matmul GEMMs for the CPU backend (see cpu_dnnl.h). */
#include "backend/cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if AMP_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* GEMMs below this many flops per thread run on fewer threads: a parallel
 * region costs more than it saves on small shapes, and far more on a busy
 * machine, where a waiting thread spins until the other is scheduled. The
 * count depends on the shape and the thread setting only, so it is the same
 * at every call. */
#define FLOPS_PER_THREAD 4.0e6

#define CACHE_SIZE 64

typedef struct dnnl_key {
    int dt, ta, tb, m, n, k, lda, ldb, ldc, threads;
    float alpha, beta;
    int batch; /* 1: a 2-D matmul; else 3-D with these strides between matrices */
    long long sa, sb, sc;
} dnnl_key;

typedef struct dnnl_entry {
    dnnl_key key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, scratch;
    size_t scratch_bytes;
    const char *impl;
    int used;
} dnnl_entry;

struct amp_dnnl {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_entry cache[CACHE_SIZE];
    int next_evict;
    void *scratch;
    size_t scratch_cap, scratch_peak;
};

static int process_isa = -1; /* the cap oneDNN got in this process */

int amp_dnnl_available(void) { return 1; }

const char *amp_dnnl_version(void) {
    static char buf[32];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "%d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

static dnnl_cpu_isa_t dnnl_cap(amp_isa isa) {
    switch (isa) {
    case AMP_ISA_AVX2: return dnnl_cpu_isa_avx2;
    case AMP_ISA_AVX512: return dnnl_cpu_isa_avx512_core;
    case AMP_ISA_AVX512_BF16: return dnnl_cpu_isa_avx512_core_bf16;
    default: return dnnl_cpu_isa_sse41;
    }
}

amp_dnnl *amp_dnnl_create(amp_isa isa, char *err, size_t errlen) {
    if (process_isa < 0) {
        dnnl_status_t st = dnnl_set_max_cpu_isa(dnnl_cap(isa));
        if (st != dnnl_success) {
            snprintf(err, errlen, "oneDNN: cannot cap the ISA at %s (status %d)", amp_isa_name(isa),
                     (int)st);
            return NULL;
        }
        process_isa = (int)isa;
    } else if (process_isa != (int)isa) {
        snprintf(err, errlen,
                 "oneDNN runs the '%s' path in this process already and fixes its ISA once; the "
                 "'%s' path needs a new process (set AMPTRAIN_ISA before starting)",
                 amp_isa_name((amp_isa)process_isa), amp_isa_name(isa));
        return NULL;
    }
    amp_dnnl *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    if (dnnl_engine_create(&d->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags) != dnnl_success) {
        snprintf(err, errlen, "oneDNN: cannot create the CPU engine");
        amp_dnnl_destroy(d);
        return NULL;
    }
    return d;
}

static void entry_free(dnnl_entry *e) {
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->a) dnnl_memory_destroy(e->a);
    if (e->b) dnnl_memory_destroy(e->b);
    if (e->c) dnnl_memory_destroy(e->c);
    if (e->scratch) dnnl_memory_destroy(e->scratch);
    memset(e, 0, sizeof *e);
}

void amp_dnnl_destroy(amp_dnnl *d) {
    if (!d) return;
    for (int i = 0; i < CACHE_SIZE; i++) entry_free(&d->cache[i]);
    if (d->stream) dnnl_stream_destroy(d->stream);
    if (d->engine) dnnl_engine_destroy(d->engine);
    free(d->scratch);
    free(d);
}

size_t amp_dnnl_scratch_bytes(const amp_dnnl *d) { return d ? d->scratch_peak : 0; }

#define DN(expr)                                                                       \
    do {                                                                               \
        dnnl_status_t st_ = (expr);                                                    \
        if (st_ != dnnl_success) {                                                     \
            snprintf(err, errlen, "oneDNN: %s failed (status %d) for a %dx%dx%d GEMM", \
                     #expr, (int)st_, key->m, key->n, key->k);                         \
            goto fail;                                                                 \
        }                                                                              \
    } while (0)

/* A matrix [rows, cols] stored row-major with row stride ld, or transposed;
 * with batch > 1, `batch` of them `stride` elements apart. */
static dnnl_status_t md_init(dnnl_memory_desc_t *md, int rows, int cols, int ld, int trans,
                             dnnl_data_type_t dt, int batch, long long stride) {
    if (batch > 1) {
        dnnl_dims_t dims = {batch, rows, cols};
        dnnl_dims_t strides = {stride, trans ? 1 : ld, trans ? ld : 1};
        return dnnl_memory_desc_init_by_strides(md, 3, dims, dt, strides);
    }
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
}

static int entry_make(amp_dnnl *d, dnnl_entry *e, const dnnl_key *key, char *err, size_t errlen) {
    dnnl_data_type_t dt = key->dt == AMP_DTYPE_BF16 ? dnnl_bf16
                          : key->dt == AMP_DTYPE_F16  ? dnnl_f16
                                                      : dnnl_f32;
    dnnl_memory_desc_t amd, bmd, cmd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    memset(e, 0, sizeof *e);
    DN(md_init(&amd, key->m, key->k, key->lda, key->ta, dt, key->batch, key->sa));
    DN(md_init(&bmd, key->k, key->n, key->ldb, key->tb, dt, key->batch, key->sb));
    DN(md_init(&cmd, key->m, key->n, key->ldc, 0, dnnl_f32, key->batch, key->sc));
    dnnl_matmul_desc_t mm;
    DN(dnnl_matmul_desc_init(&mm, &amd, &bmd, NULL, &cmd));
    DN(dnnl_primitive_attr_create(&attr));
    DN(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (key->alpha != 1.0f) DN(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &key->alpha));
    if (key->beta != 0.0f) {
        DN(dnnl_post_ops_create(&po));
        DN(dnnl_post_ops_append_sum(po, key->beta));
        DN(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    DN(dnnl_primitive_desc_create(&pd, &mm, attr, d->engine, NULL));
    DN(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &e->impl));
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    e->scratch_bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    DN(dnnl_primitive_create(&e->prim, pd));
    DN(dnnl_memory_create(&e->a, &amd, d->engine, DNNL_MEMORY_NONE));
    DN(dnnl_memory_create(&e->b, &bmd, d->engine, DNNL_MEMORY_NONE));
    DN(dnnl_memory_create(&e->c, &cmd, d->engine, DNNL_MEMORY_NONE));
    if (e->scratch_bytes) DN(dnnl_memory_create(&e->scratch, smd, d->engine, DNNL_MEMORY_NONE));
    e->key = *key;
    e->used = 1;
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    entry_free(e);
    return -1;
}

static int gemm_cached(amp_dnnl *d, const dnnl_key *key, float *c, const void *a, const void *b,
                       const char **impl, char *err, size_t errlen);

int amp_dnnl_native(amp_dnnl *d, amp_dtype dt, char *impl, size_t len) {
    dnnl_key kv;
    memset(&kv, 0, sizeof kv);
    kv.dt = (int)dt;
    kv.m = kv.n = kv.k = kv.lda = kv.ldb = kv.ldc = 64;
    kv.alpha = 1.0f;
    kv.batch = 1;
    kv.threads = 1;
    dnnl_entry e;
    char err[256];
    if (entry_make(d, &e, &kv, err, sizeof err) != 0) return 0; /* no implementation at all */
    snprintf(impl, len, "%s", e.impl ? e.impl : "?");
    entry_free(&e);
    return strncmp(impl, "ref", 3) != 0; /* the reference loops are no candidate */
}

int amp_dnnl_gemm(amp_dnnl *d, const amp_gemm_desc *g, const amp_dnnl_operands *o,
                  const char **impl, char *err, size_t errlen) {
    int batch = o->batch;
    float *c = o->c;
    const void *a = o->a, *b = o->b;
    int m = g->m, n = g->n, k = g->k;
    dnnl_key kv;
    memset(&kv, 0, sizeof kv); /* the key is compared as bytes */
    kv.dt = (int)o->dt;
    kv.ta = g->trans_a;
    kv.tb = g->trans_b;
    kv.m = m;
    kv.n = n;
    kv.k = k;
    kv.lda = g->lda;
    kv.ldb = g->ldb;
    kv.ldc = g->ldc;
    kv.alpha = g->alpha;
    kv.beta = g->beta;
    kv.batch = batch > 1 ? batch : 1;
    kv.sa = batch > 1 ? g->stride_a : 0;
    kv.sb = batch > 1 ? g->stride_b : 0;
    kv.sc = batch > 1 ? g->stride_c : 0;
    int max_threads = 1;
#ifdef _OPENMP
    max_threads = omp_get_max_threads();
#endif
    double flops = 2.0 * (double)m * (double)n * (double)k * (double)kv.batch;
    kv.threads = flops < FLOPS_PER_THREAD * max_threads ? (int)(flops / FLOPS_PER_THREAD) : max_threads;
    if (kv.threads < 1) kv.threads = 1;
    const dnnl_key *key = &kv;
    /* oneDNN takes its thread count from OpenMP's, when the primitive is
     * made and when it runs */
#ifdef _OPENMP
    if (kv.threads != max_threads) omp_set_num_threads(kv.threads);
#endif
    int rc = gemm_cached(d, key, c, a, b, impl, err, errlen);
#ifdef _OPENMP
    if (kv.threads != max_threads) omp_set_num_threads(max_threads);
#endif
    return rc;
}

static int gemm_cached(amp_dnnl *d, const dnnl_key *key, float *c, const void *a, const void *b,
                       const char **impl, char *err, size_t errlen) {
    dnnl_entry *e = NULL;
    for (int i = 0; i < CACHE_SIZE && !e; i++)
        if (d->cache[i].used && memcmp(&d->cache[i].key, key, sizeof *key) == 0) e = &d->cache[i];
    if (!e) {
        e = &d->cache[d->next_evict];
        d->next_evict = (d->next_evict + 1) % CACHE_SIZE;
        entry_free(e);
        if (entry_make(d, e, key, err, errlen) != 0) return -1;
        if (e->scratch_bytes > d->scratch_cap) {
            free(d->scratch);
            d->scratch = NULL;
            d->scratch_cap = 0;
            if (posix_memalign(&d->scratch, 64, e->scratch_bytes) != 0) {
                d->scratch = NULL;
                snprintf(err, errlen, "out of host memory for a %zu-byte GEMM scratchpad",
                         e->scratch_bytes);
                entry_free(e);
                return -1;
            }
            d->scratch_cap = e->scratch_bytes;
            if (d->scratch_cap > d->scratch_peak) d->scratch_peak = d->scratch_cap;
        }
    }
    DN(dnnl_memory_set_data_handle(e->a, (void *)a));
    DN(dnnl_memory_set_data_handle(e->b, (void *)b));
    DN(dnnl_memory_set_data_handle(e->c, c));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
    int nargs = 3;
    if (e->scratch) {
        DN(dnnl_memory_set_data_handle(e->scratch, d->scratch));
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch};
    }
    DN(dnnl_primitive_execute(e->prim, d->stream, nargs, args));
    DN(dnnl_stream_wait(d->stream));
    *impl = e->impl;
    return 0;
fail:
    return -1;
}

#else /* built without oneDNN */

int amp_dnnl_available(void) { return 0; }
const char *amp_dnnl_version(void) { return "none"; }
amp_dnnl *amp_dnnl_create(amp_isa isa, char *err, size_t errlen) {
    snprintf(err, errlen, "this amptrain was built without oneDNN (install libdnnl-dev and rebuild)");
    return NULL;
}
void amp_dnnl_destroy(amp_dnnl *d) { (void)d; }
int amp_dnnl_native(amp_dnnl *d, amp_dtype dt, char *impl, size_t len) { return 0; }
size_t amp_dnnl_scratch_bytes(const amp_dnnl *d) { return 0; }
int amp_dnnl_gemm(amp_dnnl *d, const amp_gemm_desc *g, const amp_dnnl_operands *o,
                  const char **impl, char *err, size_t errlen) {
    snprintf(err, errlen, "this amptrain was built without oneDNN");
    return -1;
}
#endif

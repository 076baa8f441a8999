/* Synchronised batch norm on the CPU backend (amp_batch_norm_fwd/bwd.sync):
 * two threads stand for two ranks, each with half of a batch, and the
 * amp_allsum hook adds their buffers (rank 0's + rank 1's, as MPI's sum of
 * two) behind a barrier. Against one call over the whole batch without a
 * hook: y, the saved statistics, the running statistics and dx of each half
 * within 1e-6 (the FP64 sums are added in another order, then rounded to
 * FP32), both halves' running statistics the same bits, and dgamma/dbeta
 * the sum of the halves' (the gradient sum over the ranks adds them). The
 * same halves without the hook must miss (the check can fail). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "expect.h"
#include "util/rng.h"

enum { N = 6, C = 5, HW = 7, HALF = N / 2 };
#define XN ((size_t)N * C * HW)

static amp_backend *be;
static pthread_barrier_t barrier;
static double *slot[2];

typedef struct rank_ctx {
    int rank;
    amp_allsum hook;
    const float *x, *g, *gamma, *beta;
    float *y, *sm, *si, *rm, *rv, *dx, *dg, *db;
    int rc;
} rank_ctx;

/* v += the other rank's v, in rank order on both */
static int two_rank_sum(void *ctx, double *v, size_t n) {
    rank_ctx *r = ctx;
    double *sum = malloc(n * sizeof *sum);
    if (!sum) return -1;
    slot[r->rank] = v;
    pthread_barrier_wait(&barrier);
    for (size_t i = 0; i < n; i++) sum[i] = slot[0][i] + slot[1][i];
    pthread_barrier_wait(&barrier);
    memcpy(v, sum, n * sizeof *sum);
    free(sum);
    return 0;
}

static int run_half(rank_ctx *r, const amp_allsum *sync) {
    if (AMP_CONV(be, batch_norm_forward,
                 &(amp_batch_norm_fwd){r->y, r->sm, r->si, r->rm, r->rv, r->x, r->gamma, r->beta,
                                       HALF, C, HW, 1, 0.1f, 1e-5f, sync, NULL, AMP_DTYPE_F32}) != 0)
        return -1;
    return AMP_CONV(be, batch_norm_backward,
                    &(amp_batch_norm_bwd){r->dx, r->dg, r->db, r->g, r->x, r->gamma, r->sm, r->si,
                                          HALF, C, HW, 1, sync, NULL, AMP_DTYPE_F32});
}

static void *rank_main(void *arg) {
    rank_ctx *r = arg;
    r->rc = run_half(r, &r->hook);
    return NULL;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

static float *alloc_f(size_t n) {
    float *p = calloc(n, sizeof *p);
    if (!p) abort();
    return p;
}

int main(void) {
    char err[512];
    be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "cpu backend: %s\n", err);
        return 1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, 7);
    float *x = alloc_f(XN), *g = alloc_f(XN), *gamma = alloc_f(C), *beta = alloc_f(C);
    for (size_t i = 0; i < XN; i++) x[i] = 3.0f + 2.0f * (float)amp_rng_normal(&rng);
    for (size_t i = 0; i < XN; i++) g[i] = (float)amp_rng_normal(&rng);
    for (int i = 0; i < C; i++) gamma[i] = 1.0f + 0.1f * (float)i, beta[i] = 0.2f * (float)i;
    /* one call over all N rows */
    float *y = alloc_f(XN), *dx = alloc_f(XN), *sm = alloc_f(C), *si = alloc_f(C);
    float *rm = alloc_f(C), *rv = alloc_f(C), *dg = alloc_f(C), *db = alloc_f(C);
    for (int i = 0; i < C; i++) rv[i] = 1.0f;
    EXPECT(AMP_CONV(be, batch_norm_forward,
                    &(amp_batch_norm_fwd){y, sm, si, rm, rv, x, gamma, beta, N, C, HW, 1, 0.1f,
                                          1e-5f, NULL, NULL, AMP_DTYPE_F32}) == 0 &&
               AMP_CONV(be, batch_norm_backward,
                        &(amp_batch_norm_bwd){dx, dg, db, g, x, gamma, sm, si, N, C, HW, 1,
                                              NULL, NULL, AMP_DTYPE_F32}) == 0,
           "the whole batch: %s", be->err);
    for (int synced = 1; synced >= 0; synced--) {
        rank_ctx r[2];
        size_t half = (size_t)HALF * C * HW;
        for (int k = 0; k < 2; k++) {
            r[k] = (rank_ctx){k,          {two_rank_sum, &r[k]}, x + k * half, g + k * half,
                              gamma,      beta,                  alloc_f(half), alloc_f(C),
                              alloc_f(C), alloc_f(C),            alloc_f(C),    alloc_f(half),
                              alloc_f(C), alloc_f(C),            0};
            for (int i = 0; i < C; i++) r[k].rv[i] = 1.0f;
        }
        if (synced) {
            pthread_t t[2];
            pthread_barrier_init(&barrier, NULL, 2);
            for (int k = 0; k < 2; k++) pthread_create(&t[k], NULL, rank_main, &r[k]);
            for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
            pthread_barrier_destroy(&barrier);
        } else {
            for (int k = 0; k < 2; k++) r[k].rc = run_half(&r[k], NULL);
        }
        EXPECT(r[0].rc == 0 && r[1].rc == 0, "the halves: %s", be->err);
        float dg2[C], db2[C];
        for (int i = 0; i < C; i++) dg2[i] = r[0].dg[i] + r[1].dg[i], db2[i] = r[0].db[i] + r[1].db[i];
        double worst = 0.0;
        for (int k = 0; k < 2; k++) {
            worst = fmax(worst, max_rel(r[k].y, y + k * half, half));
            worst = fmax(worst, max_rel(r[k].dx, dx + k * half, half));
            worst = fmax(worst, max_rel(r[k].sm, sm, C));
            worst = fmax(worst, max_rel(r[k].si, si, C));
            worst = fmax(worst, max_rel(r[k].rm, rm, C));
            worst = fmax(worst, max_rel(r[k].rv, rv, C));
        }
        worst = fmax(worst, max_rel(dg2, dg, C));
        worst = fmax(worst, max_rel(db2, db, C));
        int same_running = memcmp(r[0].rm, r[1].rm, C * 4) == 0 && memcmp(r[0].rv, r[1].rv, C * 4) == 0;
        if (synced) {
            EXPECT(worst <= 1e-6, "2 x %d rows synced vs 1 x %d: max relative difference %.3e", HALF,
                   N, worst);
            EXPECT(same_running, "the two ranks' running statistics differ");
            printf("sync batch norm, 2 x %d rows vs 1 x %d: max relative difference %.3e, running "
                   "statistics the same bits on both\n", HALF, N, worst);
        } else {
            EXPECT(worst > 1e-3, "without the hook the halves still match (%.3e): the check "
                   "cannot fail", worst);
            printf("without the hook: %.3e (each half's own statistics)\n", worst);
        }
        for (int k = 0; k < 2; k++) {
            free(r[k].y), free(r[k].sm), free(r[k].si), free(r[k].rm), free(r[k].rv);
            free(r[k].dx), free(r[k].dg), free(r[k].db);
        }
    }
    free(x), free(g), free(gamma), free(beta), free(y), free(dx), free(sm), free(si), free(rm);
    free(rv), free(dg), free(db);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}

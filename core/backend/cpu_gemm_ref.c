/* The reference GEMM (cpu_gemm_ref.h). Built with -ffp-contract=off: a
 * product of two floats is exact in a double, so each element's value is
 * fixed by the order of its sum alone (k ascending), whatever the loop
 * structure, the vector width or the thread that computes the row. */
#include "backend/cpu_gemm_ref.h"

#include <stdlib.h>

#define A(i, p) (trans_a ? a[(size_t)(p) * lda + (i)] : a[(size_t)(i) * lda + (p)])

int amp_gemm_ref(const amp_gemm_desc *g, float *c, const float *a, const float *b) {
    const int trans_a = g->trans_a, trans_b = g->trans_b, m = g->m, n = g->n, k = g->k;
    const int lda = g->lda, ldb = g->ldb, ldc = g->ldc;
    const float alpha = g->alpha, beta = g->beta;
    int failed = 0;
    double work = (double)m * n * k;
#pragma omp parallel if (work >= 1e6) reduction(| : failed)
    {
        double *acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);
        if (!acc) failed = 1;
#pragma omp for schedule(static)
        for (int i = 0; i < m; i++) {
            if (!acc) continue;
            if (trans_b) { /* b[j] is a row: one dot product per element */
                for (int j = 0; j < n; j++) {
                    const float *row = b + (size_t)j * ldb;
                    double s = 0.0;
                    for (int p = 0; p < k; p++) s += (double)A(i, p) * (double)row[p];
                    acc[j] = s;
                }
            } else { /* b[p] is a row: the row of c grows by a[i,p] b[p], p ascending */
                for (int j = 0; j < n; j++) acc[j] = 0.0;
                for (int p = 0; p < k; p++) {
                    double x = A(i, p);
                    const float *row = b + (size_t)p * ldb;
                    for (int j = 0; j < n; j++) acc[j] += x * (double)row[j];
                }
            }
            float *out = c + (size_t)i * ldc;
            for (int j = 0; j < n; j++) {
                double v = (double)alpha * acc[j];
                if (beta != 0.0f) v += (double)beta * (double)out[j];
                out[j] = (float)v;
            }
        }
        free(acc);
    }
    return failed ? -1 : 0;
}

#undef A

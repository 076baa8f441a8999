/* One arm against another. Arms of one study run the same seeds, so each
 * seed gives a pair of runs with the same initial weights and batches: the
 * verdict then rests on the per-seed differences (paired t interval). Welch's
 * interval is left for arms whose seeds differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ab/ab.h"

int amp_ab_same_seeds(const amp_ab_study *st, int a, int b) {
    const amp_ab_arm *A = &st->arms[a], *B = &st->arms[b];
    if (A->nruns != B->nruns || A->nruns < 1) return 0;
    for (int i = 0; i < A->nruns; i++)
        if (A->runs[i].seed != B->runs[i].seed) return 0;
    return 1;
}

double amp_ab_run_metric(const amp_ab_study *st, const amp_ab_run *r) {
    return st->metric == AMP_AB_METRIC_LOSS ? r->test_loss : r->test_acc;
}

int amp_ab_seed_deltas(const amp_ab_study *st, int a, int b, double *d) {
    if (!amp_ab_same_seeds(st, a, b)) return 0;
    const amp_ab_arm *A = &st->arms[a], *B = &st->arms[b];
    for (int i = 0; i < B->nruns; i++)
        d[i] = amp_ab_run_metric(st, &B->runs[i]) - amp_ab_run_metric(st, &A->runs[i]);
    return B->nruns;
}

/* Paired interval of one run field, b - a. */
#define PAIRED(dst, field)                                                  \
    do {                                                                    \
        for (int i = 0; i < n; i++) {                                       \
            xa[i] = A->runs[i].field;                                       \
            xb[i] = B->runs[i].field;                                       \
        }                                                                   \
        amp_ab_paired_ci(&out->dst, xa, xb, n, AMP_AB_LEVEL);               \
    } while (0)

void amp_ab_compare(amp_ab_cmp *out, const amp_ab_study *st, int a, int b) {
    const amp_ab_arm *A = &st->arms[a], *B = &st->arms[b];
    out->a = a;
    out->b = b;
    int n = A->nruns;
    double *xa = NULL, *xb = NULL;
    out->paired = amp_ab_same_seeds(st, a, b);
    if (out->paired) {
        xa = malloc((size_t)n * sizeof *xa);
        xb = malloc((size_t)n * sizeof *xb);
        out->paired = xa && xb;
    }
    if (out->paired) {
        PAIRED(final_loss, final_loss);
        PAIRED(test_loss, test_loss);
        PAIRED(test_acc, test_acc);
        PAIRED(median_ms, median_ms);
    } else {
        amp_ab_welch_ci(&out->final_loss, &A->final_loss, &B->final_loss, AMP_AB_LEVEL);
        amp_ab_welch_ci(&out->test_loss, &A->test_loss, &B->test_loss, AMP_AB_LEVEL);
        amp_ab_welch_ci(&out->test_acc, &A->test_acc, &B->test_acc, AMP_AB_LEVEL);
        amp_ab_welch_ci(&out->median_ms, &A->median_ms, &B->median_ms, AMP_AB_LEVEL);
    }
    free(xa);
    free(xb);
    out->verdict = st->metric == AMP_AB_METRIC_LOSS ? out->test_loss : out->test_acc;
    amp_ab_speed_compare(&out->speed, st, a, b);
    out->speedup = out->speed.speedup;
    int t = amp_ab_mem_total(st);
    out->mem_ratio = t >= 0 ? B->mem[t].mean / A->mem[t].mean : NAN;
}

void amp_ab_interval_name(char *buf, size_t cap, const amp_ab_welch *w) {
    if (!w->paired) snprintf(buf, cap, "Welch");
    else if (w->n < 2) snprintf(buf, cap, "paired t, n = %d: no interval", w->n);
    else snprintf(buf, cap, "paired t, %d df", w->n - 1);
}

#define SHOW_SEEDS 6 /* per-seed differences listed; beyond, their range */

void amp_ab_seed_deltas_text(char *buf, size_t cap, const amp_ab_study *st, int a, int b) {
    double *d = malloc((size_t)(st->arms[b].nruns > 0 ? st->arms[b].nruns : 1) * sizeof *d);
    int n = d ? amp_ab_seed_deltas(st, a, b, d) : 0;
    if (n == 0) {
        snprintf(buf, cap, "-");
    } else if (n <= SHOW_SEEDS) {
        size_t k = 0;
        buf[0] = 0;
        for (int i = 0; i < n && k < cap; i++)
            k += (size_t)snprintf(buf + k, cap - k, "%s%+.4f", i ? " " : "", d[i]);
    } else {
        amp_ab_summary s;
        amp_ab_summarize(&s, d, n);
        snprintf(buf, cap, "%d seeds, %+.4f to %+.4f", n, s.min, s.max);
    }
    free(d);
}

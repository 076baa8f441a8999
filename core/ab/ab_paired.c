/* The paired t interval. Arms that share seeds start from the same weights
 * and see the same batches, so most of the seed-to-seed spread is common to
 * both: the differences b_i - a_i vary far less than either arm, and their
 * t interval (n - 1 degrees of freedom) resolves what Welch's, which treats
 * the arms as independent samples, cannot. */
#include <math.h>
#include <stdlib.h>

#include "ab/ab_stats.h"

void amp_ab_paired_ci(amp_ab_welch *out, const double *a, const double *b, int n, double level) {
    out->paired = 1;
    out->has_ci = 0;
    out->significant = 0;
    out->n = 0;
    out->diff = out->se = out->df = out->lo = out->hi = NAN;
    double *d = calloc((size_t)(n > 0 ? n : 1), sizeof *d);
    if (!d) return;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) d[k++] = b[i] - a[i];
    amp_ab_summary s;
    amp_ab_summarize(&s, d, k);
    free(d);
    out->n = k;
    out->diff = s.mean;
    if (k < 2) return; /* one difference has no spread to estimate */
    out->has_ci = 1;
    out->df = k - 1;
    out->se = s.sd / sqrt(k);
    if (out->se == 0.0) {
        out->lo = out->hi = out->diff; /* every seed gave the same difference */
        out->df = NAN;
    } else {
        double t = amp_ab_t_quantile(0.5 + 0.5 * level, out->df);
        out->lo = out->diff - t * out->se;
        out->hi = out->diff + t * out->se;
    }
    out->significant = out->lo > 0.0 || out->hi < 0.0;
}

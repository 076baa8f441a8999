/* Statistics for A/B runs: sample summaries, Student's t quantiles and
 * Welch's confidence interval for a difference of means. */
#ifndef AMP_AB_STATS_H
#define AMP_AB_STATS_H

#include <stddef.h>

typedef struct amp_ab_summary {
    int n;
    double mean;
    double sd;  /* sample standard deviation (n - 1); NAN when n < 2 */
    double min, max;
} amp_ab_summary;

void amp_ab_summarize(amp_ab_summary *out, const double *x, int n);

/* q-quantile of x (sorted ascending), linear interpolation between order
 * statistics (numpy's default). */
double amp_ab_quantile_sorted(const double *x, size_t n, double q);

/* Regularized incomplete beta I_x(a, b) for a, b > 0, 0 <= x <= 1. */
double amp_ab_betainc(double a, double b, double x);
/* Student's t CDF with df > 0 degrees of freedom (df need not be an
 * integer). */
double amp_ab_t_cdf(double t, double df);
/* Its inverse for 0 < p < 1. */
double amp_ab_t_quantile(double p, double df);

/* An interval for mean(b) - mean(a): Welch's for independent samples, or
 * the paired t interval on the per-seed differences b_i - a_i
 * (amp_ab_paired_ci) when a and b ran the same seeds. */
typedef struct amp_ab_welch {
    double diff;    /* mean(b) - mean(a) */
    int paired;     /* from per-seed differences (paired t), not Welch */
    int n;          /* paired: the pairs; Welch: the smaller sample */
    int has_ci;     /* 0 when either side has fewer than 2 values (paired: pairs) */
    double se;      /* sqrt(var_a/n_a + var_b/n_b); paired: sd(d)/sqrt(n) */
    double df;      /* Welch-Satterthwaite; paired: n - 1; NAN when se == 0 */
    double lo, hi;  /* diff -/+ t(1 - alpha/2, df) * se; [diff, diff] when se == 0 */
    int significant; /* the interval excludes 0 */
} amp_ab_welch;

void amp_ab_welch_ci(amp_ab_welch *out, const amp_ab_summary *a, const amp_ab_summary *b,
                     double level);

/* The paired t interval: d_i = b[i] - a[i] over the n pairs where both are
 * finite, mean(d) -/+ t(1 - alpha/2, n - 1) * sd(d) / sqrt(n). has_ci is 0
 * when fewer than 2 pairs remain. */
void amp_ab_paired_ci(amp_ab_welch *out, const double *a, const double *b, int n, double level);

#endif

/* The A/B statistics against reference values computed with SciPy 1.17.1
 * (scipy.stats.t, scipy.special.betainc, scipy.stats.ttest_ind with
 * equal_var=False and .confidence_interval(0.95)). The expressions that gave
 * each value are in the comments; the test itself needs no python. */
#include <math.h>
#include <stdio.h>

#include "ab/ab_stats.h"
#include "expect.h"

static int close_to(double got, double want, double rtol) {
    return fabs(got - want) <= rtol * fabs(want) + 1e-15;
}

#define NEAR(got, want, rtol) \
    EXPECT(close_to((got), (want), (rtol)), "%s = %.17g, expected %.17g", #got, (double)(got), (double)(want))

static void summary_of(amp_ab_summary *s, const double *x, int n) { amp_ab_summarize(s, x, n); }

int main(void) {
    /* stats.t.ppf(0.975, df) */
    NEAR(amp_ab_t_quantile(0.975, 1), 12.706204736174694, 1e-10);
    NEAR(amp_ab_t_quantile(0.975, 2), 4.302652729749462, 1e-10);
    NEAR(amp_ab_t_quantile(0.975, 3.7), 2.8675207071911895, 1e-10);
    NEAR(amp_ab_t_quantile(0.975, 10), 2.228138851986274, 1e-10);
    NEAR(amp_ab_t_quantile(0.975, 30), 2.0422724563012378, 1e-10);
    NEAR(amp_ab_t_quantile(0.975, 1000), 1.9623390808264083, 1e-10);
    NEAR(amp_ab_t_quantile(0.025, 10), -2.228138851986274, 1e-10); /* symmetry */
    EXPECT(amp_ab_t_quantile(0.5, 7) == 0.0, "median of t is 0");
    EXPECT(isnan(amp_ab_t_quantile(1.0, 7)) && isnan(amp_ab_t_quantile(0.9, 0)), "domain");
    /* stats.t.cdf(-2.5, 4.5), stats.t.cdf(1.0, 7) */
    NEAR(amp_ab_t_cdf(-2.5, 4.5), 0.029952843251100272, 1e-10);
    NEAR(amp_ab_t_cdf(1.0, 7), 0.8246916685898963, 1e-10);
    /* scipy.special.betainc(2.5, 0.5, 0.3), betainc(7, 3, 0.9) (both branches) */
    NEAR(amp_ab_betainc(2.5, 0.5, 0.3), 0.018927124071945658, 1e-10);
    NEAR(amp_ab_betainc(7, 3, 0.9), 0.947027862, 1e-10);

    /* mean / sample sd: numpy.mean, numpy.std(ddof=1) of [2, 4, 4, 4, 5, 5, 7, 9] */
    double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    amp_ab_summary s;
    summary_of(&s, x, 8);
    NEAR(s.mean, 5.0, 1e-15);
    NEAR(s.sd, 2.138089935299395, 1e-14);
    EXPECT(s.min == 2 && s.max == 9 && s.n == 8, "min %g max %g n %d", s.min, s.max, s.n);
    /* numpy.quantile([2,4,4,4,5,5,7,9], [0.25, 0.5, 0.9]) = 4, 4.5, 7.6 */
    NEAR(amp_ab_quantile_sorted(x, 8, 0.25), 4.0, 1e-15);
    NEAR(amp_ab_quantile_sorted(x, 8, 0.5), 4.5, 1e-15);
    NEAR(amp_ab_quantile_sorted(x, 8, 0.9), 7.6, 1e-14);

    /* Welch, b - a: ttest_ind(b, a, equal_var=False).confidence_interval(0.95) */
    {
        double a[] = {0.8814, 0.8791, 0.8830}, b[] = {0.8793, 0.8765, 0.8772};
        amp_ab_summary sa, sb;
        amp_ab_welch w;
        summary_of(&sa, a, 3);
        summary_of(&sb, b, 3);
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        NEAR(w.diff, -0.0034999999999999476, 1e-9);
        NEAR(w.df, 3.6931081422194203, 1e-10);
        NEAR(w.lo, -0.00754728618281846, 1e-9);
        NEAR(w.hi, 0.0005472861828185651, 1e-7);
        EXPECT(w.has_ci && !w.significant, "the interval contains 0: not significant");
    }
    {
        double a[] = {10.1, 9.8, 10.4, 10.0, 9.9}, b[] = {12.3, 11.1, 13.0};
        amp_ab_summary sa, sb;
        amp_ab_welch w;
        summary_of(&sa, a, 5);
        summary_of(&sb, b, 3);
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        NEAR(w.df, 2.138865519079642, 1e-10);
        NEAR(w.lo, -0.1894719968894205, 1e-9);
        NEAR(w.hi, 4.3761386635560875, 1e-10);
        EXPECT(!w.significant, "lo < 0 < hi");
    }
    {
        /* equal variances and sizes: df = 2(n-1) = 2 exactly */
        double a[] = {1.0, 2.0}, b[] = {1.5, 2.5};
        amp_ab_summary sa, sb;
        amp_ab_welch w;
        summary_of(&sa, a, 2);
        summary_of(&sb, b, 2);
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        NEAR(w.df, 2.0, 1e-12);
        NEAR(w.lo, -2.5424349222966542, 1e-10);
        NEAR(w.hi, 3.5424349222966542, 1e-10);
    }
    {
        /* clearly separated: significant */
        double a[] = {1.0, 1.1, 0.9}, b[] = {2.0, 2.1, 1.9};
        amp_ab_summary sa, sb;
        amp_ab_welch w;
        summary_of(&sa, a, 3);
        summary_of(&sb, b, 3);
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        EXPECT(w.significant && w.lo > 0, "lo %g", w.lo);
    }
    {
        /* one seed: no interval is made up */
        double a[] = {0.88}, b[] = {0.87, 0.86};
        amp_ab_summary sa, sb;
        amp_ab_welch w;
        summary_of(&sa, a, 1);
        summary_of(&sb, b, 2);
        EXPECT(isnan(sa.sd), "sd of one value is undefined");
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        EXPECT(!w.has_ci && isnan(w.lo) && isnan(w.hi) && !w.significant, "no CI with n = 1");
        NEAR(w.diff, 0.865 - 0.88, 1e-12);
    }
    {
        /* no spread on either side (deterministic runs): a point interval */
        double a[] = {3.0, 3.0}, b[] = {3.0, 3.0}, c[] = {4.0, 4.0};
        amp_ab_summary sa, sb, sc;
        amp_ab_welch w;
        summary_of(&sa, a, 2);
        summary_of(&sb, b, 2);
        summary_of(&sc, c, 2);
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        EXPECT(w.has_ci && w.lo == 0 && w.hi == 0 && !w.significant && isnan(w.df), "equal constants");
        amp_ab_welch_ci(&w, &sa, &sc, 0.95);
        EXPECT(w.lo == 1 && w.hi == 1 && w.significant, "different constants");
    }
    {
        /* Paired against Welch on the same per-seed values. Three seeds; the
         * arm's loss is the baseline's + 0.010, 0.012, 0.014, on top of a
         * seed-to-seed spread of 0.1 that both arms share.
         * By hand: d = (0.010, 0.012, 0.014), mean(d) = 0.012,
         * sd(d) = sqrt((0.002^2 + 0 + 0.002^2) / 2) = 0.002,
         * se = 0.002 / sqrt(3) = 0.0011547005383792516, df = n - 1 = 2,
         * t(0.975, 2) = 4.302652729749462 (checked above), half-width
         * 4.302652729749462 * 0.0011547005383792516 = 0.0049682754235007,
         * interval [0.0070317245764993, 0.0169682754235007]: excludes 0.
         * Welch on the same values: var_a = 0.01, var_b = 0.010204, se =
         * sqrt(0.01/3 + 0.010204/3) = 0.0820650, df = 3.9996, t ~ 2.776,
         * half-width ~ 0.228: the interval [-0.216, +0.240] contains 0. */
        double a[] = {2.400, 2.300, 2.500}, b[] = {2.410, 2.312, 2.514};
        amp_ab_summary sa, sb;
        amp_ab_welch w, p;
        summary_of(&sa, a, 3);
        summary_of(&sb, b, 3);
        amp_ab_welch_ci(&w, &sa, &sb, 0.95);
        EXPECT(w.has_ci && !w.paired && w.lo < 0 && w.hi > 0 && !w.significant,
               "Welch [%g, %g] contains 0", w.lo, w.hi);
        NEAR(w.se, 0.08206501487641775, 1e-9);
        amp_ab_paired_ci(&p, a, b, 3, 0.95);
        EXPECT(p.paired && p.has_ci && p.n == 3 && p.df == 2, "paired, n %d, df %g", p.n, p.df);
        NEAR(p.diff, 0.012, 1e-9);
        NEAR(p.se, 0.0011547005383792516, 1e-9);
        NEAR(p.lo, 0.0070317245764993, 1e-9);
        NEAR(p.hi, 0.0169682754235007, 1e-9);
        EXPECT(p.significant, "paired [%g, %g] excludes 0", p.lo, p.hi);
    }
    {
        /* one pair: a difference but no interval; a non-finite pair is dropped */
        double a[] = {2.4, NAN}, b[] = {2.5, 2.6};
        amp_ab_welch p;
        amp_ab_paired_ci(&p, a, b, 2, 0.95);
        EXPECT(p.paired && !p.has_ci && p.n == 1 && !p.significant && isnan(p.lo), "n = 1: no CI");
        NEAR(p.diff, 0.1, 1e-12);
    }
    if (amp_test_failures) fprintf(stderr, "%d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}

/* Numerics for ab_stats.h. The incomplete beta is the standard continued
 * fraction evaluated with the modified Lentz method; the t quantile inverts
 * the CDF by bisection, which is slow but cannot diverge and is plenty for a
 * handful of intervals. */
#include "ab/ab_stats.h"

#include <float.h>
#include <math.h>

void amp_ab_summarize(amp_ab_summary *out, const double *x, int n) {
    out->n = n;
    out->mean = out->sd = out->min = out->max = NAN;
    if (n < 1) return;
    double s = 0.0;
    out->min = out->max = x[0];
    for (int i = 0; i < n; i++) {
        s += x[i];
        if (x[i] < out->min) out->min = x[i];
        if (x[i] > out->max) out->max = x[i];
    }
    out->mean = s / n;
    if (n < 2) return;
    double ss = 0.0; /* two-pass: no cancellation for nearly equal values */
    for (int i = 0; i < n; i++) ss += (x[i] - out->mean) * (x[i] - out->mean);
    out->sd = sqrt(ss / (n - 1));
}

double amp_ab_quantile_sorted(const double *x, size_t n, double q) {
    if (n == 0) return NAN;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i + 1 >= n) return x[n - 1];
    double f = pos - (double)i;
    return x[i] + f * (x[i + 1] - x[i]);
}

/* Continued fraction for I_x(a,b), valid (fast) for x < (a+1)/(a+b+2). */
static double betacf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 10000; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + num * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + num / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + num * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + num / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-16) break;
    }
    return h;
}

double amp_ab_betainc(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return exp(lbt) * betacf(a, b, x) / a;
    return 1.0 - exp(lbt) * betacf(b, a, 1.0 - x) / b;
}

double amp_ab_t_cdf(double t, double df) {
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return t > 0 ? 1.0 : 0.0;
    /* P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2) */
    double tail = 0.5 * amp_ab_betainc(0.5 * df, 0.5, df / (df + t * t));
    return t > 0 ? 1.0 - tail : tail;
}

double amp_ab_t_quantile(double p, double df) {
    if (!(p > 0.0 && p < 1.0) || !(df > 0)) return NAN;
    if (p == 0.5) return 0.0;
    /* Symmetry: solve in the upper half, where the CDF is well resolved. */
    double q = p > 0.5 ? p : 1.0 - p;
    double lo = 0.0, hi = 1.0;
    while (amp_ab_t_cdf(hi, df) < q && hi < 1e300) hi *= 2.0;
    for (int i = 0; i < 2000 && hi - lo > 4 * DBL_EPSILON * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (amp_ab_t_cdf(mid, df) < q)
            lo = mid;
        else
            hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return p > 0.5 ? t : -t;
}

void amp_ab_welch_ci(amp_ab_welch *out, const amp_ab_summary *a, const amp_ab_summary *b,
                     double level) {
    out->diff = b->mean - a->mean;
    out->paired = 0;
    out->n = a->n < b->n ? a->n : b->n;
    out->has_ci = 0;
    out->se = out->df = out->lo = out->hi = NAN;
    out->significant = 0;
    if (a->n < 2 || b->n < 2) return; /* no spread to estimate: no interval */
    double va = a->sd * a->sd / a->n, vb = b->sd * b->sd / b->n;
    out->has_ci = 1;
    out->se = sqrt(va + vb);
    if (out->se == 0.0) {
        /* Both sides constant: every draw gave the same value, so the
         * interval collapses to the observed difference. */
        out->lo = out->hi = out->diff;
    } else {
        out->df = (va + vb) * (va + vb) / (va * va / (a->n - 1) + vb * vb / (b->n - 1));
        double t = amp_ab_t_quantile(0.5 + 0.5 * level, out->df);
        out->lo = out->diff - t * out->se;
        out->hi = out->diff + t * out->se;
    }
    out->significant = out->lo > 0.0 || out->hi < 0.0;
}

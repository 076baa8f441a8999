#include "median.h"

#include <math.h>
#include <stdlib.h>

void amp_median_init(amp_median *m) {
    m->seen = 0;
    amp_rng_seed(&m->rng, 0x6d656469616eULL);
}

void amp_median_add(amp_median *m, double v) {
    if (m->seen < AMP_MEDIAN_KEEP) {
        m->keep[m->seen++] = v;
        return;
    }
    /* the (seen+1)-th value replaces a kept one with probability KEEP/(seen+1) */
    uint64_t j = amp_rng_below(&m->rng, ++m->seen);
    if (j < AMP_MEDIAN_KEEP) m->keep[j] = v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double amp_median_get(amp_median *m) {
    size_t n = m->seen < AMP_MEDIAN_KEEP ? (size_t)m->seen : AMP_MEDIAN_KEEP;
    if (n == 0) return NAN; /* nothing measured */
    qsort(m->keep, n, sizeof m->keep[0], cmp_double);
    return m->keep[n / 2];
}

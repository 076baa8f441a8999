/* amp_median: the median of a stream of any length in bounded memory (a
 * run of [train] steps = 1e12 must not need an array of 1e12 timings).
 * Exact while at most AMP_MEDIAN_KEEP values were added; past that, the
 * median of a uniform reservoir sample of AMP_MEDIAN_KEEP of them
 * (Vitter's algorithm R, seeded with a fixed value, so the same stream
 * gives the same answer). */
#ifndef AMP_MEDIAN_H
#define AMP_MEDIAN_H

#include <stdint.h>

#include "rng.h"

#define AMP_MEDIAN_KEEP 4096

typedef struct amp_median {
    double keep[AMP_MEDIAN_KEEP];
    uint64_t seen; /* values added so far */
    amp_rng rng;
} amp_median;

void amp_median_init(amp_median *m);
void amp_median_add(amp_median *m, double v);
/* The median (the upper one of an even count); NAN when nothing was added.
 * Reorders the sample, which stays a valid sample. */
double amp_median_get(amp_median *m);

#endif

/* Which arm to use: the cheapest whose verdict stays within a tolerance of
 * the baseline's, with the evidence for and against every arm
 * (ab_recommend.c), and which arms ran their formats emulated
 * (ab_emulated.c). */
#ifndef AMP_AB_RECOMMEND_H
#define AMP_AB_RECOMMEND_H

#include <stdio.h>

#include "ab/ab.h"

/* Default tolerances (--tolerance overrides the one of the study's metric):
 * an arm qualifies when its whole 95% interval for Δ is no worse than this. */
#define AMP_AB_TOL_LOSS 0.005 /* validation loss, nats (about 0.5% perplexity) */
#define AMP_AB_TOL_ACC 0.005 /* test accuracy, 0.5 percentage points */

typedef struct amp_ab_rec_arm {
    int qualifies;
    char pro[480], con[640]; /* evidence for and against, "; "-separated */
} amp_ab_rec_arm;

typedef struct amp_ab_rec {
    int best;         /* the arm recommended; 0 (the baseline) when none qualifies */
    double tolerance; /* on the verdict metric, as applied */
    int tol_given;    /* from --tolerance, not the default */
    char why[512];    /* the recommendation's reason, one sentence */
    amp_ab_rec_arm arms[AMP_AB_MAX_ARMS];
} amp_ab_rec;

/* The tolerance the study applies: --tolerance, or the metric's default. */
double amp_ab_tolerance(const amp_ab_study *st);
void amp_ab_recommend(amp_ab_rec *out, const amp_ab_study *st);
/* The recommendation and the evidence, for the terminal. */
void amp_ab_recommend_print(const amp_ab_rec *r, const amp_ab_study *st, FILE *f);
/* The same as a report.html card (id="recommendation"). */
void amp_ab_recommend_html(const amp_ab_rec *r, const amp_ab_study *st, FILE *f);

/* Whether arm a's number formats ran emulated on the study's device: FP8,
 * MXFP8 and NVFP4 always on a CPU; FP16 and BF16 on a CPU whose GEMMs all
 * widened to FP32 (no native 16-bit path in the run's gemm_paths). 1 with
 * what into buf ("fp8 (no FP8 arithmetic on this CPU)"), else 0. */
int amp_ab_emulated(const amp_ab_study *st, int a, char *buf, size_t cap);

#endif

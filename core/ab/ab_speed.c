/* Speed results that a busy machine cannot invent. Wall time per step grows
 * when other processes take the CPUs; process CPU time (all threads) does
 * not. When the wall/CPU ratio moved between runs, or the load average
 * exceeded the CPUs, the study is "disturbed": on the CPU the speedup then
 * compares CPU time, and no speed difference is called significant. The
 * speedup pairs runs by seed (same data, same start), so a slow phase of the
 * machine hits one pair, not one arm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"

#define RATIO_SPREAD 1.25 /* wall/CPU ratios further apart than this: disturbed */
#define SEED_SPREAD 0.15  /* sd of the per-seed log ratios above this: too noisy to judge */

const char *amp_ab_speed_basis(const amp_ab_study *st) { return st->timing.cpu_basis ? "CPU" : "wall"; }

double amp_ab_run_step_ms(const amp_ab_study *st, const amp_ab_run *r) {
    return st->timing.cpu_basis ? r->median_cpu_ms : r->median_ms;
}

/* Wall time / CPU time over all of a run's steps: a neighbour that takes the
 * CPU now and then slows some steps, which a median would hide. NAN without
 * CPU times. */
static double wall_cpu_ratio(const amp_ab_run *r) {
    double w = 0, c = 0;
    for (size_t i = 0; i < r->npts; i++) {
        if (!isfinite(r->pts[i].cpu_ms)) return NAN;
        w += r->pts[i].step_ms;
        c += r->pts[i].cpu_ms;
    }
    return c > 0 ? w / c : NAN;
}

void amp_ab_timing_check(amp_ab_study *st) {
    amp_ab_timing *t = &st->timing;
    memset(t, 0, sizeof *t);
    t->ratio_lo = INFINITY;
    t->ratio_hi = -INFINITY;
    t->load_max = NAN;
    int have_cpu = 1, on_cpu = strcmp(st->device, "cpu") == 0;
    for (int a = 0; a < st->narms; a++)
        for (int i = 0; i < st->arms[a].nruns; i++) {
            const amp_ab_run *r = &st->arms[a].runs[i];
            double q = wall_cpu_ratio(r);
            if (!(r->median_cpu_ms > 0) || !(q > 0)) {
                have_cpu = 0;
            } else {
                if (q < t->ratio_lo) t->ratio_lo = q;
                if (q > t->ratio_hi) t->ratio_hi = q;
            }
            double l = fmax(r->load_start, r->load_end); /* fmax skips a NAN */
            if (isfinite(l) && !(l <= t->load_max)) t->load_max = l;
        }
    size_t n = 0;
    if (have_cpu && t->ratio_hi > RATIO_SPREAD * t->ratio_lo)
        n += (size_t)snprintf(t->why + n, sizeof t->why - n,
                              "wall/CPU time per step ranged %.2f-%.2f across runs",
                              t->ratio_lo, t->ratio_hi);
    if (isfinite(t->load_max) && st->ncpu > 0 && t->load_max > st->ncpu + 1 && n < sizeof t->why)
        n += (size_t)snprintf(t->why + n, sizeof t->why - n,
                              "%sload average reached %.1f on %d CPUs", n ? "; " : "",
                              t->load_max, st->ncpu);
    t->disturbed = n > 0;
    /* CPU time says nothing about a GPU's work: there wall time stays. */
    t->cpu_basis = t->disturbed && have_cpu && on_cpu;
}

void amp_ab_speed_compare(amp_ab_speed *out, const amp_ab_study *st, int a, int b) {
    const amp_ab_arm *A = &st->arms[a], *B = &st->arms[b];
    memset(out, 0, sizeof *out);
    out->speedup = out->lo = out->hi = out->seed_lo = out->seed_hi = NAN;
    int n = A->nruns < B->nruns ? A->nruns : B->nruns;
    double *x = calloc((size_t)(n > 0 ? n : 1), sizeof *x);
    if (!x) return;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double ta = amp_ab_run_step_ms(st, &A->runs[i]), tb = amp_ab_run_step_ms(st, &B->runs[i]);
        if (ta > 0 && tb > 0 && isfinite(ta) && isfinite(tb)) x[k++] = log(ta / tb);
    }
    amp_ab_summary s;
    amp_ab_summarize(&s, x, k);
    free(x);
    out->n = k;
    if (k < 1) return;
    out->speedup = exp(s.mean);
    out->seed_lo = exp(s.min);
    out->seed_hi = exp(s.max);
    if (k < 2) return;
    double tq = amp_ab_t_quantile(0.5 + 0.5 * AMP_AB_LEVEL, k - 1), se = s.sd / sqrt(k);
    out->has_ci = 1;
    out->lo = exp(s.mean - tq * se);
    out->hi = exp(s.mean + tq * se);
    out->noisy = s.sd > SEED_SPREAD;
    out->significant = !st->timing.disturbed && !out->noisy && (out->lo > 1.0 || out->hi < 1.0);
}

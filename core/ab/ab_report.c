/* report.html: one self-contained page (inline CSS and SVG, no script, no
 * network) with the verdict table and the charts of an A/B study. Every
 * chart is an <svg class="chart" id="chart-..."> whose series are elements
 * of class "data" carrying data-arm, so tests can find them in the DOM. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/ab_html.h"
#include "ab/ab_scan.h"

/* ------------------------------------------------------------ axes */

typedef struct frame {
    double x0, x1, y0, y1; /* data range (log2 values on a log2 axis) */
    double L, T, W, H;     /* plot area in pixels */
} frame;

static double fx(const frame *f, double x) { return f->L + (x - f->x0) / (f->x1 - f->x0) * f->W; }
static double fy(const frame *f, double y) {
    return f->T + f->H - (y - f->y0) / (f->y1 - f->y0) * f->H;
}

static double nice_step(double range, int target) {
    if (!(range > 0)) return 1.0;
    double raw = range / target, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1.0 : r < 3.0 ? 2.0 : r < 7.0 ? 5.0 : 10.0) * mag;
}

/* Widens [*lo, *hi] to whole ticks; a flat range gets some room. */
static double nice_range(double *lo, double *hi, int target) {
    if (!(*hi > *lo)) {
        double pad = *lo != 0 ? fabs(*lo) * 0.05 : 1.0;
        *lo -= pad;
        *hi += pad;
    }
    double step = nice_step(*hi - *lo, target);
    *lo = floor(*lo / step + 1e-9) * step;
    *hi = ceil(*hi / step - 1e-9) * step;
    return step;
}

static void tick_label(char *buf, size_t cap, double v, double step) {
    if (fabs(v) < step * 1e-6) v = 0;
    if (fabs(v) >= 1e5 || (fabs(v) < 1e-3 && v != 0))
        snprintf(buf, cap, "%.2g", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, cap, "%.*f", dec, v);
    }
}

static void svg_open(FILE *f, const char *id, const char *label, int w, int h) {
    fprintf(f,
            "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d "
            "%d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
            id, w, h, w, h);
    amp_ab_html_esc(f, label);
    fputs("\">\n", f);
}

/* Grid, ticks and titles. ylog2: y values are log2 and labelled 2^k. */
static void axes(FILE *f, const frame *fr, double xstep, double ystep, const char *xtitle,
                 const char *ytitle, int ylog2) {
    char buf[64];
    fprintf(f, "<g class=\"axes\">\n");
    for (double y = fr->y0; y <= fr->y1 + ystep * 1e-6; y += ystep) {
        double py = fy(fr, y);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", fr->L,
                fr->L + fr->W, py, py);
        if (ylog2)
            fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">2<tspan dy=\"-5\" font-size=\"9\">%d</tspan></text>\n",
                    fr->L - 6, py + 4, (int)lround(y));
        else {
            tick_label(buf, sizeof buf, y, ystep);
            fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                    fr->L - 6, py + 4, buf);
        }
    }
    if (xstep > 0)
        for (double x = fr->x0; x <= fr->x1 + xstep * 1e-6; x += xstep) {
            double px = fx(fr, x);
            tick_label(buf, sizeof buf, x, xstep);
            fprintf(f, "<line class=\"tickmark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                    px, px, fr->T + fr->H, fr->T + fr->H + 4, px, fr->T + fr->H + 17, buf);
        }
    fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
            fr->L, fr->T, fr->W, fr->H);
    fprintf(f, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            fr->L + fr->W / 2, fr->T + fr->H + 34, xtitle);
    fprintf(f,
            "<text class=\"axis-title\" transform=\"translate(%.1f %.1f) rotate(-90)\" "
            "text-anchor=\"middle\">%s</text>\n</g>\n",
            fr->L - 44, fr->T + fr->H / 2, ytitle);
}

static void legend(FILE *f, const amp_ab_study *st) {
    fputs("<div class=\"legend\">", f);
    for (int a = 0; a < st->narms; a++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", amp_ab_html_color(a));
        amp_ab_html_esc(f, st->arms[a].name);
        fputs("</span>", f);
    }
    fputs("</div>\n", f);
}

static void figure_open(FILE *f, const char *title, const char *note, const amp_ab_study *st) {
    fprintf(f, "<figure>\n<figcaption><b>%s</b> <span class=\"note\">%s</span></figcaption>\n",
            title, note);
    if (st) legend(f, st);
}

/* Path points: "M x y L x y ..." into f, skipping non-finite values. */
typedef struct pathw {
    FILE *f;
    int started;
} pathw;

static void path_pt(pathw *p, double x, double y) {
    if (!isfinite(x) || !isfinite(y)) return;
    fprintf(p->f, "%s%.1f %.1f", p->started ? " L" : "M", x, y);
    p->started = 1;
}

/* ------------------------------------------------------------ loss */

enum { LOSS_BUCKETS = 200 };

typedef struct band {
    double x[LOSS_BUCKETS], mean[LOSS_BUCKETS], lo[LOSS_BUCKETS], hi[LOSS_BUCKETS];
    int n;
    int width; /* steps per bucket */
} band;

/* Mean training loss per bucket of steps, then mean/min/max across seeds. */
static void loss_band(band *b, const amp_ab_arm *arm) {
    size_t npts = arm->runs[0].npts;
    for (int r = 1; r < arm->nruns; r++)
        if (arm->runs[r].npts < npts) npts = arm->runs[r].npts;
    int nb = npts < LOSS_BUCKETS ? (int)npts : LOSS_BUCKETS;
    b->n = nb;
    b->width = nb ? (int)((npts + nb - 1) / nb) : 1;
    for (int j = 0; j < nb; j++) {
        size_t s0 = npts * (size_t)j / nb, s1 = npts * (size_t)(j + 1) / nb;
        double sum_mean = 0, lo = INFINITY, hi = -INFINITY;
        int nr = 0;
        for (int r = 0; r < arm->nruns; r++) {
            double s = 0;
            int c = 0;
            for (size_t i = s0; i < s1; i++)
                if (isfinite(arm->runs[r].pts[i].loss)) {
                    s += arm->runs[r].pts[i].loss;
                    c++;
                }
            if (!c) continue;
            s /= c;
            sum_mean += s;
            nr++;
            if (s < lo) lo = s;
            if (s > hi) hi = s;
        }
        b->x[j] = 0.5 * (double)(arm->runs[0].pts[s0].step + arm->runs[0].pts[s1 - 1].step);
        b->mean[j] = nr ? sum_mean / nr : NAN;
        b->lo[j] = nr ? lo : NAN;
        b->hi[j] = nr ? hi : NAN;
    }
}

static double max_step(const amp_ab_study *st) {
    double m = 1;
    for (int a = 0; a < st->narms; a++)
        for (int r = 0; r < st->arms[a].nruns; r++) {
            const amp_ab_run *run = &st->arms[a].runs[r];
            if (run->npts && run->pts[run->npts - 1].step > m) m = (double)run->pts[run->npts - 1].step;
        }
    return m;
}

static void chart_loss(FILE *f, const amp_ab_study *st) {
    band *b = calloc((size_t)st->narms, sizeof *b);
    if (!b) return;
    double lo = INFINITY, hi = -INFINITY;
    for (int a = 0; a < st->narms; a++) {
        loss_band(&b[a], &st->arms[a]);
        for (int j = 0; j < b[a].n; j++) {
            if (b[a].lo[j] < lo) lo = b[a].lo[j];
            if (b[a].hi[j] > hi) hi = b[a].hi[j];
        }
    }
    if (!isfinite(lo)) lo = 0, hi = 1;
    char note[160];
    if (b[0].width > 1)
        snprintf(note, sizeof note,
                 "mean over seeds of %d-step averages; the band spans the seeds' min to max",
                 b[0].width);
    else
        snprintf(note, sizeof note, "mean over seeds at every step; the band spans the seeds' min to max");
    figure_open(f, "Training loss", note, st);
    frame fr = {0, max_step(st), lo, hi, 64, 12, 476, 228};
    double ys = nice_range(&fr.y0, &fr.y1, 5);
    double xs = nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    svg_open(f, "chart-loss", "training loss per arm", 560, 290);
    axes(f, &fr, xs, ys, "step", "training loss", 0);
    for (int a = 0; a < st->narms; a++) {
        if (st->arms[a].nruns > 1) {
            fprintf(f, "<path class=\"band\" data-arm=\"%d\" fill=\"%s\" d=\"", a, amp_ab_html_color(a));
            pathw p = {f, 0};
            for (int j = 0; j < b[a].n; j++) path_pt(&p, fx(&fr, b[a].x[j]), fy(&fr, b[a].hi[j]));
            for (int j = b[a].n - 1; j >= 0; j--) path_pt(&p, fx(&fr, b[a].x[j]), fy(&fr, b[a].lo[j]));
            fputs(" Z\"/>\n", f);
        }
    }
    for (int a = 0; a < st->narms; a++) {
        fprintf(f, "<path class=\"data line\" data-arm=\"%d\" stroke=\"%s\" d=\"", a, amp_ab_html_color(a));
        pathw p = {f, 0};
        for (int j = 0; j < b[a].n; j++) path_pt(&p, fx(&fr, b[a].x[j]), fy(&fr, b[a].mean[j]));
        fputs("\"><title>", f);
        amp_ab_html_esc(f, st->arms[a].name);
        fputs("</title></path>\n", f);
    }
    fputs("</svg>\n</figure>\n", f);
    free(b);
}

/* ------------------------------------------------------------ evaluations */

static double eval_value(const amp_ab_study *st, const amp_ab_eval *e) {
    return st->metric == AMP_AB_METRIC_LOSS ? e->test_loss : e->test_acc;
}

/* The fewest evaluations any run made. */
static size_t min_evals(const amp_ab_study *st) {
    size_t ne = SIZE_MAX;
    for (int a = 0; a < st->narms; a++)
        for (int r = 0; r < st->arms[a].nruns; r++)
            if (st->arms[a].runs[r].nevals < ne) ne = st->arms[a].runs[r].nevals;
    return ne == SIZE_MAX ? 0 : ne;
}

static void chart_eval(FILE *f, const amp_ab_study *st) {
    int lm = st->metric == AMP_AB_METRIC_LOSS;
    const char *title = lm ? "Validation loss" : "Test accuracy";
    if (min_evals(st) < 2) { /* one point per run is not a curve: say so instead of drawing a line */
        figure_open(f, title, "", NULL);
        fprintf(f, "<p class=\"note\" id=\"eval-too-rare\">A run evaluated only %zu time(s) (at "
                   "its last step), too rarely to draw a curve: set <code>train.eval_every</code> "
                   "to evaluate during training.</p>\n</figure>\n",
                min_evals(st));
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int a = 0; a < st->narms; a++)
        for (int r = 0; r < st->arms[a].nruns; r++)
            for (size_t e = 0; e < st->arms[a].runs[r].nevals; e++) {
                double v = eval_value(st, &st->arms[a].runs[r].evals[e]);
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
    if (!isfinite(lo)) lo = 0, hi = 1;
    figure_open(f, title, "at every evaluation the runs made; dots are means over seeds, bars span min to max", st);
    frame fr = {0, max_step(st), lo, hi, 64, 12, 476, 228};
    double ys = nice_range(&fr.y0, &fr.y1, 5);
    double xs = nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    svg_open(f, "chart-eval", lm ? "validation loss per arm" : "test accuracy per arm", 560, 290);
    axes(f, &fr, xs, ys, "step", lm ? "validation loss" : "test accuracy", 0);
    for (int a = 0; a < st->narms; a++) {
        const amp_ab_arm *arm = &st->arms[a];
        size_t ne = arm->runs[0].nevals;
        for (int r = 1; r < arm->nruns; r++)
            if (arm->runs[r].nevals < ne) ne = arm->runs[r].nevals;
        double *mx = calloc(ne + 1, 3 * sizeof(double));
        if (!mx) continue;
        double *mean = mx, *mn = mx + ne + 1, *mxv = mx + 2 * (ne + 1);
        for (size_t e = 0; e < ne; e++) {
            double s = 0;
            mn[e] = INFINITY;
            mxv[e] = -INFINITY;
            for (int r = 0; r < arm->nruns; r++) {
                double v = eval_value(st, &arm->runs[r].evals[e]);
                s += v;
                if (v < mn[e]) mn[e] = v;
                if (v > mxv[e]) mxv[e] = v;
            }
            mean[e] = s / arm->nruns;
        }
        /* a small sideways offset per arm keeps equal points apart */
        double off = (a - (st->narms - 1) / 2.0) * 4.0;
        fprintf(f, "<g fill=\"%s\" stroke=\"%s\">\n", amp_ab_html_color(a), amp_ab_html_color(a));
        for (size_t e = 0; e < ne; e++) {
            double px = fx(&fr, (double)arm->runs[0].evals[e].step) + off;
            if (arm->nruns > 1)
                fprintf(f, "<line class=\"errbar\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", px, px,
                        fy(&fr, mn[e]), fy(&fr, mxv[e]));
            fprintf(f, "<circle class=\"marker\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>", px,
                    fy(&fr, mean[e]));
            amp_ab_html_esc(f, arm->name);
            fprintf(f, " step %lld: %.4f</title></circle>\n", (long long)arm->runs[0].evals[e].step,
                    mean[e]);
        }
        fputs("</g>\n", f);
        fprintf(f, "<path class=\"data line\" data-arm=\"%d\" stroke=\"%s\" d=\"", a, amp_ab_html_color(a));
        pathw p = {f, 0};
        for (size_t e = 0; e < ne; e++)
            path_pt(&p, fx(&fr, (double)arm->runs[0].evals[e].step) + off, fy(&fr, mean[e]));
        fputs("\"/>\n", f);
        free(mx);
    }
    fputs("</svg>\n</figure>\n", f);
}

/* ------------------------------------------------------------ loss scale */

static void chart_scale(FILE *f, const amp_ab_study *st) {
    double lo = INFINITY, hi = -INFINITY;
    long skipped = 0;
    for (int a = 0; a < st->narms; a++)
        for (int r = 0; r < st->arms[a].nruns; r++)
            for (size_t i = 0; i < st->arms[a].runs[r].npts; i++) {
                const amp_ab_point *p = &st->arms[a].runs[r].pts[i];
                if (!(p->scale > 0) || !isfinite(p->scale)) continue;
                double v = log2(p->scale);
                if (v < lo) lo = v;
                if (v > hi) hi = v;
                skipped += p->skipped;
            }
    if (!isfinite(lo)) lo = 0, hi = 0;
    lo = floor(lo) - 1;
    hi = ceil(hi) + 1;
    char note[200];
    snprintf(note, sizeof note,
             "log2 axis, every seed; &#x2715; marks a skipped step (%ld in all runs)", skipped);
    figure_open(f, "Loss scale", note, st);
    frame fr = {0, max_step(st), lo, hi, 64, 12, 476, 228};
    double xs = nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    double ys = 1; /* 1, 2, 4, 8 ... doublings per tick, at multiples of the step */
    while ((hi - lo) / ys > 8) ys *= 2;
    fr.y0 = floor(lo / ys) * ys;
    fr.y1 = ceil(hi / ys) * ys;
    svg_open(f, "chart-scale", "loss scale over time per arm, log2 axis", 560, 290);
    axes(f, &fr, xs, ys, "step", "loss scale", 1);
    for (int a = 0; a < st->narms; a++)
        for (int r = 0; r < st->arms[a].nruns; r++) {
            const amp_ab_run *run = &st->arms[a].runs[r];
            /* a step line: a point only where the scale changes */
            fprintf(f, "<path class=\"data line scale\" data-arm=\"%d\" data-seed=\"%llu\" stroke=\"%s\"%s d=\"",
                    a, (unsigned long long)run->seed, amp_ab_html_color(a),
                    a ? " stroke-dasharray=\"6 3\"" : "");
            double prev = NAN;
            int started = 0;
            for (size_t i = 0; i < run->npts; i++) {
                const amp_ab_point *p = &run->pts[i];
                if (!(p->scale > 0) || !isfinite(p->scale)) continue;
                double v = log2(p->scale), px = fx(&fr, (double)p->step);
                if (!started)
                    fprintf(f, "M%.1f %.1f", px, fy(&fr, v));
                else if (v != prev)
                    fprintf(f, " H%.1f V%.1f", px, fy(&fr, v));
                started = 1;
                prev = v;
            }
            if (started) fprintf(f, " H%.1f", fx(&fr, (double)run->pts[run->npts - 1].step));
            fputs("\"/>\n", f);
            int marks = 0;
            for (size_t i = 0; i < run->npts && marks < 500; i++) {
                const amp_ab_point *p = &run->pts[i];
                if (!p->skipped || !(p->scale > 0) || !isfinite(p->scale)) continue;
                double px = fx(&fr, (double)p->step), py = fy(&fr, log2(p->scale));
                fprintf(f,
                        "<path class=\"skip\" data-arm=\"%d\" stroke=\"%s\" d=\"M%.1f %.1f l6 6 m0 -6 "
                        "l-6 6\"><title>",
                        a, amp_ab_html_color(a), px - 3, py - 3);
                amp_ab_html_esc(f, st->arms[a].name);
                fprintf(f, " seed %llu: step %lld skipped at scale %g</title></path>\n",
                        (unsigned long long)run->seed, (long long)p->step, p->scale);
                marks++;
            }
        }
    fputs("</svg>\n</figure>\n", f);
}

/* ------------------------------------------------------------ step time */

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

enum { TBINS = 40 };

static void chart_steptime(FILE *f, const amp_ab_study *st) {
    double **v = calloc((size_t)st->narms, sizeof *v);
    size_t *n = calloc((size_t)st->narms, sizeof *n);
    if (!v || !n) {
        free(v);
        free(n);
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int a = 0; a < st->narms; a++) {
        size_t tot = 0;
        for (int r = 0; r < st->arms[a].nruns; r++) tot += st->arms[a].runs[r].npts;
        v[a] = malloc((tot ? tot : 1) * sizeof(double));
        if (!v[a]) continue;
        for (int r = 0; r < st->arms[a].nruns; r++)
            for (size_t i = 0; i < st->arms[a].runs[r].npts; i++)
                v[a][n[a]++] = st->arms[a].runs[r].pts[i].step_ms;
        qsort(v[a], n[a], sizeof(double), cmp_d);
        if (!n[a]) continue;
        /* the histogram shows the 1st..99th percentile: warm-up outliers would squash it */
        double q0 = amp_ab_quantile_sorted(v[a], n[a], 0.01), q1 = amp_ab_quantile_sorted(v[a], n[a], 0.99);
        if (q0 < lo) lo = q0;
        if (q1 > hi) hi = q1;
    }
    if (!isfinite(lo)) lo = 0, hi = 1;
    double med_max = 0; /* a long tail of slow steps would squash the bulk: cut at 3x the medians */
    for (int a = 0; a < st->narms; a++)
        if (n[a] && amp_ab_quantile_sorted(v[a], n[a], 0.5) > med_max) med_max = amp_ab_quantile_sorted(v[a], n[a], 0.5);
    if (hi > 3 * med_max && 3 * med_max > lo) hi = 3 * med_max;
    if (!(hi > lo)) hi = lo + 1;
    double width = (hi - lo) / TBINS;
    double frac[TBINS], ymax = 0;
    figure_open(f, "Step time distribution",
                "every step of every seed from the 1st percentile to the 99th (at most 3&times; the slowest median); dashed lines are medians", st);
    double (*h)[TBINS] = calloc((size_t)st->narms, sizeof *h);
    for (int a = 0; a < st->narms && h; a++) {
        for (size_t i = 0; i < n[a]; i++) {
            int b = (int)floor((v[a][i] - lo) / width);
            if (b >= 0 && b < TBINS) h[a][b] += 1;
            else if (b == TBINS && v[a][i] <= hi) h[a][TBINS - 1] += 1;
        }
        for (int b = 0; b < TBINS; b++) {
            h[a][b] /= n[a] ? (double)n[a] : 1;
            if (h[a][b] > ymax) ymax = h[a][b];
        }
    }
    frame fr = {lo, hi, 0, ymax > 0 ? ymax : 1, 64, 12, 476, 228};
    double xs = nice_range(&fr.x0, &fr.x1, 6);
    double ys = nice_range(&fr.y0, &fr.y1, 5);
    fr.y0 = 0;
    svg_open(f, "chart-steptime", "step time histogram per arm", 560, 290);
    axes(f, &fr, xs, ys, "step time (ms)", "fraction of steps", 0);
    (void)frac;
    for (int a = 0; a < st->narms && h; a++) {
        if (!n[a]) continue;
        fprintf(f, "<path class=\"data hist\" data-arm=\"%d\" stroke=\"%s\" fill=\"%s\" d=\"", a,
                amp_ab_html_color(a), amp_ab_html_color(a));
        double base = fy(&fr, 0);
        fprintf(f, "M%.1f %.1f", fx(&fr, lo), base);
        for (int b = 0; b < TBINS; b++)
            fprintf(f, " V%.1f H%.1f", fy(&fr, h[a][b]), fx(&fr, lo + (b + 1) * width));
        fprintf(f, " V%.1f Z\"/>\n", base);
        double med = amp_ab_quantile_sorted(v[a], n[a], 0.5), px = fx(&fr, med);
        fprintf(f,
                "<line class=\"median\" stroke=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                "y2=\"%.1f\"><title>",
                amp_ab_html_color(a), px, px, fr.T, fr.T + fr.H);
        amp_ab_html_esc(f, st->arms[a].name);
        fprintf(f, " median %.3f ms</title></line>\n", med);
    }
    fputs("</svg>\n</figure>\n", f);
    for (int a = 0; a < st->narms; a++) free(v[a]);
    free(v);
    free(n);
    free(h);
}

/* ------------------------------------------------------------ memory */

static void chart_memory(FILE *f, const amp_ab_study *st) {
    int cats[AMP_AB_MAX_MEM], nc = 0;
    double mx = 0;
    for (int m = 0; m < st->nmem; m++) {
        int any = 0;
        for (int a = 0; a < st->narms; a++) {
            double v = st->arms[a].mem[m].mean;
            any |= v > 0;
            if (v > mx) mx = v;
        }
        if (any) cats[nc++] = m; /* all-zero categories (device_used on a CPU) are left out */
    }
    /* --ranks N: summary.json's categories are rank 0's arenas, which every
     * rank has at the same size (shard slices are padded to one size) */
    char title[96], note[256];
    if (st->ranks > 1) {
        snprintf(title, sizeof title, "Peak memory per category, per rank (%d ranks)", st->ranks);
        snprintf(note, sizeof note, "exact sizes of the allocation each of the %d ranks holds "
                 "per category (the job holds %d times as much), mean over seeds",
                 st->ranks, st->ranks);
    } else {
        snprintf(title, sizeof title, "Peak memory per category");
        snprintf(note, sizeof note, "exact sizes of each category's allocation, mean over seeds");
    }
    figure_open(f, title, note, st);
    int bh = 9, gap = 10, group = st->narms * bh + gap;
    int h = 20 + nc * group + 40;
    frame fr = {0, mx > 0 ? mx : 1, 0, 1, 120, 10, 340, (double)(nc * group)};
    double xs = nice_range(&fr.x0, &fr.x1, 5);
    svg_open(f, "chart-memory", "peak memory per category per arm", 560, h);
    /* the x axis in the largest binary unit that fits */
    double unit = fr.x1 >= (1 << 30) ? (1 << 30) : fr.x1 >= (1 << 20) ? (1 << 20) : fr.x1 >= (1 << 10) ? (1 << 10) : 1;
    const char *uname = unit == (1 << 30) ? "GiB" : unit == (1 << 20) ? "MiB" : unit == (1 << 10) ? "KiB" : "bytes";
    if (unit > 1) { /* ticks at round numbers of that unit */
        fr.x1 = mx / unit;
        xs = nice_range(&fr.x0, &fr.x1, 5) * unit;
        fr.x1 *= unit;
    }
    fputs("<g class=\"axes\">\n", f);
    for (double x = 0; x <= fr.x1 + xs * 1e-6; x += xs) {
        double px = fx(&fr, x);
        char buf[32];
        tick_label(buf, sizeof buf, x / unit, xs / unit);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                px, px, fr.T, fr.T + fr.H, px, fr.T + fr.H + 15, buf);
    }
    fprintf(f, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n</g>\n",
            fr.L + fr.W / 2, fr.T + fr.H + 32, uname);
    for (int c = 0; c < nc; c++) {
        int m = cats[c];
        double y0 = fr.T + c * group + gap / 2.0;
        fprintf(f, "<text class=\"cat\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                fr.L - 6, y0 + st->narms * bh / 2.0 + 4, st->mem_names[m]);
        for (int a = 0; a < st->narms; a++) {
            double v = st->arms[a].mem[m].mean, w = fx(&fr, v) - fr.L;
            char buf[32];
            amp_ab_fmt_bytes(buf, sizeof buf, v);
            if (w > 0) {
                fprintf(f,
                        "<rect class=\"data bar\" data-arm=\"%d\" fill=\"%s\" x=\"%.1f\" y=\"%.1f\" "
                        "width=\"%.1f\" height=\"%d\"><title>",
                        a, amp_ab_html_color(a), fr.L, y0 + a * bh, w, bh - 1);
                amp_ab_html_esc(f, st->arms[a].name);
                fprintf(f, " %s: %s</title></rect>\n", st->mem_names[m], buf);
            }
            fprintf(f, "<text class=\"val\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", fr.L + w + 4,
                    y0 + a * bh + bh - 1.5, buf);
        }
    }
    fputs("</svg>\n</figure>\n", f);
}

/* ------------------------------------------------------------ heat map */

/* Fraction of rounded values lost, coloured on a log scale 1e-8 .. 1. */
static void heat_color(char *buf, size_t cap, double rate) {
    double t = (log10(rate) + 8.0) / 8.0;
    if (t < 0) t = 0;
    if (t > 1) t = 1;
    /* pale yellow -> orange -> dark red */
    double r = 255 - t * 120, g = 236 - t * 216, b = 170 - t * 150;
    snprintf(buf, cap, "rgb(%d,%d,%d)", (int)r, (int)g, (int)b);
}

/* Rows of the heat map: one per layer, or, past HEAT_MAX_ROWS layers, one
 * per block: the name up to its first all-digit component ("h.3" for
 * "h.3.attn.c_proj"); names without one stay rows of their own. */
#define HEAT_MAX_ROWS 24

typedef struct heat_row {
    char name[96];
    int layers;            /* layers folded into the row */
    double lost[4], rounded[4];
} heat_row;

/* Folds consecutive rows into ranges ("fc1 .. fc3") until at most
 * HEAT_MAX_ROWS remain. */
static int heat_collapse(heat_row *rows, int nrows) {
    if (nrows <= HEAT_MAX_ROWS) return nrows;
    int per = (nrows + HEAT_MAX_ROWS - 1) / HEAT_MAX_ROWS, out = 0;
    for (int k = 0; k < nrows; k += per) {
        heat_row acc = rows[k];
        int last = k + per - 1 < nrows - 1 ? k + per - 1 : nrows - 1;
        for (int j = k + 1; j <= last; j++) {
            acc.layers += rows[j].layers;
            for (int c = 0; c < 4; c++) {
                acc.lost[c] += rows[j].lost[c];
                acc.rounded[c] += rows[j].rounded[c];
            }
        }
        if (last > k) snprintf(acc.name, sizeof acc.name, "%.40s .. %.40s", rows[k].name, rows[last].name);
        rows[out++] = acc;
    }
    return out;
}

/* Sums every run's totals into rows; returns the row count (rows has nl). */
static int heat_rows(heat_row *rows, const amp_ab_arm *arm, int nl) {
    int nrows = 0, group = nl > HEAT_MAX_ROWS;
    for (int l = 0; l < nl; l++) {
        char key[96];
        if (group)
            amp_ab_layer_block(key, sizeof key, arm->runs[0].layers[l].name);
        else
            snprintf(key, sizeof key, "%s", arm->runs[0].layers[l].name);
        int k = nrows - 1;
        if (k < 0 || strcmp(rows[k].name, key) != 0) { /* a block's layers are contiguous */
            k = nrows++;
            memset(&rows[k], 0, sizeof rows[k]);
            snprintf(rows[k].name, sizeof rows[k].name, "%s", key);
        }
        rows[k].layers++;
        for (int r = 0; r < arm->nruns; r++) {
            if (arm->runs[r].nlayers != nl) continue; /* another shape: not comparable */
            const amp_ab_layer *ly = &arm->runs[r].layers[l];
            rows[k].lost[0] += ly->fwd_under;
            rows[k].lost[1] += ly->fwd_over;
            rows[k].lost[2] += ly->grad_under;
            rows[k].lost[3] += ly->grad_over;
            rows[k].rounded[0] += ly->fwd_rounded;
            rows[k].rounded[1] += ly->fwd_rounded;
            rows[k].rounded[2] += ly->grad_rounded;
            rows[k].rounded[3] += ly->grad_rounded;
        }
    }
    return heat_collapse(rows, nrows);
}

static void chart_heat(FILE *f, const amp_ab_study *st, int a) {
    const amp_ab_arm *arm = &st->arms[a];
    int nl = arm->runs[0].nlayers;
    heat_row *rows = calloc(nl > 0 ? (size_t)nl : 1, sizeof *rows);
    if (!rows) return;
    int nrows = heat_rows(rows, arm, nl);
    static const char *const colname[4] = {"fwd under", "fwd over", "grad under", "grad over"};
    int label_chars = 0;
    for (int k = 0; k < nrows; k++) {
        int n = (int)strlen(rows[k].name) + (rows[k].layers > 1 ? 12 : 0);
        if (n > label_chars) label_chars = n;
    }
    int cw = 78, ch = 26, L = 16 + 7 * (label_chars < 6 ? 6 : label_chars > 40 ? 40 : label_chars), T = 30;
    int w = L + 4 * cw + 10, h = T + nrows * ch + 12;
    char id[200];
    snprintf(id, sizeof id, "chart-heat-%d", a);
    fputs("<div class=\"heat\"><div class=\"heat-title\"><i style=\"background:", f);
    fputs(amp_ab_html_color(a), f);
    fputs("\"></i>", f);
    amp_ab_html_esc(f, arm->name);
    if (nrows < nl) fprintf(f, " <span class=\"note\">(%d layers in %d blocks)</span>", nl, nrows);
    fputs("</div>\n", f);
    svg_open(f, id, "underflow and overflow rate per layer", w, h);
    for (int c = 0; c < 4; c++)
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                L + c * cw + cw / 2, T - 10, colname[c]);
    for (int k = 0; k < nrows; k++) {
        const heat_row *row = &rows[k];
        fprintf(f, "<text class=\"cat\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 6, T + k * ch + ch / 2 + 4);
        amp_ab_html_esc(f, row->name);
        if (row->layers > 1) fprintf(f, " (%d layers)", row->layers);
        fputs("</text>\n", f);
        for (int c = 0; c < 4; c++) {
            char fill[32], txt[32];
            const char *tcls = "cell-text";
            if (row->rounded[c] == 0) {
                snprintf(fill, sizeof fill, "#eceef1");
                snprintf(txt, sizeof txt, "n/a");
                tcls = "cell-text muted";
            } else if (row->lost[c] == 0) {
                snprintf(fill, sizeof fill, "#f7f9f7");
                snprintf(txt, sizeof txt, "0");
            } else {
                double rate = row->lost[c] / row->rounded[c];
                heat_color(fill, sizeof fill, rate);
                snprintf(txt, sizeof txt, "%.2g", rate);
                if (log10(rate) > -3) tcls = "cell-text light";
            }
            int x = L + c * cw, y = T + k * ch;
            fprintf(f,
                    "<rect class=\"data cell\" data-arm=\"%d\" x=\"%d\" y=\"%d\" width=\"%d\" "
                    "height=\"%d\" fill=\"%s\"><title>",
                    a, x + 1, y + 1, cw - 2, ch - 2, fill);
            amp_ab_html_esc(f, row->name);
            fprintf(f, " %s: %.0f of %.0f rounded values</title></rect>"
                    "<text class=\"%s\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                    colname[c], row->lost[c], row->rounded[c], tcls, x + cw / 2, y + ch / 2 + 4, txt);
        }
    }
    fputs("</svg></div>\n", f);
    free(rows);
}

/* ------------------------------------------------------- fp8 operands */

static double jnum(const amp_jval *o, const char *key) {
    const amp_jval *v = amp_json_get_type(o, key, AMP_JNUM);
    return v ? v->num : NAN;
}

/* The first run's last step, one row per (layer, role) its summary.json's
 * "fp8" array has: amax, scale, kept, and the saturated / flushed counts
 * coloured on a log scale relative to the table's largest; for NVFP4
 * operands also the E4M3 block scales' range and the stochastic rounding's
 * mean bias (docs/nvfp4.md). */
static void chart_fp8(FILE *f, const amp_ab_study *st, int a) {
    const amp_ab_arm *arm = &st->arms[a];
    const amp_jval *ops = arm->nruns ? amp_json_get_type(arm->runs[0].summary, "fp8", AMP_JARR) : NULL;
    if (!ops || ops->n == 0) return;
    double most[2] = {0, 0};
    for (size_t i = 0; i < ops->n; i++) {
        double v[2] = {jnum(&ops->items[i], "saturated"), jnum(&ops->items[i], "flushed")};
        for (int c = 0; c < 2; c++)
            if (v[c] > most[c]) most[c] = v[c];
    }
    fputs("<div class=\"heat\"><div class=\"heat-title\"><i style=\"background:", f);
    fputs(amp_ab_html_color(a), f);
    fputs("\"></i>", f);
    amp_ab_html_esc(f, arm->name);
    fputs("</div>\n<table class=\"fp8\"><tr><th>layer</th><th>role</th><th>format</th><th>amax</th>"
          "<th>scale</th><th>saturated</th><th>flushed</th><th>kept</th><th>block scales</th>"
          "<th>SR bias</th></tr>\n", f);
    for (size_t i = 0; i < ops->n; i++) {
        const amp_jval *o = &ops->items[i];
        const amp_jval *layer = amp_json_get_type(o, "layer", AMP_JSTR);
        const amp_jval *role = amp_json_get_type(o, "role", AMP_JSTR);
        const amp_jval *fmt = amp_json_get_type(o, "format", AMP_JSTR);
        fputs("<tr><td>", f);
        amp_ab_html_esc(f, layer ? layer->str : "?");
        fputs("</td><td>", f);
        amp_ab_html_esc(f, role ? role->str : "?");
        fputs("</td><td>", f);
        amp_ab_html_esc(f, fmt ? fmt->str : "?");
        fprintf(f, "</td><td>%.4g</td><td>%.4g</td>", jnum(o, "amax"), jnum(o, "scale"));
        double v[2] = {jnum(o, "saturated"), jnum(o, "flushed")};
        for (int c = 0; c < 2; c++) {
            char fill[32] = "#f7f9f7";
            if (v[c] > 0 && most[c] > 0) heat_color(fill, sizeof fill, v[c] / most[c]);
            fprintf(f, "<td style=\"background:%s\">%.0f</td>", fill, v[c]);
        }
        fprintf(f, "<td>%.0f</td>", jnum(o, "kept"));
        double lo = jnum(o, "block_scale_min"), hi = jnum(o, "block_scale_max"), b = jnum(o, "sr_bias");
        if (isnan(lo) || isnan(hi))
            fputs("<td class=\"muted\">&mdash;</td>", f);
        else
            fprintf(f, "<td>%.4g .. %.4g</td>", lo, hi);
        if (isnan(b))
            fputs("<td class=\"muted\">&mdash;</td></tr>\n", f);
        else
            fprintf(f, "<td>%+.2e</td></tr>\n", b);
    }
    fputs("</table></div>\n", f);
}

/* GEMM roles in the order the host lists them, each with its colour. */
static const char *const fp8_roles[] = {"input", "weight", "grad_output"};
static const char *const fp8_role_colors[] = {"#3566b0", "#27955a", "#e0672a"};
#define FP8_NROLES 3

static const char *fp8_role_color(const char *role) {
    for (int k = 0; k < FP8_NROLES; k++)
        if (strcmp(role, fp8_roles[k]) == 0) return fp8_role_colors[k];
    return "#56606b";
}

static void fp8_title(FILE *f, const amp_ab_study *st, int a, const char *what) {
    fputs("<div class=\"heat\"><div class=\"heat-title\"><i style=\"background:", f);
    fputs(amp_ab_html_color(a), f);
    fputs("\"></i>", f);
    amp_ab_html_esc(f, st->arms[a].name);
    fprintf(f, " <span class=\"note\">%s</span></div>\n", what);
}

/* The first seed's per-tensor scale of every scaled operand over the steps,
 * a step line per (layer, role) on a log2 axis, coloured by role. Each path
 * carries data-scales: "step:scale" where the scale changes. */
static void chart_fp8_scale(FILE *f, const amp_ab_study *st, int a) {
    const amp_ab_arm *arm = &st->arms[a];
    const amp_ab_run *run = arm->nruns ? &arm->runs[0] : NULL;
    if (!run || run->fp8.nslots == 0 || run->fp8.npts != run->npts || run->npts == 0) return;
    const amp_ab_fp8 *fp = &run->fp8;
    int n = fp->nslots, tensor = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < n; s++) {
        if (fp->block[s]) continue;
        tensor++;
        for (size_t i = 0; i < fp->npts; i++) {
            double v = fp->scale[i * (size_t)n + (size_t)s];
            if (!(v > 0) || !isfinite(v)) continue;
            if (log2(v) < lo) lo = log2(v);
            if (log2(v) > hi) hi = log2(v);
        }
    }
    char what[48];
    snprintf(what, sizeof what, "seed %llu", (unsigned long long)run->seed);
    fp8_title(f, st, a, what);
    if (!tensor) {
        fprintf(f, "<p class=\"note\" id=\"fp8-scale-blocks-%d\">block scaling: one E8M0 scale per "
                   "block of 32 values, no per-tensor scale to draw</p></div>\n", a);
        return;
    }
    fputs("<div class=\"legend\">", f);
    for (int k = 0; k < FP8_NROLES; k++)
        fprintf(f, "<span><i style=\"background:%s\"></i>%s</span>", fp8_role_colors[k], fp8_roles[k]);
    fputs("</div>\n", f);
    if (!isfinite(lo)) lo = hi = 0;
    lo = floor(lo) - 1;
    hi = ceil(hi) + 1;
    double last = (double)run->pts[run->npts - 1].step;
    frame fr = {0, last > 0 ? last : 1, lo, hi, 64, 12, 476, 228};
    double xs = nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    double ys = 1;
    while ((hi - lo) / ys > 8) ys *= 2;
    fr.y0 = floor(lo / ys) * ys;
    fr.y1 = ceil(hi / ys) * ys;
    char id[64];
    snprintf(id, sizeof id, "chart-fp8-scale-%d", a);
    svg_open(f, id, "per-tensor FP8 scale of each operand over the steps, log2 axis", 560, 290);
    axes(f, &fr, xs, ys, "step", "scale", 1);
    for (int s = 0; s < n; s++) {
        if (fp->block[s]) continue;
        fprintf(f, "<path class=\"data line fp8-scale\" data-arm=\"%d\" data-layer=\"", a);
        amp_ab_html_esc(f, fp->layer[s]);
        fprintf(f, "\" data-role=\"%s\" stroke=\"%s\" style=\"stroke-width:1.2\" data-scales=\"",
                fp->role[s], fp8_role_color(fp->role[s]));
        double prev = NAN;
        for (size_t i = 0; i < fp->npts; i++) {
            double v = fp->scale[i * (size_t)n + (size_t)s];
            if (!(v > 0) || !isfinite(v) || v == prev) continue;
            fprintf(f, "%s%lld:%.9g", isnan(prev) ? "" : " ", (long long)run->pts[i].step, v);
            prev = v;
        }
        fputs("\" d=\"", f);
        prev = NAN;
        for (size_t i = 0; i < fp->npts; i++) {
            double v = fp->scale[i * (size_t)n + (size_t)s];
            if (!(v > 0) || !isfinite(v) || v == prev) continue;
            double px = fx(&fr, (double)run->pts[i].step), py = fy(&fr, log2(v));
            if (isnan(prev))
                fprintf(f, "M%.1f %.1f", px, py);
            else
                fprintf(f, " H%.1f V%.1f", px, py);
            prev = v;
        }
        if (!isnan(prev)) fprintf(f, " H%.1f", fx(&fr, last));
        fputs("\"><title>", f);
        amp_ab_html_esc(f, fp->layer[s]);
        fprintf(f, " %s</title></path>\n", fp->role[s]);
    }
    fputs("</svg></div>\n", f);
}

/* Heat-map rows per role: for each (role, layer) and each span of steps,
 * the values saturated and the nonzero values flushed to 0 per step (mean
 * over the span's steps and the seeds). Past FP8_ROLE_ROWS layers a role's
 * layers fold into ranges, their counts summed. */
enum { FP8_BUCKETS = 30, FP8_ROLE_ROWS = 32 };

typedef struct fp8_row {
    int role;        /* index into fp8_roles */
    int s0, s1;      /* slots folded into the row: s0..s1 of that role, in slot order */
    int nfold;
    char name[96];
} fp8_row;

/* The runs whose slots match the first run's (the others are another shape). */
static int fp8_same_slots(const amp_ab_run *r, const amp_ab_run *r0) {
    if (r->fp8.nslots != r0->fp8.nslots || r->fp8.npts != r->npts) return 0;
    for (int s = 0; s < r->fp8.nslots; s++)
        if (strcmp(r->fp8.layer[s], r0->fp8.layer[s]) || strcmp(r->fp8.role[s], r0->fp8.role[s]))
            return 0;
    return 1;
}

static int fp8_rows(fp8_row *rows, const amp_ab_fp8 *fp) {
    int nrows = 0;
    for (int k = 0; k < FP8_NROLES; k++) {
        int cnt = 0;
        for (int s = 0; s < fp->nslots; s++) cnt += strcmp(fp->role[s], fp8_roles[k]) == 0;
        int per = (cnt + FP8_ROLE_ROWS - 1) / FP8_ROLE_ROWS, seen = 0;
        for (int s = 0; s < fp->nslots; s++) {
            if (strcmp(fp->role[s], fp8_roles[k]) != 0) continue;
            if (seen % per == 0) {
                fp8_row *rw = &rows[nrows++];
                rw->role = k;
                rw->s0 = s;
                rw->nfold = 0;
                snprintf(rw->name, sizeof rw->name, "%.90s", fp->layer[s]);
            }
            fp8_row *rw = &rows[nrows - 1];
            rw->s1 = s;
            if (++rw->nfold > 1)
                snprintf(rw->name, sizeof rw->name, "%.40s .. %.40s", fp->layer[rw->s0], fp->layer[s]);
            seen++;
        }
    }
    return nrows;
}

/* Mean count per step of row rw over points [i0, i1) and the matching runs. */
static double fp8_cell(const amp_ab_arm *arm, const fp8_row *rw, int kind, size_t i0, size_t i1) {
    const amp_ab_run *r0 = &arm->runs[0];
    int n = r0->fp8.nslots, used = 0;
    double sum = 0;
    for (int r = 0; r < arm->nruns; r++) {
        const amp_ab_run *run = &arm->runs[r];
        if (!fp8_same_slots(run, r0)) continue;
        used++;
        const double *c = kind ? run->fp8.flushed : run->fp8.saturated;
        for (size_t i = i0; i < i1; i++)
            for (int s = rw->s0; s <= rw->s1; s++)
                if (strcmp(r0->fp8.role[s], fp8_roles[rw->role]) == 0) sum += c[i * (size_t)n + (size_t)s];
    }
    return used && i1 > i0 ? sum / used / (double)(i1 - i0) : 0;
}

static void chart_fp8_heat(FILE *f, const amp_ab_study *st, int a) {
    const amp_ab_arm *arm = &st->arms[a];
    if (!arm->nruns || arm->runs[0].fp8.nslots == 0 || arm->runs[0].npts == 0) return;
    const amp_ab_run *r0 = &arm->runs[0];
    size_t npts = r0->npts;
    for (int r = 1; r < arm->nruns; r++)
        if (fp8_same_slots(&arm->runs[r], r0) && arm->runs[r].npts < npts) npts = arm->runs[r].npts;
    int nb = npts < FP8_BUCKETS ? (int)npts : FP8_BUCKETS;
    fp8_row *rows = calloc((size_t)r0->fp8.nslots, sizeof *rows);
    double *val = rows ? calloc((size_t)r0->fp8.nslots * 2 * (size_t)nb, sizeof *val) : NULL;
    if (!val) {
        free(rows);
        return;
    }
    int nrows = fp8_rows(rows, &r0->fp8);
    double most[2] = {0, 0};
    for (int k = 0; k < nrows; k++)
        for (int kind = 0; kind < 2; kind++)
            for (int j = 0; j < nb; j++) {
                double v = fp8_cell(arm, &rows[k], kind, npts * (size_t)j / (size_t)nb,
                                    npts * (size_t)(j + 1) / (size_t)nb);
                val[((size_t)k * 2 + (size_t)kind) * (size_t)nb + (size_t)j] = v;
                if (v > most[kind]) most[kind] = v;
            }
    static const char *const kinds[2] = {"saturated", "flushed"};
    int label_chars = 6;
    for (int k = 0; k < nrows; k++) {
        int c = (int)strlen(rows[k].name);
        if (c > label_chars) label_chars = c > 44 ? 44 : c;
    }
    int cw = 9, ch = 12, gap = 26, hh = 16, L = 12 + (int)(6.2 * label_chars), T = 22;
    int roles = 0;
    for (int k = 0; k < nrows; k++) roles += k == 0 || rows[k].role != rows[k - 1].role;
    int w = L + 2 * nb * cw + gap + 10, h = T + roles * hh + nrows * ch + 30;
    char id[64], what[160];
    snprintf(what, sizeof what, "%d seed%s, %zu steps in %d spans", arm->nruns,
             arm->nruns == 1 ? "" : "s", npts, nb);
    fp8_title(f, st, a, what);
    snprintf(id, sizeof id, "chart-fp8-heat-%d", a);
    svg_open(f, id, "FP8 values saturated and flushed per step, per role and layer", w, h);
    for (int kind = 0; kind < 2; kind++)
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s per step</text>\n",
                L + kind * (nb * cw + gap) + nb * cw / 2, T - 8, kinds[kind]);
    int y = T;
    for (int k = 0; k < nrows; k++) {
        const fp8_row *rw = &rows[k];
        if (k == 0 || rw->role != rows[k - 1].role) {
            fprintf(f, "<text class=\"cat\" x=\"4\" y=\"%d\" font-weight=\"600\" fill=\"%s\">%s</text>\n",
                    y + hh - 4, fp8_role_colors[rw->role], fp8_roles[rw->role]);
            y += hh;
        }
        fprintf(f, "<text class=\"val\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 4, y + ch - 2);
        amp_ab_html_esc(f, rw->name);
        fputs("</text>\n", f);
        for (int kind = 0; kind < 2; kind++)
            for (int j = 0; j < nb; j++) {
                size_t i0 = npts * (size_t)j / (size_t)nb, i1 = npts * (size_t)(j + 1) / (size_t)nb;
                double v = val[((size_t)k * 2 + (size_t)kind) * (size_t)nb + (size_t)j];
                char fill[32] = "#f7f9f7";
                if (v > 0) heat_color(fill, sizeof fill, v / most[kind]);
                fprintf(f,
                        "<rect class=\"data cell\" data-arm=\"%d\" data-role=\"%s\" data-layer=\"",
                        a, fp8_roles[rw->role]);
                amp_ab_html_esc(f, rw->name);
                fprintf(f, "\" data-kind=\"%s\" data-step0=\"%lld\" data-step1=\"%lld\" "
                           "data-value=\"%.9g\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"",
                        kinds[kind], (long long)r0->pts[i0].step, (long long)r0->pts[i1 - 1].step, v,
                        L + kind * (nb * cw + gap) + j * cw, y, cw - 1, ch - 1, fill);
                if (v > 0) {
                    fputs("><title>", f);
                    amp_ab_html_esc(f, rw->name);
                    fprintf(f, " %s, steps %lld-%lld: %.4g %s per step</title></rect>\n",
                            fp8_roles[rw->role], (long long)r0->pts[i0].step,
                            (long long)r0->pts[i1 - 1].step, v, kinds[kind]);
                } else {
                    fputs("/>", f);
                }
            }
        fputc('\n', f);
        y += ch;
    }
    for (int kind = 0; kind < 2; kind++) {
        int x0 = L + kind * (nb * cw + gap);
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%d\">%lld</text>"
                   "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text>\n",
                x0, y + 14, (long long)r0->pts[0].step, x0 + nb * cw, y + 14,
                (long long)r0->pts[npts - 1].step);
        fprintf(f, "<text class=\"axis-title\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
                x0 + nb * cw / 2, y + 26);
    }
    fputs("</svg></div>\n", f);
    free(val);
    free(rows);
}

/* The colour key: `what` the colours scale, then the grey of `none` (NULL: no such cell). */
static void heat_key(FILE *f, const char *what, const char *none) {
    fprintf(f, "<div class=\"heat-key\"><span>%s (log scale):</span>", what);
    for (int e = -8; e <= 0; e += 2) {
        char fill[32];
        heat_color(fill, sizeof fill, pow(10.0, e));
        fprintf(f, "<span><i style=\"background:%s\"></i>1e%d</span>", fill, e);
    }
    fputs("<span><i style=\"background:#f7f9f7\"></i>0</span>", f);
    if (none) fprintf(f, "<span><i style=\"background:#eceef1\"></i>%s</span>", none);
    fputs("</div>\n", f);
}

/* ------------------------------------------------------------ tables */

/* The scan's ranking: which groups of layers close the candidate's gap. */
static void scan_panel(FILE *f, const amp_ab_study *st) {
    const amp_ab_scan *sc = st->scan;
    if (!sc) return;
    int gap = amp_ab_scan_has_gap(sc), nsig = 0;
    fputs("<h2>Layer sensitivity</h2>\n<table class=\"runs\" id=\"scan\"><thead><tr><th>rank</th>"
          "<th>group kept at the baseline's precision</th><th>layers</th><th>gain over the "
          "candidate<br><span class=\"sub\">95% CI, paired by seed</span></th><th>gap closed<br>"
          "<span class=\"sub\">95% CI</span></th><th>significant?</th></tr></thead><tbody>\n", f);
    for (int i = 0; i < sc->ngroups; i++) {
        const amp_ab_scan_row *r = &sc->rows[i];
        nsig += r->significant;
        fprintf(f, "<tr><td class=\"num\">%d</td><td><code>", i + 1);
        amp_ab_html_esc(f, amp_ab_scan_group(sc, r)->label);
        fprintf(f, "</code></td><td class=\"num\">%d</td><td class=\"num\">%+.4f [%+.4f, %+.4f]</td>"
                   "<td class=\"num\">",
                amp_ab_scan_group(sc, r)->nmembers, r->gain, r->lo, r->hi);
        if (gap) fprintf(f, "%.0f%% [%.0f%%, %.0f%%]", 100 * r->closed, 100 * r->closed_lo, 100 * r->closed_hi);
        else fputs("n/a", f);
        fprintf(f, "</td><td>%s</td></tr>\n", r->significant ? "yes" : "no");
    }
    fprintf(f, "</tbody></table>\n<p class=\"note\">The gain is how much better the %s (for a "
               "loss: lower) of <b>", amp_ab_metric_name(st));
    amp_ab_html_esc(f, st->arms[1].name);
    fputs("</b> gets with the group kept at <b>", f);
    amp_ab_html_esc(f, st->arms[0].name);
    fputs("</b>'s precision, per seed; the gap closed divides it by the mean gap between the two "
          "policies.", f);
    if (!gap) fputs(" The candidate has no significant gap to the baseline: nothing to close.", f);
    fputs("</p>\n", f);
    amp_ab_scan_html_skipped(sc, st, f);
    if (gap && nsig) {
        fputs("<p>Overrides that keep the groups that help significantly (the candidate's "
              "<code>[precision]</code> section):</p>\n<pre class=\"sample\" id=\"scan-overrides\">", f);
        for (int i = 0; i < sc->ngroups; i++)
            if (sc->rows[i].significant) {
                fputs("layer.", f);
                amp_ab_html_esc(f, amp_ab_scan_group(sc, &sc->rows[i])->label);
                fprintf(f, " = %s\n", amp_ab_scan_dtype(sc, &sc->rows[i]));
            }
        fputs("</pre>\n", f);
    }
}

/* A language model's text per arm: what the numbers mean to a reader. */
static void samples_panel(FILE *f, const amp_ab_study *st) {
    int any = 0;
    for (int a = 0; a < st->narms; a++) any |= st->arms[a].sample != NULL;
    if (!any) return;
    fputs("<h2>Samples</h2>\n<div class=\"grid2\" id=\"samples\">\n", f);
    for (int a = 0; a < st->narms; a++) {
        if (!st->arms[a].sample) continue;
        fprintf(f, "<figure><figcaption><b><i style=\"background:%s\"></i> ", amp_ab_html_color(a));
        amp_ab_html_esc(f, st->arms[a].name);
        fprintf(f, "</b> <span class=\"note\">seed %llu, <code>amptrain sample</code>, 200 "
                   "characters</span></figcaption><pre class=\"sample\">",
                (unsigned long long)st->arms[a].runs[0].seed);
        amp_ab_html_esc(f, st->arms[a].sample);
        fputs("</pre></figure>\n", f);
    }
    fputs("</div>\n", f);
}

/* Wall and CPU time per arm, and whether the machine let them be compared. */
static void speed_panel(FILE *f, const amp_ab_study *st) {
    const amp_ab_timing *t = &st->timing;
    fputs("<h2>Speed</h2>\n", f);
    if (t->disturbed) {
        fputs("<div class=\"card warn\" id=\"timing-disturbed\"><b>Timing disturbed:</b> ", f);
        amp_ab_html_esc(f, t->why);
        fprintf(f, ". Other work on the machine shaped the wall times, so no speed difference is "
                   "called significant%s. Rerun on a quiet machine to judge speed.</div>\n",
                t->cpu_basis ? "; the speedup compares process CPU time, which that work cannot add to"
                             : "");
    }
    fputs("<table class=\"runs\" id=\"speed\"><thead><tr><th>arm</th><th>wall ms / step</th>"
          "<th>CPU ms / step</th><th>wall / CPU</th><th>load average<br><span class=\"sub\">at "
          "start and end of runs</span></th></tr></thead><tbody>\n",
          f);
    for (int a = 0; a < st->narms; a++) {
        const amp_ab_arm *arm = &st->arms[a];
        double qlo = INFINITY, qhi = -INFINITY, llo = INFINITY, lhi = -INFINITY;
        for (int r = 0; r < arm->nruns; r++) {
            const amp_ab_run *run = &arm->runs[r];
            double q = run->median_ms / run->median_cpu_ms;
            if (q < qlo) qlo = q;
            if (q > qhi) qhi = q;
            double l0 = fmin(run->load_start, run->load_end), l1 = fmax(run->load_start, run->load_end);
            if (l0 < llo) llo = l0;
            if (l1 > lhi) lhi = l1;
        }
        fprintf(f, "<tr><td class=\"arm\"><i style=\"background:%s\"></i>", amp_ab_html_color(a));
        amp_ab_html_esc(f, arm->name);
        fprintf(f, "</td><td class=\"num\">%.3f</td><td class=\"num\">%.3f</td>"
                   "<td class=\"num\">%.2f&ndash;%.2f</td><td class=\"num\">%.1f&ndash;%.1f</td></tr>\n",
                arm->median_ms.mean, arm->cpu_ms.mean, qlo, qhi, llo, lhi);
    }
    fprintf(f, "</tbody></table>\n<p class=\"note\">Medians per step, means over seeds; CPU is the "
               "process's CPU time (all its threads), which other processes cannot add to. The "
               "speedup uses <b>%s</b> time: wall time unless the runs' wall/CPU ratios moved or the "
               "load average exceeded the %d CPUs.</p>\n",
            amp_ab_speed_basis(st), st->ncpu);
}

static void runs_table(FILE *f, const amp_ab_study *st) {
    fputs("<h2>Runs</h2>\n<table class=\"runs\"><thead><tr><th>arm</th><th>seed</th><th>test acc</th>"
          "<th>test loss</th><th>final train loss</th><th>steps</th><th>skipped</th>"
          "<th>final scale</th><th>median step</th><th>ranks</th><th>comm / step</th><th>wall</th>"
          "<th>device</th><th>files</th></tr></thead><tbody>\n",
          f);
    for (int s = 0; s < st->nseeds; s++)
        for (int a = 0; a < st->narms; a++) {
            if (s >= st->arms[a].nruns) continue;
            const amp_ab_run *r = &st->arms[a].runs[s];
            fprintf(f, "<tr><td class=\"arm\"><i style=\"background:%s\"></i>", amp_ab_html_color(a));
            amp_ab_html_esc(f, st->arms[a].name);
            fprintf(f,
                    "</td><td class=\"num\">%llu</td><td class=\"num\">%.4f</td><td class=\"num\">%.4f</td>"
                    "<td class=\"num\">%.4f</td><td class=\"num\">%.0f</td><td class=\"num\">%.0f</td>"
                    "<td class=\"num\">%g</td><td class=\"num\">%.2f ms</td><td class=\"num\">%.0f</td>"
                    "<td class=\"num\">%.3f ms</td><td class=\"num\">%.1f s</td><td>",
                    (unsigned long long)r->seed, r->test_acc, r->test_loss, r->final_loss, r->steps,
                    r->skipped, r->final_scale, r->median_ms, r->world_size, r->median_comm_ms,
                    r->wall_s);
            amp_ab_html_esc(f, r->device);
            fputs("</td><td class=\"path\">", f);
            /* the run folders sit beside report.html: runs/<arm>/seed-<S> */
            const char *rel = strstr(r->dir, "/runs/");
            amp_ab_html_esc(f, rel ? rel + 1 : r->dir);
            fputs("</td></tr>\n", f);
        }
    fputs("</tbody></table>\n", f);
}

static const char css[] =
    "pre.sample{white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace;background:#fff;"
    "border:1px solid #d8dee4;border-radius:6px;padding:8px;margin:4px 0}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "color:#1d232b;background:#f4f6f8;margin:0}"
    "main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}"
    "header{background:#1f2a3a;color:#e9eef5;padding:22px 28px}"
    "header .in{max-width:1180px;margin:0 auto}"
    "header h1{margin:0 0 6px;font-size:22px;font-weight:600}"
    "header .meta{display:flex;flex-wrap:wrap;gap:4px 22px;font-size:13px;color:#b7c3d3}"
    "header .meta b{color:#fff;font-weight:600}"
    "h2{font-size:17px;margin:28px 0 10px}"
    ".card{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:14px 18px;margin:14px 0}"
    ".arms{display:flex;flex-wrap:wrap;gap:10px 28px}"
    ".arms div{font-size:13px}.arms code{color:#566}"
    "i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;vertical-align:-1px}"
    "table{border-collapse:collapse;background:#fff;border:1px solid #dde3ea;width:100%;font-size:12.5px}"
    "th{background:#eef2f6;text-align:left;font-weight:600;padding:7px 6px;border-bottom:1px solid #dde3ea;vertical-align:bottom}"
    "td{padding:6px 6px;border-bottom:1px solid #edf0f3;white-space:nowrap}td .sub{font-weight:400}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "td.good{color:#1d7a45;font-weight:600}td.bad{color:#b3261e;font-weight:600}"
    "td.path{font-family:ui-monospace,monospace;font-size:12px;color:#566}"
    ".sub{font-weight:400;color:#667;font-size:11px}.ci{color:#667}.muted{color:#8a94a0}"
    ".pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}"
    ".pill.better{background:#d8f1e1;color:#17643a}.pill.worse{background:#f9d9d6;color:#9b1c14}"
    ".pill.same{background:#e8ecf0;color:#4a5560}.pill.na{background:#fff1c9;color:#7a5a00}"
    ".warn{background:#fff7e0;border-color:#f0d58a}"
    ".note{color:#5b6570;font-size:12.5px}"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:16px}"
    "figure{background:#fff;border:1px solid #dde3ea;border-radius:8px;margin:0;padding:12px 14px}"
    "figcaption{margin-bottom:4px}figcaption .note{display:block}"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px;margin:4px 0}"
    "svg.chart{display:block;max-width:100%;height:auto;font-size:11px}"
    "svg .grid{stroke:#e6eaef}svg .tickmark{stroke:#98a2ad}svg .frame{fill:none;stroke:#98a2ad}"
    "svg .tick{fill:#56606b}svg .axis-title{fill:#333b45;font-size:12px}"
    "svg .line{fill:none;stroke-width:2;stroke-linejoin:round}svg .band{opacity:.16;stroke:none}"
    "svg .errbar{stroke-width:1.5}svg .skip{stroke-width:1.6;fill:none}"
    "svg .hist{fill-opacity:.14;stroke-width:1.6;stroke-linejoin:round}"
    "svg .median{stroke-dasharray:4 3;stroke-width:1.4}"
    "svg .cat{fill:#333b45;font-size:12px}svg .val{fill:#56606b;font-size:10px}"
    "svg .cell-text{fill:#333;font-size:11px}svg .cell-text.light{fill:#fff}svg .cell-text.muted{fill:#98a2ad}"
    ".heats{display:flex;flex-wrap:wrap;gap:16px}.heat{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:10px}"
    ".heat-title{font-weight:600;margin-bottom:2px}"
    ".heat-key{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:8px 0;color:#56606b}"
    "ul.diffs{margin:6px 0 0;padding-left:20px}";

int amp_ab_write_report(const amp_ab_study *st, FILE *f) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>amptrain A/B: ",
          f);
    for (int a = 0; a < st->narms; a++) {
        if (a) fputs(" vs ", f);
        amp_ab_html_esc(f, st->arms[a].name);
    }
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<header><div class=\"in\">\n", css);
    fputs("<h1>A/B test of precision policies</h1>\n<div class=\"meta\">", f);
    fprintf(f, "<span>baseline <b>");
    amp_ab_html_esc(f, st->arms[0].name);
    fprintf(f, "</b></span><span><b>%d</b> arms &times; <b>%d</b> seeds (", st->narms, st->nseeds);
    for (int i = 0; i < st->nseeds; i++) fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)st->seeds[i]);
    fputs(")</span>", f);
    if (st->ranks > 1) fprintf(f, "<span>every run on <b>%d</b> ranks</span>", st->ranks);
    fputs("<span>device <b>", f);
    amp_ab_html_esc(f, st->device);
    fputs("</b></span><span>", f);
    amp_ab_html_esc(f, st->cpu);
    fprintf(f, " &times; %d</span><span>host ", st->ncpu);
    amp_ab_html_esc(f, st->host);
    fprintf(f, "</span><span>%s</span><span>total %.1f %s</span><span>amptrain %s</span></div>\n</div></header>\n<main>\n",
            st->created, st->wall_s < 60 ? st->wall_s : st->wall_s / 60.0,
            st->wall_s < 60 ? "s" : "min", AMP_VERSION);

    fputs("<div class=\"card\"><div class=\"arms\">", f);
    for (int a = 0; a < st->narms; a++) {
        fprintf(f, "<div><i style=\"background:%s\"></i><b>", amp_ab_html_color(a));
        amp_ab_html_esc(f, st->arms[a].name);
        fputs("</b> &mdash; ", f);
        amp_ab_html_esc(f, st->arms[a].precision);
        fputs(" + ", f);
        amp_ab_html_esc(f, st->arms[a].scaler);
        fputs(" scaler <code>", f);
        amp_ab_html_esc(f, st->arms[a].config);
        fputs("</code></div>", f);
    }
    fputs("</div>\n<p class=\"note\">Every arm ran the same seeds. A seed fixes the initial weights "
          "and the order of the training data (both depend only on the seed and the epoch), so for "
          "a given seed every arm starts from the same weights and sees the same batches. The runs "
          "were interleaved, the order rotating per seed (arm 1 then arm 2 for seed 1, arm 2 then "
          "arm 1 for seed 2, &hellip;), so a drift in machine speed affects all arms alike and no "
          "arm always runs first.",
          f);
    if (st->nsets) {
        fputs(" Applied to every arm:", f);
        for (int i = 0; i < st->nsets; i++) {
            fputs(" <code>--set ", f);
            amp_ab_html_esc(f, st->sets[i]);
            fputs("</code>", f);
        }
        fputc('.', f);
    }
    fputs("</p></div>\n", f);

    if (st->ndiffs) {
        fputs("<div class=\"card warn\" id=\"config-differences\"><b>The arms differ in more than "
              "their precision policy and loss scaler</b> (run with <code>--allow-diff</code>): "
              "differences below mix these settings' effects with the policy's.<ul class=\"diffs\">",
              f);
        for (int d = 0; d < st->ndiffs; d++) {
            fputs("<li><code>[", f);
            amp_ab_html_esc(f, st->diffs[d].section);
            fputs("] ", f);
            amp_ab_html_esc(f, st->diffs[d].key);
            fputs("</code>: ", f);
            for (int a = 0; a < st->narms; a++) {
                fputs(a ? ", " : "", f);
                amp_ab_html_esc(f, st->arms[a].name);
                fputs(" = <code>", f);
                amp_ab_html_esc(f, st->diffs[d].values[a]);
                fputs("</code>", f);
            }
            fputs("</li>", f);
        }
        fputs("</ul></div>\n", f);
    }

    amp_ab_report_verdict(f, st);
    speed_panel(f, st);
    scan_panel(f, st);
    samples_panel(f, st);
    fputs("<h2>Training</h2>\n<div class=\"grid2\">\n", f);
    chart_loss(f, st);
    chart_eval(f, st);
    chart_scale(f, st);
    chart_steptime(f, st);
    fputs("</div>\n<h2>Precision telemetry and memory</h2>\n", f);
    fputs("<figure><figcaption><b>Underflow and overflow per layer</b> <span class=\"note\">fraction "
          "of the nonzero values rounded into 16 bits that flushed to zero (under) or became inf "
          "(over), summed over all seeds; forward = weights and activations, grad = gradients"
          "</span></figcaption>\n",
          f);
    heat_key(f, "rate", "no nonzero value rounded to 16 bits");
    fputs("<div class=\"heats\">\n", f);
    for (int a = 0; a < st->narms; a++) chart_heat(f, st, a);
    fputs("</div></figure>\n", f);
    int with_fp8 = 0;
    for (int a = 0; a < st->narms; a++)
        with_fp8 |= st->arms[a].nruns && amp_json_get_type(st->arms[a].runs[0].summary, "fp8", AMP_JARR);
    if (with_fp8) {
        fputs("<figure><figcaption><b>FP8 operands at the last step</b> <span class=\"note\">per "
              "layer and GEMM role (first seed): the step's amax, the scale the next step uses, the "
              "values clamped to the format's max (saturated) and the nonzero values that became 0 "
              "(flushed), coloured relative to the table's largest; kept = scale updates that kept "
              "the previous scale</span></figcaption>\n<div class=\"heats\">\n", f);
        for (int a = 0; a < st->narms; a++) chart_fp8(f, st, a);
        fputs("</div></figure>\n", f);
        fputs("<figure><figcaption><b>FP8 scale over the steps</b> <span class=\"note\">per "
              "layer and GEMM role (first seed), log2 axis: the scale each step leaves for the "
              "next (current scaling: the last one used); one line per operand, coloured by role"
              "</span></figcaption>\n<div class=\"heats\">\n", f);
        for (int a = 0; a < st->narms; a++) chart_fp8_scale(f, st, a);
        fputs("</div></figure>\n", f);
        fputs("<figure><figcaption><b>FP8 saturation and flushes over the steps</b> <span "
              "class=\"note\">rows per role and layer, columns spans of steps: the values "
              "clamped to the format's max (saturated) and the nonzero values that became 0 "
              "(flushed) per step, the mean over the span and the seeds, coloured on a log "
              "scale relative to the map's largest (key below)</span></figcaption>\n", f);
        heat_key(f, "share of the largest", NULL);
        fputs("<div class=\"heats\">\n", f);
        for (int a = 0; a < st->narms; a++) chart_fp8_heat(f, st, a);
        fputs("</div></figure>\n", f);
    }
    fputs("<div class=\"grid2\" style=\"margin-top:16px\">\n", f);
    chart_memory(f, st);
    fputs("</div>\n", f);
    runs_table(f, st);
    fputs("<p class=\"note\">Per-run files (summary.json, metrics.jsonl, config.ini, "
          "weights.safetensors, train.log) are in the folders listed above, next to this report; "
          "ab.json holds every number shown here.</p>\n</main>\n</body>\n</html>\n",
          f);
    return ferror(f) ? -1 : 0;
}

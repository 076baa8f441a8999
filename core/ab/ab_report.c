/* report.html: one self-contained page (inline CSS and SVG, no script, no
 * network) with the verdict table and the charts of an A/B study. Every
 * chart is an <svg class="chart" id="chart-..."> whose series are elements
 * of class "data" carrying data-arm, so tests can find them in the DOM. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/ab_chart.h"
#include "ab/ab_html.h"
#include "ab/ab_memory.h"
#include "ab/ab_report_layers.h"
#include "ab/ab_scan.h"

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
    amp_chart_figure_open(f, "Training loss", note, st);
    amp_chart_frame fr = {0, max_step(st), lo, hi, 64, 12, 476, 228};
    double ys = amp_chart_nice_range(&fr.y0, &fr.y1, 5);
    double xs = amp_chart_nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    amp_chart_svg_open(f, "chart-loss", "training loss per arm", 560, 290);
    amp_chart_axes(f, &fr, xs, ys, "step", "training loss", 0);
    for (int a = 0; a < st->narms; a++) {
        if (st->arms[a].nruns > 1) {
            fprintf(f, "<path class=\"band\" data-arm=\"%d\" fill=\"%s\" d=\"", a, amp_ab_html_color(a));
            amp_chart_path p = {f, 0};
            for (int j = 0; j < b[a].n; j++)
                amp_chart_path_pt(&p, amp_chart_x(&fr, b[a].x[j]), amp_chart_y(&fr, b[a].hi[j]));
            for (int j = b[a].n - 1; j >= 0; j--)
                amp_chart_path_pt(&p, amp_chart_x(&fr, b[a].x[j]), amp_chart_y(&fr, b[a].lo[j]));
            fputs(" Z\"/>\n", f);
        }
    }
    for (int a = 0; a < st->narms; a++) {
        fprintf(f, "<path class=\"data line\" data-arm=\"%d\" stroke=\"%s\" d=\"", a, amp_ab_html_color(a));
        amp_chart_path p = {f, 0};
        for (int j = 0; j < b[a].n; j++)
            amp_chart_path_pt(&p, amp_chart_x(&fr, b[a].x[j]), amp_chart_y(&fr, b[a].mean[j]));
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
        amp_chart_figure_open(f, title, "", NULL);
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
    amp_chart_figure_open(
        f, title,
        "at every evaluation the runs made; dots are means over seeds, bars span min to max", st);
    amp_chart_frame fr = {0, max_step(st), lo, hi, 64, 12, 476, 228};
    double ys = amp_chart_nice_range(&fr.y0, &fr.y1, 5);
    double xs = amp_chart_nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    amp_chart_svg_open(f, "chart-eval", lm ? "validation loss per arm" : "test accuracy per arm",
                       560, 290);
    amp_chart_axes(f, &fr, xs, ys, "step", lm ? "validation loss" : "test accuracy", 0);
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
            double px = amp_chart_x(&fr, (double)arm->runs[0].evals[e].step) + off;
            if (arm->nruns > 1)
                fprintf(f,
                        "<line class=\"errbar\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                        px, px, amp_chart_y(&fr, mn[e]), amp_chart_y(&fr, mxv[e]));
            fprintf(f, "<circle class=\"marker\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>", px,
                    amp_chart_y(&fr, mean[e]));
            amp_ab_html_esc(f, arm->name);
            fprintf(f, " step %lld: %.4f</title></circle>\n", (long long)arm->runs[0].evals[e].step,
                    mean[e]);
        }
        fputs("</g>\n", f);
        fprintf(f, "<path class=\"data line\" data-arm=\"%d\" stroke=\"%s\" d=\"", a, amp_ab_html_color(a));
        amp_chart_path p = {f, 0};
        for (size_t e = 0; e < ne; e++)
            amp_chart_path_pt(&p, amp_chart_x(&fr, (double)arm->runs[0].evals[e].step) + off,
                              amp_chart_y(&fr, mean[e]));
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
    amp_chart_figure_open(f, "Loss scale", note, st);
    amp_chart_frame fr = {0, max_step(st), lo, hi, 64, 12, 476, 228};
    double xs = amp_chart_nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    double ys = 1; /* 1, 2, 4, 8 ... doublings per tick, at multiples of the step */
    while ((hi - lo) / ys > 8) ys *= 2;
    fr.y0 = floor(lo / ys) * ys;
    fr.y1 = ceil(hi / ys) * ys;
    amp_chart_svg_open(f, "chart-scale", "loss scale over time per arm, log2 axis", 560, 290);
    amp_chart_axes(f, &fr, xs, ys, "step", "loss scale", 1);
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
                double v = log2(p->scale), px = amp_chart_x(&fr, (double)p->step);
                if (!started)
                    fprintf(f, "M%.1f %.1f", px, amp_chart_y(&fr, v));
                else if (v != prev)
                    fprintf(f, " H%.1f V%.1f", px, amp_chart_y(&fr, v));
                started = 1;
                prev = v;
            }
            if (started)
                fprintf(f, " H%.1f", amp_chart_x(&fr, (double)run->pts[run->npts - 1].step));
            fputs("\"/>\n", f);
            int marks = 0;
            for (size_t i = 0; i < run->npts && marks < 500; i++) {
                const amp_ab_point *p = &run->pts[i];
                if (!p->skipped || !(p->scale > 0) || !isfinite(p->scale)) continue;
                double px = amp_chart_x(&fr, (double)p->step),
                       py = amp_chart_y(&fr, log2(p->scale));
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
    amp_chart_figure_open(f, "Step time distribution",
                          "every step of every seed from the 1st percentile to the 99th (at most "
                          "3&times; the slowest median); dashed lines are medians",
                          st);
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
    amp_chart_frame fr = {lo, hi, 0, ymax > 0 ? ymax : 1, 64, 12, 476, 228};
    double xs = amp_chart_nice_range(&fr.x0, &fr.x1, 6);
    double ys = amp_chart_nice_range(&fr.y0, &fr.y1, 5);
    fr.y0 = 0;
    amp_chart_svg_open(f, "chart-steptime", "step time histogram per arm", 560, 290);
    amp_chart_axes(f, &fr, xs, ys, "step time (ms)", "fraction of steps", 0);
    (void)frac;
    for (int a = 0; a < st->narms && h; a++) {
        if (!n[a]) continue;
        fprintf(f, "<path class=\"data hist\" data-arm=\"%d\" stroke=\"%s\" fill=\"%s\" d=\"", a,
                amp_ab_html_color(a), amp_ab_html_color(a));
        double base = amp_chart_y(&fr, 0);
        fprintf(f, "M%.1f %.1f", amp_chart_x(&fr, lo), base);
        for (int b = 0; b < TBINS; b++)
            fprintf(f, " V%.1f H%.1f", amp_chart_y(&fr, h[a][b]),
                    amp_chart_x(&fr, lo + (b + 1) * width));
        fprintf(f, " V%.1f Z\"/>\n", base);
        double med = amp_ab_quantile_sorted(v[a], n[a], 0.5), px = amp_chart_x(&fr, med);
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
    amp_chart_figure_open(f, title, note, st);
    int bh = 9, gap = 10, group = st->narms * bh + gap;
    int h = 20 + nc * group + 40;
    amp_chart_frame fr = {0, mx > 0 ? mx : 1, 0, 1, 120, 10, 340, (double)(nc * group)};
    double xs = amp_chart_nice_range(&fr.x0, &fr.x1, 5);
    amp_chart_svg_open(f, "chart-memory", "peak memory per category per arm", 560, h);
    /* the x axis in the largest binary unit that fits */
    double unit = fr.x1 >= (1 << 30) ? (1 << 30) : fr.x1 >= (1 << 20) ? (1 << 20) : fr.x1 >= (1 << 10) ? (1 << 10) : 1;
    const char *uname = unit == (1 << 30) ? "GiB" : unit == (1 << 20) ? "MiB" : unit == (1 << 10) ? "KiB" : "bytes";
    if (unit > 1) { /* ticks at round numbers of that unit */
        fr.x1 = mx / unit;
        xs = amp_chart_nice_range(&fr.x0, &fr.x1, 5) * unit;
        fr.x1 *= unit;
    }
    fputs("<g class=\"axes\">\n", f);
    for (double x = 0; x <= fr.x1 + xs * 1e-6; x += xs) {
        double px = amp_chart_x(&fr, x);
        char buf[32];
        amp_chart_tick_label(buf, sizeof buf, x / unit, xs / unit);
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
            double v = st->arms[a].mem[m].mean, w = amp_chart_x(&fr, v) - fr.L;
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
    "td.path{font-family:ui-monospace,monospace;font-size:12px;color:#566;white-space:normal;overflow-wrap:anywhere}"
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
    "ul.diffs{margin:6px 0 0;padding-left:20px}"
    /* the verdict table wraps inside its cells to fit a 1,280 px window */
    "table.verdict td{white-space:normal;vertical-align:top}table.verdict th{font-size:12px}"
    "table.verdict td.arm{overflow-wrap:anywhere;min-width:9em}"
    "table.verdict .nw,table.verdict .ci{white-space:nowrap}"
    "table.verdict .pill{white-space:normal}table.verdict .fmt{margin-bottom:3px}"
    "tr.total td{border-top:1px solid #dde3ea}";

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
    amp_ab_report_heat_key(f, "rate", "no nonzero value rounded to 16 bits");
    fputs("<div class=\"heats\">\n", f);
    for (int a = 0; a < st->narms; a++) amp_ab_report_heat(f, st, a);
    fputs("</div></figure>\n", f);
    amp_ab_report_formats(f, st);
    fputs("<div class=\"grid2\" style=\"margin-top:16px\">\n", f);
    chart_memory(f, st);
    amp_ab_report_memory(f, st);
    fputs("</div>\n", f);
    runs_table(f, st);
    fputs("<p class=\"note\">Per-run files (summary.json, metrics.jsonl, config.ini, "
          "weights.safetensors, train.log) are in the folders listed above, next to this report; "
          "ab.json holds every number shown here.</p>\n</main>\n</body>\n</html>\n",
          f);
    return ferror(f) ? -1 : 0;
}

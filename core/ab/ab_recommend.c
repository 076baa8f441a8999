/* The recommendation: among the arms whose verdict is, with 95% confidence,
 * no worse than the baseline's by more than the tolerance (the interval's
 * worse end within it), the cheapest: the smallest memory, then the fastest
 * measured step where the format ran natively. An arm with one seed has no
 * interval and cannot qualify. When none qualifies the baseline is
 * recommended, saying why. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ab/ab_formats.h"
#include "ab/ab_html.h"
#include "ab/ab_project.h"
#include "ab/ab_recommend.h"

double amp_ab_tolerance(const amp_ab_study *st) {
    if (st->tolerance > 0) return st->tolerance;
    return st->metric == AMP_AB_METRIC_LOSS ? AMP_AB_TOL_LOSS : AMP_AB_TOL_ACC;
}

/* Appends "; "-separated text to buf. */
static void add(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t cap, const char *fmt, ...) {
    size_t n = strlen(buf);
    if (n && n + 2 < cap) {
        strcpy(buf + n, "; ");
        n += 2;
    }
    if (n >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* How far the interval's worse end lies past the baseline (> 0: worse). */
static double worst(const amp_ab_study *st, const amp_ab_welch *w) {
    return st->metric == AMP_AB_METRIC_LOSS ? w->hi : -w->lo;
}

/* Arm x is cheaper than arm y: the larger projected speed on a B200 (the
 * GPU with every format: an emulated arm's measured speed says nothing of
 * its format's), then the smaller memory, then the measured speed of arms
 * that ran natively. */
static int cheaper(const amp_ab_study *st, int x, const amp_ab_cmp *cx, int xemu, int y,
                   const amp_ab_cmp *cy, int yemu) {
    double px = x ? amp_ab_projected(st, x, AMP_AB_GPU_B200) : 1.0;
    double py = y ? amp_ab_projected(st, y, AMP_AB_GPU_B200) : 1.0;
    if (isfinite(px) && isfinite(py) && fabs(px - py) > 0.02 * py) return px > py;
    if (fabs(cx->mem_ratio - cy->mem_ratio) > 0.01) return cx->mem_ratio < cy->mem_ratio;
    double sx = xemu ? 1.0 : cx->speedup, sy = yemu ? 1.0 : cy->speedup;
    return sx > sy;
}

void amp_ab_recommend(amp_ab_rec *out, const amp_ab_study *st) {
    memset(out, 0, sizeof *out);
    out->tolerance = amp_ab_tolerance(st);
    out->tol_given = st->tolerance > 0;
    int lm = st->metric == AMP_AB_METRIC_LOSS;
    const char *unit = lm ? "Δloss" : "Δacc";
    amp_ab_cmp best_cmp;
    int best_emu = 0, nq = 0;
    memset(&best_cmp, 0, sizeof best_cmp);
    best_cmp.mem_ratio = 1.0;
    best_cmp.speedup = 1.0;
    for (int a = 1; a < st->narms && a < AMP_AB_MAX_ARMS; a++) {
        amp_ab_rec_arm *ra = &out->arms[a];
        const amp_ab_arm *arm = &st->arms[a];
        amp_ab_cmp c;
        amp_ab_compare(&c, st, 0, a);
        const amp_ab_welch *v = &c.verdict;
        char emu[256];
        int emulated = amp_ab_emulated(st, a, emu, sizeof emu);
        if (!v->has_ci) {
            add(ra->con, sizeof ra->con, "%s %+.4f from %d seed: no interval, cannot show it is "
                "within ±%g", unit, v->diff, v->n, out->tolerance);
        } else {
            ra->qualifies = worst(st, v) <= out->tolerance;
            char *b = ra->qualifies ? ra->pro : ra->con;
            size_t cap = ra->qualifies ? sizeof ra->pro : sizeof ra->con;
            add(b, cap, "%s %+.4f [%+.4f, %+.4f] (%s) %s ±%g", unit, v->diff, v->lo, v->hi,
                v->paired ? "paired" : "Welch", ra->qualifies ? "within" : "not within",
                out->tolerance);
            if (v->significant) {
                int better = (v->diff < 0) == lm;
                add(better ? ra->pro : ra->con, better ? sizeof ra->pro : sizeof ra->con,
                    "significantly %s than the baseline", better ? "better" : "worse");
            } else {
                add(ra->pro, sizeof ra->pro, "no significant difference");
            }
        }
        if (isfinite(c.mem_ratio) && fabs(c.mem_ratio - 1.0) > 0.01)
            add(c.mem_ratio < 1 ? ra->pro : ra->con, c.mem_ratio < 1 ? sizeof ra->pro : sizeof ra->con,
                "memory %.2fx the baseline's", c.mem_ratio);
        double pb = amp_ab_projected(st, a, AMP_AB_GPU_B200), ph = amp_ab_projected(st, a, AMP_AB_GPU_H100);
        char fm[96];
        amp_ab_flop_mix(fm, sizeof fm, st, a);
        char hs[48] = "n/a (no FP4/MXFP8)";
        if (isfinite(ph)) snprintf(hs, sizeof hs, "%.2fx", ph);
        if (isfinite(pb))
            add(pb > 1.02 ? ra->pro : ra->con, pb > 1.02 ? sizeof ra->pro : sizeof ra->con,
                "projected %.2fx the baseline's weight-GEMM speed on a B200, %s on an H100/H200 "
                "(GEMM FLOPs %s)", pb, hs, fm);
        if (emulated)
            add(ra->con, sizeof ra->con, "emulated here (%s): its %.2fx speed is the emulation's",
                emu, c.speedup);
        else if (c.speed.significant)
            add(c.speedup > 1 ? ra->pro : ra->con, c.speedup > 1 ? sizeof ra->pro : sizeof ra->con,
                "%.2fx the baseline's speed (significant)", c.speedup);
        if (arm->skipped.mean > 0)
            add(ra->con, sizeof ra->con, "%.1f skipped steps per run", arm->skipped.mean);
        if (arm->underflow.mean > 0 || arm->overflow.mean > 0)
            add(ra->con, sizeof ra->con, "%.3g underflows, %.3g overflows per run (16-bit)",
                arm->underflow.mean, arm->overflow.mean);
        amp_ab_telem tel;
        amp_ab_telemetry(&tel, arm);
        for (int fam = 0; fam < AMP_AB_NFAM; fam++)
            if (tel.has[fam] && (tel.saturated[fam] > 0 || tel.flushed[fam] > 0))
                add(ra->con, sizeof ra->con, "%.3g saturated, %.3g flushed values per step (%s "
                    "operands)", tel.saturated[fam], tel.flushed[fam], amp_ab_family_name(fam));
        if (!ra->qualifies) continue;
        nq++;
        if (!out->best || cheaper(st, a, &c, emulated, out->best, &best_cmp, best_emu)) {
            out->best = a;
            best_cmp = c;
            best_emu = emulated;
        }
    }
    const char *metric = amp_ab_metric_name(st);
    if (out->best) {
        double pb = amp_ab_projected(st, out->best, AMP_AB_GPU_B200);
        char proj[96] = "";
        if (isfinite(pb)) snprintf(proj, sizeof proj, ", projected %.2fx the baseline's weight-GEMM speed on a B200", pb);
        snprintf(out->why, sizeof out->why,
                 "%s: the cheapest of the %d arm%s whose %s stays within %g of the baseline's "
                 "(the whole 95%% interval; tolerance %s)%s, memory %.2fx the baseline's",
                 st->arms[out->best].name, nq, nq == 1 ? "" : "s", metric, out->tolerance,
                 out->tol_given ? "from --tolerance" : "the default", proj, best_cmp.mem_ratio);
    } else {
        snprintf(out->why, sizeof out->why,
                 "the baseline %s: no arm's %s stays within %g of the baseline's with 95%% "
                 "confidence (tolerance %s)%s",
                 st->arms[0].name, metric, out->tolerance,
                 out->tol_given ? "from --tolerance" : "the default",
                 st->nseeds < 2 ? "; with one seed no arm has an interval: run --seeds 2 or more"
                                : "");
    }
}

void amp_ab_recommend_print(const amp_ab_rec *r, const amp_ab_study *st, FILE *f) {
    fprintf(f, "\nrecommendation: %s.\n", r->why);
    for (int a = 1; a < st->narms && a < AMP_AB_MAX_ARMS; a++) {
        const amp_ab_rec_arm *ra = &r->arms[a];
        fprintf(f, "  %s %s\n    for: %s\n    against: %s\n", a == r->best ? "*" : " ",
                st->arms[a].name, ra->pro[0] ? ra->pro : "-", ra->con[0] ? ra->con : "-");
    }
}

void amp_ab_recommend_html(const amp_ab_rec *r, const amp_ab_study *st, FILE *f) {
    fputs("<div class=\"card\" id=\"recommendation\"><h2>Recommendation</h2><p><b>Use ", f);
    amp_ab_html_esc(f, st->arms[r->best].name);
    fputs("</b> &mdash; ", f);
    /* the reason without the arm's name, which the line has just given */
    size_t nl = strlen(st->arms[r->best].name);
    const char *why = r->why;
    if (r->best && strncmp(why, st->arms[r->best].name, nl) == 0 && strncmp(why + nl, ": ", 2) == 0)
        why += nl + 2;
    amp_ab_html_esc(f, why);
    /* the evidence is prose: let it wrap (report tables keep cells on one line) */
    fputs(".</p>\n<table class=\"evidence\" style=\"table-layout:fixed;width:100%\"><thead><tr>"
          "<th style=\"width:22%\">arm</th><th style=\"width:8%\">qualifies</th><th>for</th>"
          "<th>against</th></tr></thead><tbody>\n", f);
    for (int a = 1; a < st->narms && a < AMP_AB_MAX_ARMS; a++) {
        const amp_ab_rec_arm *ra = &r->arms[a];
        fputs("<tr><td class=\"arm\" style=\"white-space:normal;overflow-wrap:anywhere\">", f);
        amp_ab_html_esc(f, st->arms[a].name);
        fprintf(f, "</td><td>%s</td><td style=\"white-space:normal\">", ra->qualifies ? "yes" : "no");
        amp_ab_html_esc(f, ra->pro[0] ? ra->pro : "-");
        fputs("</td><td style=\"white-space:normal\">", f);
        amp_ab_html_esc(f, ra->con[0] ? ra->con : "-");
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
}

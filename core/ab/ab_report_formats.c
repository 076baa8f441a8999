/* report.html's telemetry per number format: the verdict table's cell (the
 * flushed and saturated values per step of each scaled format, the 16-bit
 * underflows and overflows) and, for arms with scaled operands, the
 * operands' table, their scales over the steps and one heat map per format
 * (FP8, MXFP8, NVFP4), each titled by its format with its own colour scale,
 * since a 4-bit format flushes orders of magnitude more than an 8-bit one. */
#include <math.h>
#include <stdio.h>

#include "ab/ab_formats.h"
#include "ab/ab_html.h"
#include "ab/ab_report_layers.h"

void amp_ab_report_telem_cell(FILE *f, const amp_ab_arm *arm) {
    amp_ab_telem t;
    amp_ab_telemetry(&t, arm);
    fputs("<td class=\"telem\">", f);
    int any = 0;
    for (int fam = 0; fam < AMP_AB_NFAM; fam++) {
        if (!t.has[fam]) continue;
        fprintf(f,
                "<div class=\"fmt\" data-format=\"%s\" data-flushed=\"%.9g\" data-saturated=\"%.9g\">"
                "<b>%s</b> <span class=\"nw\">%.4g flushed</span>, <span class=\"nw\">%.4g "
                "saturated</span> <span class=\"sub\">/step</span></div>",
                amp_ab_family_id(fam), t.flushed[fam], t.saturated[fam], amp_ab_family_name(fam),
                t.flushed[fam], t.saturated[fam]);
        any = 1;
    }
    if (t.rounded16) {
        fprintf(f,
                "<div class=\"fmt\" data-format=\"16-bit\" data-underflow=\"%.9g\" "
                "data-overflow=\"%.9g\"><b>16-bit</b> <span class=\"nw\">%.3g under</span>, "
                "<span class=\"nw\">%.3g over</span> <span class=\"sub\">/run</span></div>",
                t.underflow, t.overflow, t.underflow, t.overflow);
        any = 1;
    }
    if (!any) fputs("<span class=\"muted\">nothing rounded below FP32</span>", f);
    fputs("</td>", f);
}

/* The colour key of a format's heat map: per kind, its range per step. */
static void range_key(FILE *f, int fam, const double lo[2], const double hi[2]) {
    static const char *const kinds[2] = {"saturated", "flushed"};
    fprintf(f, "<div class=\"heat-key\" data-format=\"%s\">", amp_ab_family_id(fam));
    for (int kind = 0; kind < 2; kind++) {
        fprintf(f, "<span>%s %s per step (log scale):</span>", amp_ab_family_name(fam), kinds[kind]);
        if (!(hi[kind] > 0)) {
            fputs("<span><i style=\"background:#f7f9f7\"></i>none</span>", f);
            continue;
        }
        for (int e = 0; e <= 4; e++) {
            char fill[32];
            double v = hi[kind] > lo[kind] ? lo[kind] * pow(hi[kind] / lo[kind], e / 4.0) : hi[kind];
            amp_ab_heat_fill(fill, sizeof fill, hi[kind] > lo[kind] ? e / 4.0 : 1.0);
            fprintf(f, "<span><i style=\"background:%s\"></i>%.3g</span>", fill, v);
            if (!(hi[kind] > lo[kind])) break;
        }
    }
    fputs("<span><i style=\"background:#f7f9f7\"></i>0</span></div>\n", f);
}

void amp_ab_report_formats(FILE *f, const amp_ab_study *st) {
    int with = 0;
    for (int fam = 0; fam < AMP_AB_NFAM; fam++) with |= amp_ab_study_has_family(st, fam);
    if (!with) return;
    fputs("<figure><figcaption><b>Scaled operands at the last step</b> <span class=\"note\">per "
          "layer and GEMM role (first seed): the format, the step's amax, the scale the next step "
          "uses, the values clamped to the format's max (saturated) and the nonzero values that "
          "became 0 (flushed), coloured relative to the table's largest; kept = scale updates "
          "that kept the previous scale. The last two columns: saturated and flushed values per "
          "step over all steps and seeds, with each format's total (the verdict table's figures)"
          "</span></figcaption>\n<div class=\"heats\">\n", f);
    for (int a = 0; a < st->narms; a++) amp_ab_report_fp8(f, st, a);
    fputs("</div></figure>\n", f);
    fputs("<figure><figcaption><b>Per-tensor scales over the steps</b> <span class=\"note\">per "
          "layer and GEMM role (first seed), log2 axis: the scale each step leaves for the "
          "next (current scaling: the last one used); one line per operand, coloured by role"
          "</span></figcaption>\n<div class=\"heats\">\n", f);
    for (int a = 0; a < st->narms; a++) amp_ab_report_fp8_scale(f, st, a);
    fputs("</div></figure>\n", f);
    for (int fam = 0; fam < AMP_AB_NFAM; fam++) {
        if (!amp_ab_study_has_family(st, fam)) continue;
        double lo[2], hi[2];
        amp_ab_report_fp8_range(st, fam, lo, hi);
        const char *name = amp_ab_family_name(fam);
        fprintf(f, "<figure id=\"heat-%s\" data-format=\"%s\"><figcaption><b>%s saturation and "
                   "flushes over the steps</b> <span class=\"note\">the %s operands: rows per "
                   "role and layer, columns spans of steps: the values clamped to the format's "
                   "max (saturated) and the nonzero values that became 0 (flushed) per step, the "
                   "mean over the span and the seeds, coloured on a log scale from the smallest "
                   "nonzero to the largest %s cell of the study (key below; every format has its "
                   "own)</span></figcaption>\n",
                amp_ab_family_id(fam), amp_ab_family_id(fam), name, name, name);
        range_key(f, fam, lo, hi);
        fputs("<div class=\"heats\">\n", f);
        for (int a = 0; a < st->narms; a++) amp_ab_report_fp8_heat(f, st, a, fam, lo, hi);
        fputs("</div></figure>\n", f);
    }
}

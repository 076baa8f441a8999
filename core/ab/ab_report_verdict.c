/* report.html's verdict table: one row per arm against the baseline, with
 * the verdict's interval, the per-seed differences it rests on, the speed
 * and the memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ab/ab.h"
#include "ab/ab_html.h"
#include "ab/ab_project.h"
#include "ab/ab_recommend.h"
#include "ab/ab_report_layers.h"

/* The verdict: for a loss lower is better, for accuracy higher. */
static void verdict_cell(FILE *f, const amp_ab_welch *w, int baseline, int lower_better) {
    if (baseline) {
        fputs("<td class=\"muted\">baseline</td><td class=\"muted\">&mdash;</td>", f);
        return;
    }
    char how[64];
    amp_ab_interval_name(how, sizeof how, w);
    if (!w->has_ci) {
        fprintf(f, "<td class=\"num\">%+.4f<br><span class=\"sub\">%s</span></td><td><span "
                   "class=\"pill na\">n/a (%d seed%s)</span></td>",
                w->diff, how, w->n, w->n == 1 ? "" : "s");
        return;
    }
    fprintf(f, "<td class=\"num\">%+.4f<br><span class=\"ci\">[%+.4f, %+.4f]</span><br><span "
               "class=\"sub\">%s</span></td>",
            w->diff, w->lo, w->hi, how);
    if (!w->significant)
        fputs("<td><span class=\"pill same\">no significant difference</span></td>", f);
    else if ((w->diff > 0) != lower_better)
        fprintf(f, "<td><span class=\"pill better\">significantly %s</span></td>",
                w->diff > 0 ? "higher" : "lower");
    else
        fprintf(f, "<td><span class=\"pill worse\">significantly %s</span></td>",
                w->diff > 0 ? "higher" : "lower");
}

/* A speedup with its interval and, only where the data carry one, a verdict. */
static void speed_cell(FILE *f, const amp_ab_study *st, const amp_ab_arm *arm,
                       const amp_ab_speed *sp, int baseline, int emulated) {
    char steps[96];
    snprintf(steps, sizeof steps, "<br><span class=\"sub nw\">step %.2f / %.2f ms</span>",
             arm->median_ms.mean, arm->cpu_ms.mean);
    if (baseline) {
        fprintf(f, "<td class=\"num\"><span class=\"muted\">baseline</span>%s</td>", steps);
        return;
    }
    fprintf(f, "<td class=\"num\">%.2f&times;%s", sp->speedup,
            emulated ? " <span class=\"sub\">(the emulation's)</span>" : "");
    if (sp->has_ci) fprintf(f, "<br><span class=\"ci\">[%.2f, %.2f]</span>", sp->lo, sp->hi);
    if (!sp->has_ci)
        fputs("<br><span class=\"pill na\">n/a (1 seed)</span>", f);
    else if (st->timing.disturbed)
        fputs("<br><span class=\"pill na\">not judged: timing disturbed</span>", f);
    else if (sp->noisy)
        fprintf(f, "<br><span class=\"pill na\">not judged: seeds range %.2f&ndash;%.2f&times;</span>",
                sp->seed_lo, sp->seed_hi);
    else if (!sp->significant)
        fputs("<br><span class=\"pill same\">no significant difference</span>", f);
    else
        fprintf(f, "<br><span class=\"pill %s\">significantly %s</span>",
                sp->speedup > 1 ? "better" : "worse", sp->speedup > 1 ? "faster" : "slower");
    fprintf(f, "%s</td>", steps);
}

/* The projection on named GPUs (ab_project.h), never a measurement. */
static void projected_cell(FILE *f, const amp_ab_study *st, int a) {
    char mix[96];
    amp_ab_flop_mix(mix, sizeof mix, st, a);
    fputs("<td class=\"num projected\">", f);
    for (int g = 0; g < AMP_AB_NGPU; g += g == AMP_AB_GPU_H100 ? 2 : 1) {
        double p = amp_ab_projected(st, a, g);
        fprintf(f, "%s<span class=\"nw\">%s ", g ? "<br>" : "",
                g == AMP_AB_GPU_H100 ? "H100/H200" : amp_ab_gpu_name(g));
        if (isfinite(p)) fprintf(f, "%.2f&times;</span>", p);
        else fputs("n/a</span>", f);
    }
    fputs("<br><span class=\"sub\">", f);
    amp_ab_html_esc(f, mix[0] ? mix : "GEMMs unknown");
    fputs("</span></td>", f);
}

void amp_ab_report_verdict(FILE *f, const amp_ab_study *st) {
    static amp_ab_rec rec; /* large: off the stack */
    amp_ab_recommend(&rec, st);
    amp_ab_recommend_html(&rec, st, f);
    int any_emulated = 0;
    int t = amp_ab_mem_total(st), lm = st->metric == AMP_AB_METRIC_LOSS;
    /* columns that wrap inside their cells, so the table fits a 1,280 px window */
    fprintf(f, "<h2>Verdict</h2>\n<table class=\"verdict\">\n<thead><tr><th>arm<br><span "
               "class=\"sub\">policy + scaler, seeds</span></th>"
               "<th>%s<br><span class=\"sub\">mean &plusmn; sd%s; final train loss</span></th>"
               "<th>per-seed &Delta;<br><span class=\"sub\">arm &minus; baseline</span></th>"
               "<th>&Delta; %s vs baseline<br><span class=\"sub\">95%% CI</span></th>"
               "<th>significant?</th><th>speedup (%s time)<br><span "
               "class=\"sub\">95%% CI, paired by seed; median step wall / CPU</span></th>"
               "<th>projected speedup<br><span class=\"sub\">weight GEMMs, datasheet rates</span></th>"
               "<th>memory ratio<br><span class=\"sub\">total peak</span></th><th>skipped steps</th>"
               "<th>number formats<br><span class=\"sub\">flushed, saturated; 16-bit under, "
               "over</span></th></tr></thead>\n<tbody>\n",
            amp_ab_metric_name(st), lm ? "; perplexity" : "", lm ? "validation loss" : "accuracy",
            amp_ab_speed_basis(st));
    for (int a = 0; a < st->narms; a++) {
        const amp_ab_arm *arm = &st->arms[a];
        amp_ab_cmp c;
        amp_ab_compare(&c, st, 0, a);
        fprintf(f, "<tr><td class=\"arm\"><i style=\"background:%s\"></i>", amp_ab_html_color(a));
        amp_ab_html_esc(f, arm->name);
        char emu[256];
        int emulated = amp_ab_emulated(st, a, emu, sizeof emu);
        any_emulated |= emulated;
        if (emulated) {
            fputs(" <span class=\"pill na emulated\" title=\"", f);
            amp_ab_html_esc(f, emu);
            fputs("\">emulated</span>", f);
        }
        fputs("<br><span class=\"sub\">", f);
        amp_ab_html_esc(f, arm->precision);
        fputs(" + ", f);
        amp_ab_html_esc(f, arm->scaler);
        fprintf(f, ", %d seed%s</span></td>", arm->nruns, arm->nruns == 1 ? "" : "s");
        const amp_ab_summary *m = lm ? &arm->test_loss : &arm->test_acc;
        fprintf(f, "<td class=\"num\"><span class=\"nw\">%.4f", m->mean);
        if (arm->nruns > 1) fprintf(f, " &plusmn; %.4f", m->sd);
        fputs("</span>", f);
        if (lm) fprintf(f, "<br><span class=\"sub\">ppl %.3f</span>", exp(m->mean));
        fprintf(f, "<br><span class=\"sub\">train loss %.4f</span></td>", arm->final_loss.mean);
        if (a) {
            char deltas[160];
            amp_ab_seed_deltas_text(deltas, sizeof deltas, st, 0, a);
            fprintf(f, "<td class=\"num seeds\">%s</td>", deltas);
        } else {
            fputs("<td class=\"muted\">&mdash;</td>", f);
        }
        verdict_cell(f, &c.verdict, a == 0, lm);
        char mem[32] = "n/a";
        if (t >= 0) amp_ab_fmt_bytes(mem, sizeof mem, arm->mem[t].mean);
        speed_cell(f, st, arm, &c.speed, a == 0, emulated);
        projected_cell(f, st, a);
        fprintf(f,
                "<td class=\"num%s\">%.2f&times;<br><span class=\"sub\">%s</span></td><td class=\"num\">%.1f</td>",
                a && c.mem_ratio < 0.95 ? " good" : a && c.mem_ratio > 1.05 ? " bad" : "", c.mem_ratio, mem,
                arm->skipped.mean);
        amp_ab_report_telem_cell(f, arm);
        fputs("</tr>\n", f);
    }
    fprintf(f, "</tbody></table>\n<p class=\"note\">The verdict is the %s (%s). "
               "&Delta; is arm &minus; baseline. <b>Significant</b>: the "
               "95%% interval excludes 0. Arms that ran the same seeds are compared seed by seed: "
               "the interval is the <b>paired t</b> interval on the per-seed differences (mean "
               "&plusmn; t<sub>0.975, n&minus;1</sub> &middot; sd/&radic;n), which removes the "
               "seed-to-seed spread both arms share; arms whose seeds differ get Welch's interval. "
               "With one seed there is no spread to estimate, so no interval is given. <b>Speedup</b>: for each seed, the baseline's median %s time per "
               "step / the arm's (&gt;1 is faster); the geometric mean over seeds with a t interval. "
               "<b>Projected speedup</b> (a projection, not a measurement): the baseline's weight-GEMM "
               "time / the arm's at NVIDIA's published dense peak rate per format (H100/H200 SXM: "
               "FP8 2&times; BF16/FP16, 4&times; TF32, no FP4; B200: FP4 2&times; FP8), from the "
               "model's FLOPs per GEMM format (below each figure); FP32 GEMMs at the TF32 rate; "
               "non-GEMM work not counted, so a step gains less. "
               "<b>Memory ratio</b>: the arm's total peak memory / the baseline's. "
               "Skipped steps are means per run. <b>Number formats</b>, per format the arm rounds "
               "to: for the scaled formats (FP8, MXFP8, NVFP4) the nonzero values that became 0 "
               "(flushed) and those clamped to the format's max (saturated) per step, summed over "
               "the operands, the mean over steps and seeds (the totals of the operand table "
               "below); for 16 bits the values flushed to zero (under) or rounded to inf (over) "
               "when stored in 16 bits, means per run.%s</p>\n",
            amp_ab_metric_name(st),
            st->metric_forced ? "chosen with --metric"
            : lm              ? "the model is a language model; --metric acc chooses accuracy"
                              : "the model is a classifier; --metric loss chooses the loss",
            amp_ab_speed_basis(st),
            any_emulated ? " <b>Emulated</b>: this device lacks the arm's number format; it rounds "
                           "the operands to the format and computes in FP32, so the arm's speedup "
                           "is the emulation's, not the format's (hover the mark for details)."
                         : "");
}


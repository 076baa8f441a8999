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
static void speed_cell(FILE *f, const amp_ab_study *st, const amp_ab_speed *sp, int baseline,
                       int emulated) {
    if (baseline) {
        fputs("<td class=\"muted\">baseline</td>", f);
        return;
    }
    fprintf(f, "<td class=\"num\">%.2f&times;%s", sp->speedup,
            emulated ? " <span class=\"sub\">(the emulation's)</span>" : "");
    if (sp->has_ci) fprintf(f, "<br><span class=\"ci\">[%.2f, %.2f]</span>", sp->lo, sp->hi);
    if (!sp->has_ci)
        fputs(" <span class=\"pill na\">n/a (1 seed)</span>", f);
    else if (st->timing.disturbed)
        fputs(" <span class=\"pill na\">not judged: timing disturbed</span>", f);
    else if (sp->noisy)
        fprintf(f, " <span class=\"pill na\">not judged: seeds range %.2f&ndash;%.2f&times;</span>",
                sp->seed_lo, sp->seed_hi);
    else if (!sp->significant)
        fputs(" <span class=\"pill same\">no significant difference</span>", f);
    else
        fprintf(f, " <span class=\"pill %s\">significantly %s</span>",
                sp->speedup > 1 ? "better" : "worse", sp->speedup > 1 ? "faster" : "slower");
    fputs("</td>", f);
}

/* The projection on named GPUs (ab_project.h), never a measurement. */
static void projected_cell(FILE *f, const amp_ab_study *st, int a) {
    char mix[96];
    amp_ab_flop_mix(mix, sizeof mix, st, a);
    fputs("<td class=\"num projected\">", f);
    for (int g = 0; g < AMP_AB_NGPU; g += g == AMP_AB_GPU_H100 ? 2 : 1) {
        double p = amp_ab_projected(st, a, g);
        fprintf(f, "%s%s ", g ? "<br>" : "", g == AMP_AB_GPU_H100 ? "H100/H200" : amp_ab_gpu_name(g));
        if (isfinite(p)) fprintf(f, "%.2f&times;", p);
        else fputs("n/a", f);
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
    fprintf(f, "<h2>Verdict</h2>\n<table class=\"verdict\">\n<thead><tr><th>arm</th>"
               "<th>seeds</th><th>%s<br><span class=\"sub\">mean &plusmn; sd%s</span></th>"
               "<th>per-seed &Delta;<br><span class=\"sub\">arm &minus; baseline</span></th>"
               "<th>&Delta; %s vs baseline<br><span class=\"sub\">95%% CI</span></th>"
               "<th>significant?</th><th>final train loss</th><th>median step<br><span "
               "class=\"sub\">wall / CPU</span></th><th>speedup (%s time)<br><span "
               "class=\"sub\">95%% CI, paired by seed</span></th>"
               "<th>projected speedup<br><span class=\"sub\">weight GEMMs, datasheet rates</span></th>"
               "<th>memory ratio<br><span class=\"sub\">total peak</span></th><th>skipped steps</th>"
               "<th>underflow / overflow</th></tr></thead>\n<tbody>\n",
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
        fprintf(f, "</span></td><td class=\"num\">%d</td>", arm->nruns);
        const amp_ab_summary *m = lm ? &arm->test_loss : &arm->test_acc;
        fprintf(f, "<td class=\"num\">%.4f", m->mean);
        if (arm->nruns > 1) fprintf(f, " &plusmn; %.4f", m->sd);
        if (lm) fprintf(f, "<br><span class=\"sub\">ppl %.3f</span>", exp(m->mean));
        fputs("</td>", f);
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
        fprintf(f, "<td class=\"num\">%.4f</td><td class=\"num\">%.2f / %.2f ms</td>",
                arm->final_loss.mean, arm->median_ms.mean, arm->cpu_ms.mean);
        speed_cell(f, st, &c.speed, a == 0, emulated);
        projected_cell(f, st, a);
        fprintf(f,
                "<td class=\"num%s\">%.2f&times; <span class=\"sub\">%s</span></td><td class=\"num\">%.1f</td>"
                "<td class=\"num\">%.3g / %.3g</td></tr>\n",
                a && c.mem_ratio < 0.95 ? " good" : a && c.mem_ratio > 1.05 ? " bad" : "", c.mem_ratio, mem,
                arm->skipped.mean, arm->underflow.mean, arm->overflow.mean);
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
               "Skipped steps, underflow and overflow are means per run; underflow and overflow count "
               "values flushed to zero or rounded to inf when stored in 16 bits.%s</p>\n",
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


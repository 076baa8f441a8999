/* The summary table `amptrain ab` prints when it is done: one row per arm,
 * each compared with the baseline (the first arm). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/ab_formats.h"
#include "ab/ab_project.h"
#include "ab/ab_recommend.h"

static void fmt_pm(char *buf, size_t cap, const amp_ab_summary *s) {
    if (s->n >= 2)
        snprintf(buf, cap, "%.4f ± %.4f", s->mean, s->sd);
    else
        snprintf(buf, cap, "%.4f", s->mean);
}

/* Display width of UTF-8 text (± and Δ are one column each). */
static int cols(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void cell(FILE *f, const char *s, int width, int right) {
    int pad = width - cols(s);
    if (pad < 0) pad = 0;
    if (right) fprintf(f, "%*s%s  ", pad, "", s);
    else fprintf(f, "%s%*s  ", s, pad, "");
}

enum { NCOL = 16 };

/* The speed verdict in words: never "yes" when the timing cannot carry it. */
static const char *speed_word(const amp_ab_study *st, const amp_ab_speed *sp) {
    if (!sp->has_ci) return "n/a";
    if (st->timing.disturbed) return "not judged: timing disturbed";
    if (sp->noisy) return "not judged: seeds disagree";
    return sp->significant ? "yes" : "no";
}

void amp_ab_print_table(const amp_ab_study *st, FILE *f) {
    int lm = st->metric == AMP_AB_METRIC_LOSS;
    char h_metric[32], h_delta[64], h_speed[48];
    snprintf(h_metric, sizeof h_metric, "%s", lm ? "val loss" : "test acc");
    snprintf(h_delta, sizeof h_delta, "%s vs baseline [95%% CI]", lm ? "Δloss" : "Δacc");
    snprintf(h_speed, sizeof h_speed, "speedup (%s) [95%% CI]", amp_ab_speed_basis(st));
    const char *head[NCOL] = {"arm",         "seeds",      h_metric,      lm ? "ppl" : "test loss",
                              h_delta,       "interval",   "per-seed Δ",  "signif.",
                              "wall ms",     "CPU ms",     h_speed,       "speed signif.",
                              "projected H100|B200", "memory", "skipped",  "number formats"};
    static const int right[NCOL] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0};
    amp_ab_rec rec;
    amp_ab_recommend(&rec, st);
    amp_ab_recommend_print(&rec, st, f);
    enum { CELL = 160 };
    static char text[64][NCOL][CELL]; /* large: off the stack */
    int any_emulated = 0;
    int nrows = st->narms < 64 ? st->narms : 64;
    int w[NCOL];
    for (int c = 0; c < NCOL; c++) w[c] = cols(head[c]);
    for (int a = 0; a < nrows; a++) {
        const amp_ab_arm *arm = &st->arms[a];
        char(*t)[CELL] = text[a];
        amp_ab_cmp cmp;
        amp_ab_compare(&cmp, st, 0, a);
        char emu[256];
        int emulated = amp_ab_emulated(st, a, emu, sizeof emu);
        any_emulated |= emulated;
        snprintf(t[0], CELL, "%s%s", arm->name, emulated ? " (emulated)" : "");
        snprintf(t[1], CELL, "%d", arm->nruns);
        fmt_pm(t[2], CELL, lm ? &arm->test_loss : &arm->test_acc);
        if (lm) snprintf(t[3], CELL, "%.3f", exp(arm->test_loss.mean));
        else fmt_pm(t[3], CELL, &arm->test_loss);
        if (a == 0) {
            snprintf(t[4], CELL, "(baseline)");
            snprintf(t[5], CELL, "-");
            snprintf(t[6], CELL, "-");
            snprintf(t[7], CELL, "-");
        } else {
            if (!cmp.verdict.has_ci) {
                snprintf(t[4], CELL, "%+.4f [n/a: %d seed%s]", cmp.verdict.diff, cmp.verdict.n,
                         cmp.verdict.n == 1 ? "" : "s");
                snprintf(t[7], CELL, "n/a");
            } else {
                snprintf(t[4], CELL, "%+.4f [%+.4f, %+.4f]", cmp.verdict.diff, cmp.verdict.lo,
                         cmp.verdict.hi);
                snprintf(t[7], CELL, "%s", cmp.verdict.significant ? "yes" : "no");
            }
            amp_ab_interval_name(t[5], CELL, &cmp.verdict);
            amp_ab_seed_deltas_text(t[6], CELL, st, 0, a);
        }
        snprintf(t[8], CELL, "%.2f", arm->median_ms.mean);
        snprintf(t[9], CELL, "%.2f", arm->cpu_ms.mean);
        if (a == 0) {
            snprintf(t[10], CELL, "(baseline)");
            snprintf(t[11], CELL, "-");
        } else {
            if (cmp.speed.has_ci)
                snprintf(t[10], CELL, "%.2fx [%.2f, %.2f]%s", cmp.speed.speedup, cmp.speed.lo,
                         cmp.speed.hi, emulated ? " emulation" : "");
            else
                snprintf(t[10], CELL, "%.2fx%s", cmp.speed.speedup, emulated ? " emulation" : "");
            snprintf(t[11], CELL, "%s", speed_word(st, &cmp.speed));
        }
        double ph = amp_ab_projected(st, a, AMP_AB_GPU_H100), pb = amp_ab_projected(st, a, AMP_AB_GPU_B200);
        char sh[16] = "n/a", sb[16] = "n/a";
        if (isfinite(ph)) snprintf(sh, sizeof sh, "%.2fx", ph);
        if (isfinite(pb)) snprintf(sb, sizeof sb, "%.2fx", pb);
        snprintf(t[12], CELL, "%s|%s", sh, sb);
        snprintf(t[13], CELL, "%.2fx", cmp.mem_ratio);
        snprintf(t[14], CELL, "%.1f", arm->skipped.mean);
        amp_ab_telem tel;
        amp_ab_telemetry(&tel, arm);
        amp_ab_telem_text(t[15], CELL, &tel);
        for (int c = 0; c < NCOL; c++)
            if (cols(t[c]) > w[c]) w[c] = cols(t[c]);
    }
    fputc('\n', f);
    for (int c = 0; c < NCOL; c++) cell(f, head[c], w[c], right[c]);
    fputc('\n', f);
    for (int c = 0; c < NCOL; c++) {
        for (int i = 0; i < w[c]; i++) fputc('-', f);
        fputs("  ", f);
    }
    fputc('\n', f);
    for (int a = 0; a < nrows; a++) {
        for (int c = 0; c < NCOL; c++) cell(f, text[a][c], w[c], right[c]);
        fputc('\n', f);
    }
    fprintf(f,
            "\n%s: mean ± sd over seeds%s. %s: arm - baseline with its %.0f%% interval; "
            "significant when it excludes 0.%s\ninterval: \"paired t\" when the arms ran the "
            "same seeds (a t interval, n - 1 df, on the per-seed differences listed under "
            "per-seed Δ; with one seed there is none), \"Welch\" when their seeds differ.\n",
            lm ? "val loss" : "test acc", lm ? " (ppl = exp of the mean)" : "",
            lm ? "Δloss" : "Δacc", 100 * AMP_AB_LEVEL,
            st->metric_forced ? " (metric chosen by --metric)" : "");
    fprintf(f,
            "speedup (%s): per-seed ratio of the baseline's median %s time per step to the arm's, "
            "geometric mean with a t interval over seeds.\nwall ms, CPU ms: median per step "
            "(CPU = process CPU time, all threads). memory: arm's total peak / baseline's. "
            "skipped: mean per run.\n"
            "number formats: per scaled format (FP8, MXFP8, NVFP4) the values that became 0 "
            "(flushed) and those clamped to the format's max (saturated) per step, summed over "
            "the operands, mean over steps and seeds; 16-bit: the values flushed to zero (under) "
            "or rounded to inf (over) when stored in 16 bits, mean per run.\n",
            amp_ab_speed_basis(st), amp_ab_speed_basis(st));
    fprintf(f, "projected H100|B200: a projection, not a measurement: the baseline's weight-GEMM "
               "time / the arm's at the GPU's published dense peak rate per format (H100 and "
               "H200 alike; FP32 at the TF32 rate), from the model's FLOPs per GEMM format; "
               "n/a where the GPU lacks a format (FP4 and MXFP8 before B200). Non-GEMM work not counted.\n");
    if (any_emulated)
        fprintf(f, "(emulated): this %s lacks the arm's number format, which it rounds to and "
                   "then computes in FP32; its speedup (\"emulation\") is the emulation's, not "
                   "the format's.\n", st->device);
    if (st->timing.disturbed)
        fprintf(f, "timing disturbed: %s; other work on the machine shaped the wall times, so "
                   "no speed difference is called significant%s.\n",
                st->timing.why, st->timing.cpu_basis ? " and the speedup compares CPU time" : "");
}

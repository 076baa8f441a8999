/* The summary table `amptrain ab` prints when it is done: one row per arm,
 * each compared with the baseline (the first arm). */
#include <math.h>
#include <string.h>

#include "ab/ab.h"

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

enum { NCOL = 10 };

void amp_ab_print_table(const amp_ab_study *st, FILE *f) {
    static const char *const head[NCOL] = {"arm",      "seeds",   "test acc",   "Δacc vs baseline [95% CI]",
                                           "signif.",  "step ms", "speedup",    "memory",
                                           "skipped",  "underflow"};
    static const int right[NCOL] = {0, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    char text[64][NCOL][96];
    int nrows = st->narms < 64 ? st->narms : 64;
    int w[NCOL];
    for (int c = 0; c < NCOL; c++) w[c] = cols(head[c]);
    for (int a = 0; a < nrows; a++) {
        const amp_ab_arm *arm = &st->arms[a];
        char(*t)[96] = text[a];
        amp_ab_cmp cmp;
        amp_ab_compare(&cmp, st, 0, a);
        snprintf(t[0], 96, "%s", arm->name);
        snprintf(t[1], 96, "%d", arm->nruns);
        fmt_pm(t[2], 96, &arm->test_acc);
        if (a == 0) {
            snprintf(t[3], 96, "(baseline)");
            snprintf(t[4], 96, "-");
        } else if (!cmp.test_acc.has_ci) {
            snprintf(t[3], 96, "%+.4f [n/a: 1 seed]", cmp.test_acc.diff);
            snprintf(t[4], 96, "n/a");
        } else {
            snprintf(t[3], 96, "%+.4f [%+.4f, %+.4f]", cmp.test_acc.diff, cmp.test_acc.lo,
                     cmp.test_acc.hi);
            snprintf(t[4], 96, "%s", cmp.test_acc.significant ? "yes" : "no");
        }
        snprintf(t[5], 96, "%.2f", arm->median_ms.mean);
        snprintf(t[6], 96, "%.2fx", cmp.speedup);
        snprintf(t[7], 96, "%.2fx", cmp.mem_ratio);
        snprintf(t[8], 96, "%.1f", arm->skipped.mean);
        snprintf(t[9], 96, "%.3g", arm->underflow.mean);
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
            "\ntest acc: mean ± sd over seeds. Δacc: arm - baseline, Welch %.0f%% interval; "
            "significant when it excludes 0.\nspeedup: baseline median step time / arm's. "
            "memory: arm's total peak memory / baseline's. skipped, underflow: mean per run.\n",
            100 * AMP_AB_LEVEL);
}

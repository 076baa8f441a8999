/* Each arm's peak memory split by category (summary.json's
 * memory_peak_bytes, mean over seeds), with the change from the baseline,
 * so a reader sees where a format saves: activations, workspace, working
 * weights. The parts are every category but `total` (their sum) and
 * `device_used` (what the GPU reported in use, not an arena); the tables
 * say so where the parts do not add up to the total. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ab/ab_html.h"
#include "ab/ab_memory.h"

/* 1 for a category that is one of total's parts */
static int is_part(const char *name) {
    return strcmp(name, "total") != 0 && strcmp(name, "device_used") != 0;
}

/* The categories shown, total last: those nonzero in some arm. */
static int shown(const amp_ab_study *st, int *cat) {
    int n = 0, t = amp_ab_mem_total(st);
    for (int m = 0; m < st->nmem; m++) {
        if (m == t) continue;
        for (int a = 0; a < st->narms; a++)
            if (st->arms[a].mem[m].mean > 0) {
                cat[n++] = m;
                break;
            }
    }
    if (t >= 0) cat[n++] = t;
    return n;
}

/* The parts' sum of arm a (NAN when no category is a part). */
static double parts_sum(const amp_ab_study *st, int a) {
    double s = 0;
    int any = 0;
    for (int m = 0; m < st->nmem; m++)
        if (is_part(st->mem_names[m])) s += st->arms[a].mem[m].mean, any = 1;
    return any ? s : NAN;
}

/* "12,345,678": bytes with thousands separators */
static void grouped(char *buf, size_t cap, double v) {
    char d[32];
    snprintf(d, sizeof d, "%.0f", fabs(v));
    size_t n = strlen(d), o = 0;
    if (v < 0 && o + 1 < cap) buf[o++] = '-';
    for (size_t i = 0; i < n && o + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = d[i];
    }
    buf[o] = '\0';
}

/* "+1,234 (+5.0%)": arm - baseline */
static void change(char *buf, size_t cap, double v, double base) {
    char g[40];
    grouped(g, sizeof g, v - base);
    if (base > 0)
        snprintf(buf, cap, "%s%s (%+.1f%%)", v >= base ? "+" : "", g, 100 * (v / base - 1));
    else
        snprintf(buf, cap, "%s%s", v >= base ? "+" : "", g);
}

/* The arms whose parts do not add up to their total, in words ("" when all do). */
static void mismatch(char *buf, size_t cap, const amp_ab_study *st) {
    int t = amp_ab_mem_total(st);
    buf[0] = '\0';
    if (t < 0) return;
    for (int a = 0; a < st->narms; a++) {
        double s = parts_sum(st, a), tot = st->arms[a].mem[t].mean;
        if (isnan(s) || fabs(s - tot) < 0.5) continue;
        char gs[40], gt[40];
        grouped(gs, sizeof gs, s);
        grouped(gt, sizeof gt, tot);
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, "%s%s: the categories add up to %s bytes, the total is %s",
                 used ? "; " : "", st->arms[a].name, gs, gt);
    }
}

void amp_ab_print_memory(const amp_ab_study *st, FILE *f) {
    int cat[AMP_AB_MAX_MEM], nc = shown(st, cat);
    if (nc == 0 || st->narms == 0) return;
    enum { CELL = 64 };
    int w0 = (int)strlen("category"), w[AMP_AB_MAX_ARMS];
    char cell[AMP_AB_MAX_MEM][AMP_AB_MAX_ARMS][CELL];
    for (int a = 0; a < st->narms && a < AMP_AB_MAX_ARMS; a++) w[a] = (int)strlen(st->arms[a].name);
    for (int c = 0; c < nc; c++) {
        int m = cat[c];
        if ((int)strlen(st->mem_names[m]) > w0) w0 = (int)strlen(st->mem_names[m]);
        for (int a = 0; a < st->narms && a < AMP_AB_MAX_ARMS; a++) {
            double v = st->arms[a].mem[m].mean, base = st->arms[0].mem[m].mean;
            char g[40], ch[48];
            grouped(g, sizeof g, v);
            if (a == 0) snprintf(cell[c][a], CELL, "%s", g);
            else {
                change(ch, sizeof ch, v, base);
                snprintf(cell[c][a], CELL, "%s  %s", g, ch);
            }
            if ((int)strlen(cell[c][a]) > w[a]) w[a] = (int)strlen(cell[c][a]);
        }
    }
    fprintf(f, "\nmemory by category (bytes: peak of each allocation, mean over seeds; an arm's "
               "change from the baseline after its bytes):\n");
    fprintf(f, "%-*s", w0, "category");
    for (int a = 0; a < st->narms && a < AMP_AB_MAX_ARMS; a++) fprintf(f, "  %*s", w[a], st->arms[a].name);
    fputc('\n', f);
    for (int c = 0; c < nc; c++) {
        fprintf(f, "%-*s", w0, st->mem_names[cat[c]]);
        for (int a = 0; a < st->narms && a < AMP_AB_MAX_ARMS; a++) fprintf(f, "  %*s", w[a], cell[c][a]);
        fputc('\n', f);
    }
    char bad[1024];
    mismatch(bad, sizeof bad, st);
    if (bad[0]) fprintf(f, "(%s)\n", bad);
    else if (amp_ab_mem_total(st) >= 0) fprintf(f, "(total: the sum of the categories above it)\n");
}

void amp_ab_report_memory(FILE *f, const amp_ab_study *st) {
    int cat[AMP_AB_MAX_MEM], nc = shown(st, cat), t = amp_ab_mem_total(st);
    if (nc == 0) return;
    fputs("<figure class=\"chart\"><figcaption>Peak memory by category<span class=\"sub\"> "
          "bytes per arm, mean over seeds; below an arm's bytes its change from the baseline"
          "</span></figcaption>\n<table class=\"runs\" id=\"memory-categories\"><thead><tr>"
          "<th>category</th>", f);
    for (int a = 0; a < st->narms; a++) {
        fputs("<th>", f);
        amp_ab_html_esc(f, st->arms[a].name);
        fputs("</th>", f);
    }
    fputs("</tr></thead><tbody>\n", f);
    for (int c = 0; c < nc; c++) {
        int m = cat[c];
        fprintf(f, "<tr%s><td>%s</td>", m == t ? " class=\"total\"" : "", st->mem_names[m]);
        for (int a = 0; a < st->narms; a++) {
            double v = st->arms[a].mem[m].mean, base = st->arms[0].mem[m].mean;
            char g[40], h[32], ch[48];
            grouped(g, sizeof g, v);
            amp_ab_fmt_bytes(h, sizeof h, v);
            fprintf(f, "<td class=\"num\" data-bytes=\"%.0f\" title=\"%s\">%s", v, h, g);
            if (a > 0) {
                change(ch, sizeof ch, v, base);
                fprintf(f, "<br><span class=\"sub%s\">%s</span>", v < base ? " good" : v > base ? " bad" : "", ch);
            }
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    char bad[1024];
    mismatch(bad, sizeof bad, st);
    if (bad[0]) {
        fputs("<p class=\"note\">", f);
        amp_ab_html_esc(f, bad);
        fputs(".</p>\n", f);
    } else if (t >= 0) {
        fputs("<p class=\"note\">total: the sum of the categories above it (device_used, where "
              "a GPU reports it, is what the device had in use, not a part).</p>\n", f);
    }
    fputs("</figure>\n", f);
}

/* report.html's per-layer charts: the rounding heat map of every arm and,
 * for arms with scaled operands (FP8, MXFP8, NVFP4), the operands' table,
 * their scales over the steps and their saturated/flushed heat map per
 * format (laid out by ab_report_formats.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/ab_chart.h"
#include "ab/ab_formats.h"
#include "ab/ab_html.h"
#include "ab/ab_report_layers.h"
#include "ab/ab_scan.h"

/* ------------------------------------------------------------ heat map */

void amp_ab_heat_fill(char *buf, size_t cap, double t) {
    if (!(t > 0)) t = 0;
    if (t > 1) t = 1;
    /* pale yellow -> orange -> dark red */
    double r = 255 - t * 120, g = 236 - t * 216, b = 170 - t * 150;
    snprintf(buf, cap, "rgb(%d,%d,%d)", (int)r, (int)g, (int)b);
}

/* Fraction of rounded values lost, coloured on a log scale 1e-8 .. 1. */
static void heat_color(char *buf, size_t cap, double rate) {
    amp_ab_heat_fill(buf, cap, (log10(rate) + 8.0) / 8.0);
}

/* v on a log scale from lo (palest) to hi (darkest); one value: darkest. */
static void range_color(char *buf, size_t cap, double v, double lo, double hi) {
    amp_ab_heat_fill(buf, cap, hi > lo ? log(v / lo) / log(hi / lo) : 1.0);
}

/* Rows of the heat map: one per layer, or, past HEAT_MAX_ROWS layers, one
 * per block: the name up to its first all-digit component ("h.3" for
 * "h.3.attn.c_proj"); names without one stay rows of their own. */
#define HEAT_MAX_ROWS 24

typedef struct heat_row {
    char name[96];
    int layers; /* layers folded into the row */
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
        if (last > k)
            snprintf(acc.name, sizeof acc.name, "%.40s .. %.40s", rows[k].name, rows[last].name);
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

void amp_ab_report_heat(FILE *f, const amp_ab_study *st, int a) {
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
    int cw = 78, ch = 26,
        L = 16 + 7 * (label_chars < 6    ? 6
                      : label_chars > 40 ? 40
                                         : label_chars),
        T = 30;
    int w = L + 4 * cw + 10, h = T + nrows * ch + 12;
    char id[200];
    snprintf(id, sizeof id, "chart-heat-%d", a);
    fputs("<div class=\"heat\"><div class=\"heat-title\"><i style=\"background:", f);
    fputs(amp_ab_html_color(a), f);
    fputs("\"></i>", f);
    amp_ab_html_esc(f, arm->name);
    if (nrows < nl) fprintf(f, " <span class=\"note\">(%d layers in %d blocks)</span>", nl, nrows);
    fputs("</div>\n", f);
    amp_chart_svg_open(f, id, "underflow and overflow rate per layer", w, h);
    for (int c = 0; c < 4; c++)
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                L + c * cw + cw / 2, T - 10, colname[c]);
    for (int k = 0; k < nrows; k++) {
        const heat_row *row = &rows[k];
        fprintf(f, "<text class=\"cat\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 6,
                T + k * ch + ch / 2 + 4);
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
            fprintf(f,
                    " %s: %.0f of %.0f rounded values</title></rect>"
                    "<text class=\"%s\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                    colname[c], row->lost[c], row->rounded[c], tcls, x + cw / 2, y + ch / 2 + 4,
                    txt);
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

/* Operand i (layer, role) of the arm: its saturated (m[0]) and flushed
 * (m[1]) values per step over every step line of every run; returns its
 * format family, -1 when the step lines do not list it at i. */
static int fp8_slot_means(const amp_ab_arm *arm, size_t i, const char *layer, const char *role,
                          double m[2]) {
    size_t steps = 0;
    int fam = -1;
    m[0] = m[1] = 0;
    for (int r = 0; r < arm->nruns; r++) {
        const amp_ab_fp8 *fp = &arm->runs[r].fp8;
        if (i >= (size_t)fp->nslots || strcmp(fp->layer[i], layer) || strcmp(fp->role[i], role))
            continue;
        fam = fp->family[i];
        for (size_t k = 0; k < fp->npts; k++) {
            m[0] += fp->saturated[k * (size_t)fp->nslots + i];
            m[1] += fp->flushed[k * (size_t)fp->nslots + i];
        }
        steps += fp->npts;
    }
    if (!steps) return -1;
    m[0] /= (double)steps;
    m[1] /= (double)steps;
    return fam;
}

/* The first run's last step, one row per (layer, role) its summary.json's
 * "fp8" array has: amax, scale, kept, and the saturated / flushed counts
 * coloured on a log scale relative to the table's largest; for NVFP4
 * operands also the E4M3 block scales' range and the stochastic rounding's
 * mean bias (docs/nvfp4.md). */
void amp_ab_report_fp8(FILE *f, const amp_ab_study *st, int a) {
    const amp_ab_arm *arm = &st->arms[a];
    const amp_jval *ops =
        arm->nruns ? amp_json_get_type(arm->runs[0].summary, "fp8", AMP_JARR) : NULL;
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
          "<th>SR bias</th><th>saturated / step<br><span class=\"sub\">all steps, seeds</span></th>"
          "<th>flushed / step<br><span class=\"sub\">all steps, seeds</span></th></tr>\n",
          f);
    double tot[AMP_AB_NFAM][2] = {{0}};
    int has[AMP_AB_NFAM] = {0};
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
        double lo = jnum(o, "block_scale_min"), hi = jnum(o, "block_scale_max"),
               b = jnum(o, "sr_bias");
        if (isnan(lo) || isnan(hi))
            fputs("<td class=\"muted\">&mdash;</td>", f);
        else
            fprintf(f, "<td>%.4g .. %.4g</td>", lo, hi);
        if (isnan(b))
            fputs("<td class=\"muted\">&mdash;</td>", f);
        else
            fprintf(f, "<td>%+.2e</td>", b);
        double m[2];
        int fam = fp8_slot_means(arm, i, layer ? layer->str : "", role ? role->str : "", m);
        if (fam < 0) {
            fputs("<td class=\"muted\">&mdash;</td><td class=\"muted\">&mdash;</td></tr>\n", f);
            continue;
        }
        has[fam] = 1;
        for (int c = 0; c < 2; c++) tot[fam][c] += m[c];
        fprintf(f, "<td class=\"num per-step\" data-kind=\"saturated\" data-value=\"%.9g\">%.4g</td>"
                   "<td class=\"num per-step\" data-kind=\"flushed\" data-value=\"%.9g\">%.4g</td></tr>\n",
                m[0], m[0], m[1], m[1]);
    }
    for (int fam = 0; fam < AMP_AB_NFAM; fam++)
        if (has[fam])
            fprintf(f, "<tr class=\"total\" data-format=\"%s\" data-saturated=\"%.9g\" "
                       "data-flushed=\"%.9g\"><td colspan=\"10\"><b>%s operands, total</b></td>"
                       "<td class=\"num\"><b>%.4g</b></td><td class=\"num\"><b>%.4g</b></td></tr>\n",
                    amp_ab_family_id(fam), tot[fam][0], tot[fam][1], amp_ab_family_name(fam),
                    tot[fam][0], tot[fam][1]);
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
void amp_ab_report_fp8_scale(FILE *f, const amp_ab_study *st, int a) {
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
        fprintf(f,
                "<p class=\"note\" id=\"fp8-scale-blocks-%d\">block scaling: one E8M0 scale per "
                "block of 32 values, no per-tensor scale to draw</p></div>\n",
                a);
        return;
    }
    fputs("<div class=\"legend\">", f);
    for (int k = 0; k < FP8_NROLES; k++)
        fprintf(f, "<span><i style=\"background:%s\"></i>%s</span>", fp8_role_colors[k],
                fp8_roles[k]);
    fputs("</div>\n", f);
    if (!isfinite(lo)) lo = hi = 0;
    lo = floor(lo) - 1;
    hi = ceil(hi) + 1;
    double last = (double)run->pts[run->npts - 1].step;
    amp_chart_frame fr = {0, last > 0 ? last : 1, lo, hi, 64, 12, 476, 228};
    double xs = amp_chart_nice_range(&fr.x0, &fr.x1, 6);
    fr.x0 = 0;
    double ys = 1;
    while ((hi - lo) / ys > 8) ys *= 2;
    fr.y0 = floor(lo / ys) * ys;
    fr.y1 = ceil(hi / ys) * ys;
    char id[64];
    snprintf(id, sizeof id, "chart-fp8-scale-%d", a);
    amp_chart_svg_open(f, id, "per-tensor FP8 scale of each operand over the steps, log2 axis", 560,
                       290);
    amp_chart_axes(f, &fr, xs, ys, "step", "scale", 1);
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
            double px = amp_chart_x(&fr, (double)run->pts[i].step), py = amp_chart_y(&fr, log2(v));
            if (isnan(prev))
                fprintf(f, "M%.1f %.1f", px, py);
            else
                fprintf(f, " H%.1f V%.1f", px, py);
            prev = v;
        }
        if (!isnan(prev)) fprintf(f, " H%.1f", amp_chart_x(&fr, last));
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
    int role;   /* index into fp8_roles */
    int s0, s1; /* slots folded into the row: s0..s1 of that role, in slot order */
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

/* The slot's role is role k and its format family fam. */
static int fp8_slot_in(const amp_ab_fp8 *fp, int s, int k, int fam) {
    return fp->family[s] == fam && strcmp(fp->role[s], fp8_roles[k]) == 0;
}

static int fp8_rows(fp8_row *rows, const amp_ab_fp8 *fp, int fam) {
    int nrows = 0;
    for (int k = 0; k < FP8_NROLES; k++) {
        int cnt = 0;
        for (int s = 0; s < fp->nslots; s++) cnt += fp8_slot_in(fp, s, k, fam);
        int per = (cnt + FP8_ROLE_ROWS - 1) / FP8_ROLE_ROWS, seen = 0;
        for (int s = 0; s < fp->nslots; s++) {
            if (!fp8_slot_in(fp, s, k, fam)) continue;
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
                snprintf(rw->name, sizeof rw->name, "%.40s .. %.40s", fp->layer[rw->s0],
                         fp->layer[s]);
            seen++;
        }
    }
    return nrows;
}

/* Mean count per step of row rw over points [i0, i1) and the matching runs. */
static double fp8_cell(const amp_ab_arm *arm, const fp8_row *rw, int fam, int kind, size_t i0,
                       size_t i1) {
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
                if (fp8_slot_in(&r0->fp8, s, rw->role, fam)) sum += c[i * (size_t)n + (size_t)s];
    }
    return used && i1 > i0 ? sum / used / (double)(i1 - i0) : 0;
}

/* One arm's heat-map cells of family fam: rows, and per row, kind and span
 * the mean count per step. 0 when the arm has no such operand. */
typedef struct fp8_heat {
    fp8_row *rows;
    double *val; /* [nrows][2][nb] */
    int nrows, nb;
    size_t npts;
} fp8_heat;

static void fp8_heat_free(fp8_heat *h) {
    free(h->rows);
    free(h->val);
}

static int fp8_heat_values(fp8_heat *h, const amp_ab_arm *arm, int fam) {
    memset(h, 0, sizeof *h);
    if (!arm->nruns || arm->runs[0].fp8.nslots == 0 || arm->runs[0].npts == 0) return 0;
    const amp_ab_run *r0 = &arm->runs[0];
    size_t npts = r0->npts;
    for (int r = 1; r < arm->nruns; r++)
        if (fp8_same_slots(&arm->runs[r], r0) && arm->runs[r].npts < npts) npts = arm->runs[r].npts;
    int nb = npts < FP8_BUCKETS ? (int)npts : FP8_BUCKETS;
    h->rows = calloc((size_t)r0->fp8.nslots, sizeof *h->rows);
    h->val = h->rows ? calloc((size_t)r0->fp8.nslots * 2 * (size_t)nb, sizeof *h->val) : NULL;
    if (!h->val) {
        fp8_heat_free(h);
        return 0;
    }
    h->nrows = fp8_rows(h->rows, &r0->fp8, fam);
    h->nb = nb;
    h->npts = npts;
    for (int k = 0; k < h->nrows; k++)
        for (int kind = 0; kind < 2; kind++)
            for (int j = 0; j < nb; j++)
                h->val[((size_t)k * 2 + (size_t)kind) * (size_t)nb + (size_t)j] =
                    fp8_cell(arm, &h->rows[k], fam, kind, npts * (size_t)j / (size_t)nb,
                             npts * (size_t)(j + 1) / (size_t)nb);
    if (h->nrows) return 1;
    fp8_heat_free(h);
    return 0;
}

void amp_ab_report_fp8_range(const amp_ab_study *st, int fam, double lo[2], double hi[2]) {
    lo[0] = lo[1] = INFINITY;
    hi[0] = hi[1] = 0;
    for (int a = 0; a < st->narms; a++) {
        fp8_heat h;
        if (!fp8_heat_values(&h, &st->arms[a], fam)) continue;
        for (int k = 0; k < h.nrows; k++)
            for (int kind = 0; kind < 2; kind++)
                for (int j = 0; j < h.nb; j++) {
                    double v = h.val[((size_t)k * 2 + (size_t)kind) * (size_t)h.nb + (size_t)j];
                    if (v > 0 && v < lo[kind]) lo[kind] = v;
                    if (v > hi[kind]) hi[kind] = v;
                }
        fp8_heat_free(&h);
    }
}

void amp_ab_report_fp8_heat(FILE *f, const amp_ab_study *st, int a, int fam, const double lo[2],
                            const double hi[2]) {
    const amp_ab_arm *arm = &st->arms[a];
    fp8_heat h;
    if (!fp8_heat_values(&h, arm, fam)) return;
    const amp_ab_run *r0 = &arm->runs[0];
    fp8_row *rows = h.rows;
    double *val = h.val;
    int nrows = h.nrows, nb = h.nb;
    size_t npts = h.npts;
    static const char *const kinds[2] = {"saturated", "flushed"};
    int label_chars = 6;
    for (int k = 0; k < nrows; k++) {
        int c = (int)strlen(rows[k].name);
        if (c > label_chars) label_chars = c > 44 ? 44 : c;
    }
    int cw = 9, ch = 12, gap = 26, hh = 16, L = 12 + (int)(6.2 * label_chars), T = 22;
    int roles = 0;
    for (int k = 0; k < nrows; k++) roles += k == 0 || rows[k].role != rows[k - 1].role;
    int w = L + 2 * nb * cw + gap + 10, ht = T + roles * hh + nrows * ch + 30;
    char id[64], what[160], label[128];
    snprintf(what, sizeof what, "%s operands, %d seed%s, %zu steps in %d spans",
             amp_ab_family_name(fam), arm->nruns, arm->nruns == 1 ? "" : "s", npts, nb);
    fp8_title(f, st, a, what);
    snprintf(id, sizeof id, "chart-%s-heat-%d", amp_ab_family_id(fam), a);
    snprintf(label, sizeof label, "%s values saturated and flushed per step, per role and layer",
             amp_ab_family_name(fam));
    amp_chart_svg_open(f, id, label, w, ht);
    for (int kind = 0; kind < 2; kind++)
        fprintf(
            f, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s per step</text>\n",
            L + kind * (nb * cw + gap) + nb * cw / 2, T - 8, kinds[kind]);
    int y = T;
    for (int k = 0; k < nrows; k++) {
        const fp8_row *rw = &rows[k];
        if (k == 0 || rw->role != rows[k - 1].role) {
            fprintf(
                f,
                "<text class=\"cat\" x=\"4\" y=\"%d\" font-weight=\"600\" fill=\"%s\">%s</text>\n",
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
                if (v > 0) range_color(fill, sizeof fill, v, lo[kind], hi[kind]);
                fprintf(f,
                        "<rect class=\"data cell\" data-arm=\"%d\" data-format=\"%s\" "
                        "data-role=\"%s\" data-layer=\"",
                        a, amp_ab_family_id(fam), fp8_roles[rw->role]);
                amp_ab_html_esc(f, rw->name);
                fprintf(
                    f,
                    "\" data-kind=\"%s\" data-step0=\"%lld\" data-step1=\"%lld\" "
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
        fprintf(f,
                "<text class=\"tick\" x=\"%d\" y=\"%d\">%lld</text>"
                "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text>\n",
                x0, y + 14, (long long)r0->pts[0].step, x0 + nb * cw, y + 14,
                (long long)r0->pts[npts - 1].step);
        fprintf(f,
                "<text class=\"axis-title\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
                x0 + nb * cw / 2, y + 26);
    }
    fputs("</svg></div>\n", f);
    fp8_heat_free(&h);
}

/* The colour key: `what` the colours scale, then the grey of `none` (NULL: no such cell). */
void amp_ab_report_heat_key(FILE *f, const char *what, const char *none) {
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

/* SVG charts for report.html: frames, axes with round ticks, legends and
 * paths (ab_chart.h). */
#include <math.h>
#include <stdio.h>

#include "ab/ab_chart.h"
#include "ab/ab_html.h"

double amp_chart_x(const amp_chart_frame *f, double x) {
    return f->L + (x - f->x0) / (f->x1 - f->x0) * f->W;
}
double amp_chart_y(const amp_chart_frame *f, double y) {
    return f->T + f->H - (y - f->y0) / (f->y1 - f->y0) * f->H;
}

double amp_chart_nice_step(double range, int target) {
    if (!(range > 0)) return 1.0;
    double raw = range / target, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1.0 : r < 3.0 ? 2.0 : r < 7.0 ? 5.0 : 10.0) * mag;
}

/* Widens [*lo, *hi] to whole ticks; a flat range gets some room. */
double amp_chart_nice_range(double *lo, double *hi, int target) {
    if (!(*hi > *lo)) {
        double pad = *lo != 0 ? fabs(*lo) * 0.05 : 1.0;
        *lo -= pad;
        *hi += pad;
    }
    double step = amp_chart_nice_step(*hi - *lo, target);
    *lo = floor(*lo / step + 1e-9) * step;
    *hi = ceil(*hi / step - 1e-9) * step;
    return step;
}

void amp_chart_tick_label(char *buf, size_t cap, double v, double step) {
    if (fabs(v) < step * 1e-6) v = 0;
    if (fabs(v) >= 1e5 || (fabs(v) < 1e-3 && v != 0))
        snprintf(buf, cap, "%.2g", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, cap, "%.*f", dec, v);
    }
}

void amp_chart_svg_open(FILE *f, const char *id, const char *label, int w, int h) {
    fprintf(f,
            "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d "
            "%d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
            id, w, h, w, h);
    amp_ab_html_esc(f, label);
    fputs("\">\n", f);
}

/* Grid, ticks and titles. ylog2: y values are log2 and labelled 2^k. */
void amp_chart_axes(FILE *f, const amp_chart_frame *fr, double xstep, double ystep,
                    const char *xtitle, const char *ytitle, int ylog2) {
    char buf[64];
    fprintf(f, "<g class=\"axes\">\n");
    for (double y = fr->y0; y <= fr->y1 + ystep * 1e-6; y += ystep) {
        double py = amp_chart_y(fr, y);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", fr->L,
                fr->L + fr->W, py, py);
        if (ylog2)
            fprintf(f,
                    "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">2<tspan "
                    "dy=\"-5\" font-size=\"9\">%d</tspan></text>\n",
                    fr->L - 6, py + 4, (int)lround(y));
        else {
            amp_chart_tick_label(buf, sizeof buf, y, ystep);
            fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                    fr->L - 6, py + 4, buf);
        }
    }
    if (xstep > 0)
        for (double x = fr->x0; x <= fr->x1 + xstep * 1e-6; x += xstep) {
            double px = amp_chart_x(fr, x);
            amp_chart_tick_label(buf, sizeof buf, x, xstep);
            fprintf(f,
                    "<line class=\"tickmark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                    "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                    px, px, fr->T + fr->H, fr->T + fr->H + 4, px, fr->T + fr->H + 17, buf);
        }
    fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
            fr->L, fr->T, fr->W, fr->H);
    fprintf(f,
            "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            fr->L + fr->W / 2, fr->T + fr->H + 34, xtitle);
    fprintf(f,
            "<text class=\"axis-title\" transform=\"translate(%.1f %.1f) rotate(-90)\" "
            "text-anchor=\"middle\">%s</text>\n</g>\n",
            fr->L - 44, fr->T + fr->H / 2, ytitle);
}

void amp_chart_legend(FILE *f, const amp_ab_study *st) {
    fputs("<div class=\"legend\">", f);
    for (int a = 0; a < st->narms; a++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", amp_ab_html_color(a));
        amp_ab_html_esc(f, st->arms[a].name);
        fputs("</span>", f);
    }
    fputs("</div>\n", f);
}

void amp_chart_figure_open(FILE *f, const char *title, const char *note, const amp_ab_study *st) {
    fprintf(f, "<figure>\n<figcaption><b>%s</b> <span class=\"note\">%s</span></figcaption>\n",
            title, note);
    if (st) amp_chart_legend(f, st);
}

void amp_chart_path_pt(amp_chart_path *p, double x, double y) {
    if (!isfinite(x) || !isfinite(y)) return;
    fprintf(p->f, "%s%.1f %.1f", p->started ? " L" : "M", x, y);
    p->started = 1;
}

/* SVG charts for report.html (ab_chart.c): a frame maps data to pixels,
 * axes draw its grid, ticks and titles. Shared by ab_report.c and
 * ab_report_layers.c. */
#ifndef AMP_AB_CHART_H
#define AMP_AB_CHART_H

#include <stddef.h>
#include <stdio.h>

#include "ab/ab.h"

typedef struct amp_chart_frame {
    double x0, x1, y0, y1; /* data range (log2 values on a log2 axis) */
    double L, T, W, H;     /* plot area in pixels */
} amp_chart_frame;

/* Path points: "M x y L x y ..." into f, skipping non-finite values. */
typedef struct amp_chart_path {
    FILE *f;
    int started;
} amp_chart_path;

double amp_chart_x(const amp_chart_frame *f, double x);
double amp_chart_y(const amp_chart_frame *f, double y);
double amp_chart_nice_step(double range, int target);
double amp_chart_nice_range(double *lo, double *hi, int target);
void amp_chart_tick_label(char *buf, size_t cap, double v, double step);
void amp_chart_svg_open(FILE *f, const char *id, const char *label, int w, int h);
void amp_chart_axes(FILE *f, const amp_chart_frame *fr, double xstep, double ystep,
                    const char *xtitle, const char *ytitle, int ylog2);
void amp_chart_legend(FILE *f, const amp_ab_study *st);
void amp_chart_figure_open(FILE *f, const char *title, const char *note, const amp_ab_study *st);
void amp_chart_path_pt(amp_chart_path *p, double x, double y);

#endif

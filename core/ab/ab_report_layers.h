/* report.html's per-layer charts (ab_report_layers.c). */
#ifndef AMP_AB_REPORT_LAYERS_H
#define AMP_AB_REPORT_LAYERS_H

#include <stddef.h>
#include <stdio.h>

#include "ab/ab.h"

void amp_ab_report_heat(FILE *f, const amp_ab_study *st, int a);
void amp_ab_report_fp8(FILE *f, const amp_ab_study *st, int a);
void amp_ab_report_fp8_scale(FILE *f, const amp_ab_study *st, int a);
/* Arm a's heat map of format family fam (ab_formats.h), coloured on a log
 * scale from lo to hi per kind (saturated, flushed): the family's range
 * over every arm, from amp_ab_report_fp8_range. */
void amp_ab_report_fp8_heat(FILE *f, const amp_ab_study *st, int a, int fam, const double lo[2],
                            const double hi[2]);
void amp_ab_report_fp8_range(const amp_ab_study *st, int fam, double lo[2], double hi[2]);
/* The heat maps' palette: t in [0, 1], palest to darkest. */
void amp_ab_heat_fill(char *buf, size_t cap, double t);
/* The per-format part of the report and the verdict table's telemetry
 * cell (ab_report_formats.c). */
void amp_ab_report_formats(FILE *f, const amp_ab_study *st);
void amp_ab_report_telem_cell(FILE *f, const amp_ab_arm *arm);
void amp_ab_report_heat_key(FILE *f, const char *what, const char *none);

#endif

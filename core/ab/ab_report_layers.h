/* report.html's per-layer charts (ab_report_layers.c). */
#ifndef AMP_AB_REPORT_LAYERS_H
#define AMP_AB_REPORT_LAYERS_H

#include <stdio.h>

#include "ab/ab.h"

void amp_ab_report_heat(FILE *f, const amp_ab_study *st, int a);
void amp_ab_report_fp8(FILE *f, const amp_ab_study *st, int a);
void amp_ab_report_fp8_scale(FILE *f, const amp_ab_study *st, int a);
void amp_ab_report_fp8_heat(FILE *f, const amp_ab_study *st, int a);
void amp_ab_report_heat_key(FILE *f, const char *what, const char *none);

#endif

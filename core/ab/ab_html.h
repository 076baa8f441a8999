/* Pieces of report.html shared by its sections (ab_html.c). */
#ifndef AMP_AB_HTML_H
#define AMP_AB_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "ab/ab.h"

/* The colour of an arm in every chart and table. */
const char *amp_ab_html_color(int arm);
/* s with <, >, & and " escaped. */
void amp_ab_html_esc(FILE *f, const char *s);
/* "1.50 MiB" and the like. */
void amp_ab_fmt_bytes(char *buf, size_t cap, double b);
/* The verdict table (ab_report_verdict.c). */
void amp_ab_report_verdict(FILE *f, const amp_ab_study *st);

#endif

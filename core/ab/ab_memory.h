/* Each arm's peak memory split by category, beside the baseline's
 * (ab_memory.c): the terminal table and report.html's table. */
#ifndef AMP_AB_MEMORY_H
#define AMP_AB_MEMORY_H

#include <stdio.h>

#include "ab/ab.h"

/* The table under the verdict table `amptrain ab` prints. */
void amp_ab_print_memory(const amp_ab_study *st, FILE *f);
/* report.html's table beside the memory chart (id memory-categories). */
void amp_ab_report_memory(FILE *f, const amp_ab_study *st);

#endif

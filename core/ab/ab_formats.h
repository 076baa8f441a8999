/* The scaled number formats an A/B arm's GEMM operands ran in, and the
 * telemetry of each: values flushed to 0 and saturated per step for the
 * scaled formats, underflow / overflow for the 16-bit roundings. The
 * verdict table (terminal and report.html), ab.json and the per-format
 * heat maps all read it from here, so they show the same numbers. */
#ifndef AMP_AB_FORMATS_H
#define AMP_AB_FORMATS_H

#include "ab/ab.h"

/* Per-tensor FP8 (E4M3/E5M2, delayed or current scaling), MXFP8 (FP8
 * elements, an E8M0 scale per block of 32), NVFP4 (FP4 E2M1 elements). */
enum { AMP_AB_FAM_FP8, AMP_AB_FAM_MXFP8, AMP_AB_FAM_NVFP4, AMP_AB_NFAM };

/* The family of an operand from its metrics "format" and "scaling"; -1
 * for an operand in no scaled format ("dtype"). */
int amp_ab_family_of(const char *format, const char *scaling);
const char *amp_ab_family_name(int fam); /* "FP8", "MXFP8", "NVFP4" */
const char *amp_ab_family_id(int fam);   /* "fp8", "mxfp8", "nvfp4": ids, JSON keys */

typedef struct amp_ab_telem {
    int has[AMP_AB_NFAM];   /* the arm has operands of that family */
    /* per step, summed over the family's operands: the mean over every
     * step line of every run */
    double flushed[AMP_AB_NFAM], saturated[AMP_AB_NFAM];
    int rounded16;          /* the arm rounded values into 16 bits */
    double underflow, overflow; /* 16-bit: means per run */
} amp_ab_telem;

void amp_ab_telemetry(amp_ab_telem *t, const amp_ab_arm *arm);
/* The telemetry as one line for the terminal: "NVFP4 1234 flushed, 5
 * saturated /step; 16-bit 0 under, 0 over /run"; "-" when nothing was
 * rounded to a narrower format. */
void amp_ab_telem_text(char *buf, size_t cap, const amp_ab_telem *t);
/* Whether any arm of the study has an operand of that family. */
int amp_ab_study_has_family(const amp_ab_study *st, int fam);

#endif

/* Scaled-format families and their per-arm telemetry (ab_formats.h). */
#include <stdio.h>
#include <string.h>

#include "ab/ab_formats.h"

int amp_ab_family_of(const char *format, const char *scaling) {
    if (strcmp(format, "nvfp4") == 0) return AMP_AB_FAM_NVFP4;
    if (strcmp(format, "e4m3") != 0 && strcmp(format, "e5m2") != 0) return -1;
    return strcmp(scaling, "mx32") == 0 ? AMP_AB_FAM_MXFP8 : AMP_AB_FAM_FP8;
}

const char *amp_ab_family_name(int fam) {
    static const char *const names[AMP_AB_NFAM] = {"FP8", "MXFP8", "NVFP4"};
    return fam >= 0 && fam < AMP_AB_NFAM ? names[fam] : "?";
}

const char *amp_ab_family_id(int fam) {
    static const char *const ids[AMP_AB_NFAM] = {"fp8", "mxfp8", "nvfp4"};
    return fam >= 0 && fam < AMP_AB_NFAM ? ids[fam] : "?";
}

/* Per step over all the runs' step lines together (the runs of an arm log
 * the same steps, so this is also the mean of the runs' means). */
void amp_ab_telemetry(amp_ab_telem *t, const amp_ab_arm *arm) {
    memset(t, 0, sizeof *t);
    size_t steps[AMP_AB_NFAM] = {0};
    for (int r = 0; r < arm->nruns; r++) {
        const amp_ab_fp8 *fp = &arm->runs[r].fp8;
        int has[AMP_AB_NFAM] = {0};
        for (size_t i = 0; i < fp->npts; i++)
            for (int s = 0; s < fp->nslots; s++) {
                int fam = fp->family[s];
                if (fam < 0) continue;
                has[fam] = 1;
                t->flushed[fam] += fp->flushed[i * (size_t)fp->nslots + (size_t)s];
                t->saturated[fam] += fp->saturated[i * (size_t)fp->nslots + (size_t)s];
            }
        for (int fam = 0; fam < AMP_AB_NFAM; fam++) steps[fam] += has[fam] ? fp->npts : 0;
        t->rounded16 |= arm->runs[r].rounded > 0;
    }
    for (int fam = 0; fam < AMP_AB_NFAM; fam++) {
        t->has[fam] = steps[fam] > 0;
        if (!steps[fam]) continue;
        t->flushed[fam] /= (double)steps[fam];
        t->saturated[fam] /= (double)steps[fam];
    }
    t->underflow = arm->underflow.mean;
    t->overflow = arm->overflow.mean;
}

int amp_ab_study_has_family(const amp_ab_study *st, int fam) {
    for (int a = 0; a < st->narms; a++)
        for (int r = 0; r < st->arms[a].nruns; r++) {
            const amp_ab_fp8 *fp = &st->arms[a].runs[r].fp8;
            for (int s = 0; s < fp->nslots; s++)
                if (fp->family[s] == fam && fp->npts) return 1;
        }
    return 0;
}

void amp_ab_telem_text(char *buf, size_t cap, const amp_ab_telem *t) {
    size_t n = 0;
    buf[0] = '\0';
    for (int fam = 0; fam < AMP_AB_NFAM; fam++)
        if (t->has[fam] && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s %.4g flushed, %.4g saturated /step",
                                  n ? "; " : "", amp_ab_family_name(fam), t->flushed[fam],
                                  t->saturated[fam]);
    if (t->rounded16 && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%s16-bit %.3g under, %.3g over /run",
                              n ? "; " : "", t->underflow, t->overflow);
    if (n == 0) snprintf(buf, cap, "-");
}

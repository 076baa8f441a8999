/* Whether an arm's formats ran emulated. A CPU has no FP8 or FP4 arithmetic:
 * the CPU backend rounds the operands to the format and multiplies them in
 * FP32, so FP8, MXFP8 and NVFP4 arms always run emulated there, and their
 * step time is the emulation's, not the format's. FP16 and BF16 GEMMs run
 * natively only where the GEMM library has a 16-bit kernel for the ISA path
 * (AVX512_BF16 for bf16; cpu_gemm.c): each run's summary.json names the path
 * every GEMM shape took, the native ones onednn-bf16 and onednn-f16
 * (cpu_gemm_tune.c); -f32 ones widened, reference-f64 the test GEMM. */
#include <stdio.h>
#include <string.h>

#include "ab/ab_recommend.h"

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Any GEMM of the run took a native 16-bit path. */
static int native_16bit(const amp_ab_run *r) {
    const amp_jval *be = amp_json_get_type(r->summary, "backend", AMP_JOBJ);
    const amp_jval *paths = be ? amp_json_get_type(be, "gemm_paths", AMP_JARR) : NULL;
    for (size_t i = 0; paths && i < paths->n; i++) {
        const amp_jval *p = amp_json_get_type(&paths->items[i], "path", AMP_JSTR);
        if (p && (ends_with(p->str, "-bf16") || ends_with(p->str, "-f16"))) return 1;
    }
    return 0;
}

static const char *run_isa(const amp_ab_run *r) {
    const amp_jval *be = amp_json_get_type(r->summary, "backend", AMP_JOBJ);
    const amp_jval *isa = be ? amp_json_get_type(be, "isa", AMP_JSTR) : NULL;
    return isa ? isa->str : "unknown";
}

int amp_ab_emulated(const amp_ab_study *st, int a, char *buf, size_t cap) {
    const amp_ab_arm *arm = &st->arms[a];
    const char *p = arm->precision;
    if (strcmp(st->device, "cpu") != 0 || arm->nruns < 1) return 0;
    if (strstr(p, "fp8") || strstr(p, "fp4")) {
        snprintf(buf, cap, "%s: this CPU has no %s arithmetic; operands are rounded to the "
                 "format and multiplied in FP32", p, strstr(p, "fp4") ? "FP4" : "FP8");
        return 1;
    }
    if ((strcmp(p, "fp16") == 0 || strcmp(p, "bf16") == 0) && !native_16bit(&arm->runs[0])) {
        snprintf(buf, cap, "%s: no native %s GEMM on this CPU (ISA path %s); operands are "
                 "widened to FP32", p, p, run_isa(&arm->runs[0]));
        return 1;
    }
    return 0;
}

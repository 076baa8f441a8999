/* CPUID dispatch for the CPU backend (see cpu_isa.h). */
#include "backend/cpu_isa.h"
#include "process/env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define AMP_X86 1
#else
#define AMP_X86 0
#endif

const char *const amp_isa_names[AMP_ISA_COUNT + 1] = {"generic", "avx2", "avx512",
                                                      "avx512_bf16", NULL};

const char *amp_isa_name(amp_isa isa) {
    return isa >= 0 && isa < AMP_ISA_COUNT ? amp_isa_names[isa] : "?";
}

typedef struct cpu_features {
    int avx, fma, f16c, avx2, avx512f, avx512bw, avx512vl, avx512dq, avx512_bf16;
    int os_avx, os_avx512; /* the OS saves the YMM / ZMM state (XCR0) */
} cpu_features;

static cpu_features features(void) {
    cpu_features f;
    memset(&f, 0, sizeof f);
#if AMP_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    int osxsave = (c >> 27) & 1;
    f.avx = (c >> 28) & 1;
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    if (osxsave) {
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        f.os_avx = (lo & 0x6u) == 0x6u;
        f.os_avx512 = f.os_avx && (lo & 0xe0u) == 0xe0u;
    }
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = (b >> 5) & 1;
        f.avx512f = (b >> 16) & 1;
        f.avx512dq = (b >> 17) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
        __cpuid_count(7, 1, a, b, c, d);
        f.avx512_bf16 = (a >> 5) & 1;
    }
#endif
    return f;
}

amp_isa amp_isa_detect(void) {
    cpu_features f = features();
    if (!(f.os_avx && f.avx && f.avx2 && f.fma && f.f16c)) return AMP_ISA_GENERIC;
    if (!(f.os_avx512 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) return AMP_ISA_AVX2;
    return f.avx512_bf16 ? AMP_ISA_AVX512_BF16 : AMP_ISA_AVX512;
}

void amp_isa_features(char *out, size_t len) {
    cpu_features f = features();
    snprintf(out, len, "%s%s%s%s%s%s%s%s%s", f.avx2 ? "avx2 " : "", f.fma ? "fma " : "",
             f.f16c ? "f16c " : "", f.avx512f ? "avx512f " : "", f.avx512bw ? "avx512bw " : "",
             f.avx512vl ? "avx512vl " : "", f.avx512dq ? "avx512dq " : "",
             f.avx512_bf16 ? "avx512_bf16 " : "", f.os_avx512 ? "" : "(no OS AVX-512 state) ");
    size_t n = strlen(out);
    if (n && out[n - 1] == ' ') out[n - 1] = '\0';
    if (!out[0]) snprintf(out, len, "none of avx2/fma/f16c/avx512");
}

void amp_isa_cpu_model(char *out, size_t len) {
    snprintf(out, len, "unknown cpu");
#if AMP_X86
    unsigned r[12] = {0}, a, b, c, d;
    char vendor[13] = {0};
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    unsigned sig = 0;
    if (__get_cpuid(1, &a, &b, &c, &d)) sig = a; /* stepping, model, family, extended */
    char brand[49] = {0};
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        memcpy(brand, r, 48);
    }
    snprintf(out, len, "%s sig %08x %s", vendor, sig, brand);
#endif
}

int amp_isa_select(amp_isa *out, char *err, size_t errlen) {
    amp_isa best = amp_isa_detect();
    int want;
    int got = amp_env_choice("AMPTRAIN_ISA", amp_isa_names, &want, err, errlen);
    if (got < 0) return -1;
    if (!got) {
        /* the best path; whether its native bf16 GEMMs run is measured per
         * GEMM shape (cpu_gemm_tune.h): vdpbf16ps ran at half the FMA rate
         * on one AVX512_BF16 CPU and at 1.9x on another */
        *out = best;
        return 0;
    }
    if ((amp_isa)want > best) {
        char feat[160];
        amp_isa_features(feat, sizeof feat);
        snprintf(err, errlen,
                 "AMPTRAIN_ISA=%s: this CPU supports up to '%s' (it has: %s); unset "
                 "AMPTRAIN_ISA or choose a lower path",
                 amp_isa_names[want], amp_isa_name(best), feat);
        return -1;
    }
    *out = (amp_isa)want;
    return 0;
}

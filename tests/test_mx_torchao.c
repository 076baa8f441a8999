/* MXFP8 (core/backend/kernels/mx.h and each CPU path's mx_quantize) against
 * torchao's to_mx (block 32, ScaleCalculationMode.FLOOR), bit for bit, on
 * tests/data/mxfp8_torchao.txt (made by scripts/fp8_reference.py; this test
 * needs no torch): every block's E8M0 scale equals torchao's, and every
 * element equals torchao's, except in blocks with scale byte 0 and a
 * nonzero amax, where mx.h divides by the scale's own 2^-127 and torchao by
 * 2^-126; there the elements must equal the file's spec column (torch's
 * cast of x * 2^127) and differ from torchao's. The test also checks the
 * file reaches the scale rule's edges (zero, NaN, inf, byte 0, saturation),
 * and that mx_dequantize gives back each element times its scale. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_fp8.h"
#include "backend/kernels/mx.h"

#define SHOW_MAX 8
#define MAX_BLOCKS 512

typedef struct mx_row {
    int fmt;
    uint8_t scale, elem[32], spec[32];
    int has_spec;
    uint32_t x[32];
} mx_row;

static unsigned long long bad;

static int parse_bytes(char **p, uint8_t *out, int n) {
    for (int i = 0; i < n; i++) {
        char *end;
        unsigned long v = strtoul(*p, &end, 16);
        if (end == *p || v > 0xff) return -1;
        out[i] = (uint8_t)v;
        *p = end;
    }
    return 0;
}

static int parse_row(char *line, mx_row *r) {
    char fmt[8];
    int used;
    unsigned s;
    if (sscanf(line, "m %7s %x%n", fmt, &s, &used) != 2) return -1;
    r->fmt = strcmp(fmt, "e5m2") == 0 ? AMP_FP8_E5M2 : AMP_FP8_E4M3;
    r->scale = (uint8_t)s;
    char *p = line + used, *end;
    for (int i = 0; i < 32; i++) {
        r->x[i] = (uint32_t)strtoul(p, &end, 16);
        if (end == p) return -1;
        p = end;
    }
    if (parse_bytes(&p, r->elem, 32)) return -1;
    while (*p == ' ') p++;
    r->has_spec = *p != '-';
    if (r->has_spec && parse_bytes(&p, r->spec, 32)) return -1;
    return 0;
}

/* Checks one block's result against the row; returns the elements that
 * differ from torchao's (only allowed where the row has a spec column). */
static void check(const char *who, const mx_row *r, uint8_t scale, const uint8_t *elem, int line) {
    if (scale != r->scale && bad++ < SHOW_MAX)
        fprintf(stderr, "MISMATCH %s line %d: scale 0x%02x, torchao 0x%02x\n", who, line, scale,
                r->scale);
    const uint8_t *want = r->has_spec ? r->spec : r->elem;
    for (int i = 0; i < 32; i++)
        if (elem[i] != want[i] && bad++ < SHOW_MAX)
            fprintf(stderr, "MISMATCH %s line %d element %d (x 0x%08x): 0x%02x, %s 0x%02x\n", who,
                    line, i, r->x[i], elem[i], r->has_spec ? "spec" : "torchao", want[i]);
}

int main(void) {
    const char *path = AMP_TEST_SOURCE_DIR "/tests/data/mxfp8_torchao.txt";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open (regenerate with scripts/fp8_reference.py)\n", path);
        return 1;
    }
    static mx_row rows[MAX_BLOCKS];
    static char line[2048];
    int n = 0, lineno = 0, lines[MAX_BLOCKS];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#') continue;
        if (n == MAX_BLOCKS || parse_row(line, &rows[n])) {
            fprintf(stderr, "%s:%d: not an 'm' line (or more than %d)\n", path, lineno, MAX_BLOCKS);
            return 1;
        }
        lines[n++] = lineno;
    }
    fclose(f);

    unsigned long long zero = 0, nanb = 0, infb = 0, byte0 = 0, spec_diff = 0, satb = 0;
    for (int b = 0; b < n; b++) {
        const mx_row *r = &rows[b];
        float x[32];
        uint8_t elem[32], scale;
        for (int i = 0; i < 32; i++) x[i] = amp_f32_from_bits(r->x[i]);
        amp_mx_quantize_block(elem, &scale, x, 32, r->fmt);
        check("scalar", r, scale, elem, lines[b]);
        for (int isa = 0; isa < AMP_ISA_COUNT; isa++) {
            const amp_cpu_fp8 *k = amp_cpu_fp8_for((amp_isa)isa);
            if (!k || isa > (int)amp_isa_detect()) continue;
            uint8_t e2[32], s2;
            k->mx_quantize(e2, &s2, x, 1, 32, r->fmt);
            check(amp_isa_name((amp_isa)isa), r, s2, e2, lines[b]);
            if (isa == AMP_ISA_GENERIC || s2 == AMP_MX_SCALE_NAN) continue;
            float back[32];
            k->mx_dequantize(back, e2, &s2, 1, 32, r->fmt);
            for (int i = 0; i < 32; i++) {
                double want = (double)amp_fp8_to_float(e2[i], r->fmt) * ldexp(1.0, s2 - 127);
                if (!(back[i] == (float)want || (isnan(back[i]) && isnan(want))) && bad++ < SHOW_MAX)
                    fprintf(stderr, "MISMATCH dequantize line %d element %d: %.9g, want %.9g\n",
                            lines[b], i, (double)back[i], want);
            }
        }
        uint32_t amax = amp_mx_amax_bits(x, 32);
        zero += amax == 0;
        nanb += r->scale == AMP_MX_SCALE_NAN;
        infb += amax == 0x7f800000u;
        byte0 += r->scale == 0;
        int sat = 0;
        for (int i = 0; i < 32; i++) {
            sat |= (r->elem[i] & 0x7fu) == (r->fmt == AMP_FP8_E5M2 ? 0x7bu : 0x7eu);
            spec_diff += r->has_spec && r->spec[i] != r->elem[i];
        }
        satb += sat;
    }
    printf("%d blocks (%llu all zero, %llu NaN, %llu inf, %llu with scale byte 0, %llu reaching "
           "the element max); %llu elements where the spec's 2^-127 differs from torchao's "
           "2^-126; %llu mismatches\n",
           n, zero, nanb, infb, byte0, satb, spec_diff, bad);
    if (n < 200 || zero < 2 || nanb < 2 || infb < 2 || byte0 < 4 || satb < 20 || spec_diff == 0) {
        fprintf(stderr, "%s: covers too little (regenerate with scripts/fp8_reference.py)\n", path);
        return 1;
    }
    return bad ? 1 : 0;
}

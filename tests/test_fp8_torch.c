/* The FP8 casts of core/backend/kernels/fp8.h against PyTorch, bit for bit,
 * on tests/data/fp8_casts.txt (made by scripts/fp8_reference.py; this test
 * needs no torch): for every input there, amp_float_to_e4m3 / _e5m2 give
 * torch's x.clamp(-max, max).to(float8_e4m3fn / float8_e5m2), and so does
 * the scaled quantize at scale 1; every FP8 code decodes to the FP32 bits
 * of torch's .to(torch.float32). The file covers every FP32 exponent, both
 * rounding ties of both formats, subnormals, the saturation boundary, +-0,
 * inf and NaN; the test also checks it holds enough of each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/fp8.h"

#define SHOW_MAX 8

static unsigned long long bad;

static void expect(int ok, const char *what, uint32_t in, unsigned got, unsigned want) {
    if (ok) return;
    if (bad++ < SHOW_MAX)
        fprintf(stderr, "MISMATCH %s: input 0x%08x (%.9g): got 0x%02x, torch 0x%02x\n", what, in,
                (double)amp_f32_from_bits(in), got, want);
}

int main(void) {
    const char *path = AMP_TEST_SOURCE_DIR "/tests/data/fp8_casts.txt";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open (regenerate with scripts/fp8_reference.py)\n", path);
        return 1;
    }
    char line[256];
    unsigned long long casts = 0, decodes = 0, exps_seen = 0, ties = 0, subn = 0, sat = 0, nan = 0;
    unsigned char exp_seen[256] = {0};
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        unsigned x, a, b;
        char fmt[8];
        if (line[0] == '#') continue;
        if (sscanf(line, "c %x %x %x", &x, &a, &b) == 3) {
            float v = amp_f32_from_bits(x);
            uint8_t e4 = amp_float_to_e4m3(v), e5 = amp_float_to_e5m2(v);
            expect(e4 == a, "float->e4m3", x, e4, a);
            expect(e5 == b, "float->e5m2", x, e5, b);
            uint8_t q4 = amp_fp8_quantize_element(v, 1.0f, AMP_FP8_E4M3, NULL);
            uint8_t q5 = amp_fp8_quantize_element(v, 1.0f, AMP_FP8_E5M2, NULL);
            expect(q4 == a, "quantize e4m3 at scale 1", x, q4, a);
            expect(q5 == b, "quantize e5m2 at scale 1", x, q5, b);
            casts++;
            if (!exp_seen[(x >> 23) & 0xff]++) exps_seen++;
            uint32_t m = x & 0x7fffffu;
            ties += (m & 0xfffffu) == 0x80000u || (m & 0x1fffffu) == 0x100000u;
            subn += (a & 0x78u) == 0 && (a & 7u) != 0;
            sat += (a & 0x7fu) == 0x7eu && (x & 0x7fffffffu) > AMP_FP8_E4M3_MAX_BITS;
            nan += (a & 0x7fu) == 0x7fu;
        } else if (sscanf(line, "d %7s %x %x", fmt, &a, &x) == 3) {
            int e5 = strcmp(fmt, "e5m2") == 0;
            uint32_t got = amp_f32_bits(e5 ? amp_e5m2_to_float((uint8_t)a) : amp_e4m3_to_float((uint8_t)a));
            if (got != x && bad++ < SHOW_MAX)
                fprintf(stderr, "MISMATCH %s->float: code 0x%02x: got 0x%08x, torch 0x%08x\n", fmt, a,
                        got, x);
            decodes++;
        } else {
            fprintf(stderr, "%s:%d: not a 'c' or 'd' line\n", path, lineno);
            return 1;
        }
    }
    fclose(f);
    printf("%llu casts (%llu FP32 exponents, %llu on a tie, %llu subnormal e4m3 results, %llu "
           "saturated, %llu NaN), %llu decodes: %llu mismatches\n",
           casts, exps_seen, ties, subn, sat, nan, decodes, bad);
    if (exps_seen != 256 || ties < 1000 || subn < 100 || sat < 100 || nan < 4 || decodes != 512) {
        fprintf(stderr, "%s: covers too little (regenerate with scripts/fp8_reference.py)\n", path);
        return 1;
    }
    return bad ? 1 : 0;
}

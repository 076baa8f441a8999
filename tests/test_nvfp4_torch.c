/* The CPU backend's NVFP4 quantizer against PyTorch's reference written from
 * the format's definition (tests/data/nvfp4_reference.txt, made by
 * scripts/nvfp4_reference.py): for every tensor, the E2M1 codes, the E4M3
 * block scales, the tensor's decode scale and the decoded values bit for bit
 * (1x16 blocks along the rows, and 16x16 tiles); every code, every tie, block
 * maxima over many binades, zeros, -0, an all-zero block, a flushed block,
 * +-inf and NaN; on every instruction-set path this CPU has (AMPTRAIN_ISA
 * per backend: each path has its own NVFP4 kernels). */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "isa_backend.h"

static int next_hex(FILE *f, uint32_t *v) {
    unsigned x;
    if (fscanf(f, "%x", &x) != 1) return -1;
    *v = x;
    return 0;
}

int main(void) {
    const char *path = AMP_TEST_SOURCE_DIR "/tests/data/nvfp4_reference.txt";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    int tensors = 0, failures = 0;
    size_t values = 0;
    for (int isa = AMP_ISA_GENERIC; isa <= (int)amp_isa_detect(); isa++) {
        amp_backend *be = amp_test_backend_on(isa);
        if (!be) return 1;
        rewind(f);
        char word[64];
        while (fscanf(f, "%63s", word) == 1) {
            if (word[0] == '#') { /* the header line */
                int c;
                while ((c = fgetc(f)) != '\n' && c != EOF) {}
                continue;
            }
            char layout[16];
            int R, C;
            uint32_t sdec_bits;
            if (strcmp(word, "t") != 0 || fscanf(f, "%15s %d %d %x", layout, &R, &C, &sdec_bits) != 4) {
                fprintf(stderr, "%s: malformed line after %d tensors\n", path, tensors);
                return 1;
            }
            int tiles = strcmp(layout, "tiles") == 0;
            size_t n = (size_t)R * C, nb = (size_t)(tiles ? (R + 15) / 16 : R) * ((C + 15) / 16);
            float *x = malloc(n * 4), *y = malloc(n * 4), *want_y = malloc(n * 4);
            uint8_t *want_q = malloc(n), *want_s = malloc(nb), *codes = calloc((n + 1) / 2, 1), *sc = malloc(nb);
            uint32_t v = 0;
            int bad_read = 0;
            for (size_t i = 0; i < n; i++) bad_read |= next_hex(f, &v), memcpy(&x[i], &v, 4);
            for (size_t i = 0; i < n; i++) bad_read |= next_hex(f, &v), want_q[i] = (uint8_t)v;
            for (size_t i = 0; i < nb; i++) bad_read |= next_hex(f, &v), want_s[i] = (uint8_t)v;
            for (size_t i = 0; i < n; i++) bad_read |= next_hex(f, &v), memcpy(&want_y[i], &v, 4);
            if (bad_read) {
                fprintf(stderr, "%s: tensor %d is cut short\n", path, tensors);
                return 1;
            }
            amp_nvfp4_desc d = {R, C, tiles ? AMP_NVFP4_TILES : AMP_NVFP4_ROWS, 0, 0, 0, 0};
            float s_dec;
            be->ops->scaled->nvfp4_quantize(be, codes, sc, &s_dec, x, &d, NULL, NULL);
            be->ops->scaled->nvfp4_dequantize(be, y, codes, sc, s_dec, &d);
            int bad = 0;
            uint32_t got_sdec;
            memcpy(&got_sdec, &s_dec, 4);
            if (got_sdec != sdec_bits) {
                fprintf(stderr, "tensor %d (%s %dx%d): S_dec %08x, torch %08x\n", tensors, layout, R, C,
                        got_sdec, sdec_bits);
                bad++;
            }
            for (size_t b = 0; b < nb; b++)
                if (sc[b] != want_s[b] && bad++ < 4)
                    fprintf(stderr, "tensor %d (%s %dx%d): block %zu scale %02x, torch %02x\n", tensors,
                            layout, R, C, b, sc[b], want_s[b]);
            for (size_t i = 0; i < n; i++) {
                uint8_t q = (uint8_t)((codes[i / 2] >> (4 * (i & 1))) & 15u);
                if ((q != want_q[i] || memcmp(&y[i], &want_y[i], 4) != 0) && bad++ < 8)
                    fprintf(stderr, "tensor %d (%s %dx%d): element %zu (x %a): code %x value %a, torch "
                            "%x %a\n", tensors, layout, R, C, i, (double)x[i], q, (double)y[i],
                            want_q[i], (double)want_y[i]);
            }
            failures += bad != 0;
            tensors++;
            values += n;
            free(x), free(y), free(want_y), free(want_q), free(want_s), free(codes), free(sc);
        }
        be->ops->destroy(be);
        printf("path %s: checked\n", amp_isa_name((amp_isa)isa));
    }
    fclose(f);
    if (tensors == 0) {
        fprintf(stderr, "%s: no tensors\n", path);
        return 1;
    }
    if (failures) {
        fprintf(stderr, "%d of %d tensors differ from torch's reference\n", failures, tensors);
        return 1;
    }
    printf("nvfp4 against torch: %d tensors, %zu values (over the paths), bit for bit\n", tensors, values);
    return 0;
}

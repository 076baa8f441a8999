/* What the CUDA backend's nvfp4_gemm hands cuBLASLt's block-scaled FP4
 * GEMM (CUDA_R_4F_E2M1 codes, CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3
 * scales), checked on the CPU against a second formulation of each part:
 *
 *   - the scales: nvfp4.h's amp_nvfp4_tile_scales (the body the CUDA
 *     kernel runs: mx_tiled.h's index, amp_nvfp4_tiled_value) against the
 *     layout written from the cuBLAS documentation ("1D Block Scaling
 *     Factors Layout", blocks of 16 along k; tests/tiled_reference.h): pad
 *     the [rows][ceil(k / 16)] scale array to 128-row x 4-column tiles with
 *     zeros, emit the tiles one after the other (k direction fastest), each
 *     as 32 lines of 16 bytes, line i holding the 4 scale bytes of tile rows
 *     i, i + 32, i + 64, i + 96, written in that order (a running position),
 *     never through an index function. Operands with 1x16 blocks along the
 *     rows (an activation, a 1x16 weight) and a weight's 16x16 tiles (each
 *     tile's byte for its 16 rows, read here as [row / 16][c]); whole tiles,
 *     one scale, rows or scale columns one past a tile, both padded, a
 *     short last block of k, several tiles both ways. Every source byte is
 *     nonzero, so a misplaced scale or padding in a scale's place shows.
 *   - the codes: the CPU backend's nvfp4_quantize of a [rows, k] operand
 *     read the way cuBLASLt reads a K-major CUDA_R_4F_E2M1 matrix with
 *     leading dimension k (row r at byte r * k / 2, two elements per byte,
 *     the first in bits 0..3 as cuda_fp4.h's __nv_fp4x2 stores them),
 *     decoded with an E2M1 table and an E4M3 decode written here, times the
 *     tensor's decode scale: the CPU's nvfp4_dequantize, bit for bit
 *     (every product is exact in FP32 before the one rounding by s_dec).
 *
 * --break: the reference lays each tile out row-major (no interleave of
 * the 32-row groups) and reads the high nibble first, so the run must fail
 * (shows the test can). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/nvfp4.h"
#include "expect.h"
#include "tiled_reference.h"

static int broken;

/* The scale byte of row `row`, block column c of a [rows, cols] operand,
 * read straight from its scale array: [rows][kb] (1x16 rows) or [ceil(rows
 * / 16)][kb] (16x16 tiles, one byte per tile). */
typedef struct nv_src {
    const uint8_t *s;
    size_t kb;
    int tiles;
} nv_src;

static uint8_t nv_at(const void *src, size_t row, size_t c) {
    const nv_src *v = src;
    return v->s[(v->tiles ? row / 16 : row) * v->kb + c];
}

static void check_scales(size_t rows, size_t cols, int tiles) {
    size_t kb = (cols + 15) / 16, ns = (tiles ? (rows + 15) / 16 : rows) * kb;
    uint8_t *s = malloc(ns), *want = malloc((rows + 128) * (kb + 4)), *got;
    for (size_t i = 0; i < ns; i++) s[i] = (uint8_t)(1 + i * 37 % 127); /* 1..127: E4M3 > 0 */
    nv_src src = {s, kb, tiles};
    size_t n = tiled_reference(want, rows, kb, broken, nv_at, &src);
    size_t bytes = amp_mx_tiled_bytes(rows, kb);
    const char *lay = tiles ? "16x16 tiles" : "1x16 rows";
    EXPECT(n == bytes, "%zux%zu %s: amp_mx_tiled_bytes %zu, the documented layout has %zu", rows,
           cols, lay, bytes, n);
    got = malloc(bytes);
    memset(got, 0xee, bytes);
    amp_nvfp4_tile_scales(got, s, rows, cols, tiles ? AMP_NVFP4_TILES : AMP_NVFP4_ROWS);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < bytes && i < n; i++)
        if (got[i] != want[i] && diff++ == 0) first = i;
    EXPECT(diff == 0,
           "%zux%zu %s: %zu of %zu bytes differ (first at %zu: 0x%02x, documented 0x%02x)", rows,
           cols, lay, diff, bytes, first, got[first], want[first]);
    if (diff == 0 && n == bytes)
        printf("ok  scales %4zu x %4zu (%3zu blocks of 16 along k), %s: %6zu bytes (%zu tiles)\n",
               rows, cols, kb, lay, bytes, bytes / AMP_MX_TILE_BYTES);
    free(s), free(want), free(got);
}

/* E2M1 and E4M3 decoded here, not with nvfp4.h's functions. */
static float e2m1(unsigned q) {
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    return q & 8 ? -mag[q & 7] : mag[q & 7];
}
static float e4m3(unsigned s) {
    unsigned e = s >> 3 & 15, m = s & 7;
    return e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + (float)m / 8.0f, (int)e - 7);
}

static void check_codes(amp_backend *be, int rows, int k) {
    size_t n = (size_t)rows * (size_t)k, kb = ((size_t)k + 15) / 16;
    float *x = malloc(n * 4), *deq = malloc(n * 4);
    uint8_t *codes = malloc((n + 1) / 2), *scales = malloc((size_t)rows * kb);
    uint32_t r = 12345;
    for (size_t i = 0; i < n; i++) { /* [-1, 1) with each row's blocks in their own binades */
        r = r * 1664525u + 1013904223u;
        x[i] = ((float)(r >> 8) / 8388608.0f - 1.0f) * ldexpf(1.0f, -(int)((i / 16) % 7));
    }
    amp_nvfp4_desc d = {rows, k, AMP_NVFP4_ROWS, 0, 0, 0, 0};
    float s_dec;
    EXPECT(AMP_SCALED(be, nvfp4_quantize, codes, scales, &s_dec, x, &d, NULL, NULL) == 0,
           "nvfp4_quantize: %s", be->err);
    EXPECT(AMP_SCALED(be, nvfp4_dequantize, deq, codes, scales, s_dec, &d) == 0,
           "nvfp4_dequantize: %s", be->err);
    size_t diff = 0;
    for (int i = 0; i < rows; i++) {
        const uint8_t *row = codes + (size_t)i * (size_t)k / 2; /* leading dimension k */
        for (int j = 0; j < k; j++) {
            unsigned byte = row[j / 2], lo = byte & 15u, hi = byte >> 4;
            unsigned q = (j & 1) == broken ? lo : hi; /* the first element low; --break: high */
            float s = e4m3(scales[(size_t)i * kb + (size_t)j / 16]);
            float v = (e2m1(q) * s) * s_dec, want = deq[(size_t)i * k + j];
            if (memcmp(&v, &want, 4) != 0 && diff++ < 3)
                fprintf(stderr, "  [%d, %d]: read as cuBLASLt does %g, nvfp4_dequantize %g\n", i,
                        j, v, want);
        }
    }
    EXPECT(diff == 0, "codes %dx%d: %zu of %zu elements read K-major (ld %d) differ", rows, k,
           diff, n, k);
    if (diff == 0) printf("ok  codes %d x %d read K-major with leading dimension %d\n", rows, k, k);
    free(x), free(deq), free(codes), free(scales);
}

int main(int argc, char **argv) {
    broken = argc > 1 && strcmp(argv[1], "--break") == 0;
    if (argc > 1 && !broken) {
        fprintf(stderr, "usage: test_nvfp4_tiled [--break]\n");
        return 2;
    }
    static const size_t shapes[][2] = {
        {128, 64},   /* one whole tile */
        {1, 16},     /* one scale, the rest padding */
        {129, 64},   /* a row past the tile */
        {128, 80},   /* a scale column past the tile */
        {100, 48},   /* both short */
        {256, 128},  /* 2 x 2 whole tiles */
        {300, 528},  /* 3 x 9 tiles, both padded */
        {64, 768},   /* a GEMM's k = 768 with m = 64 */
        {1000, 192}, /* rows padded by 24 */
        {40, 70},    /* a short last block of k (6 elements) */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int tiles = 0; tiles < 2; tiles++)
            check_scales(shapes[i][0], shapes[i][1], tiles);
    /* by hand: in a [256][8] scale array (k = 128), row 161 (tile row 1,
     * r = 33), block 6 (tile column 1, j = 2) is in tile 1 * 2 + 1 = 3,
     * line 1, group 1; its 16x16 tile is [10][6] */
    uint8_t s8[256 * 8], t8[16 * 8], got[2048];
    for (int i = 0; i < 256 * 8; i++) s8[i] = (uint8_t)(i % 255 + 1);
    for (int i = 0; i < 16 * 8; i++) t8[i] = (uint8_t)(i + 1);
    amp_nvfp4_tile_scales(got, s8, 256, 128, AMP_NVFP4_ROWS);
    EXPECT(got[3 * 512 + 1 * 16 + 1 * 4 + 2] == s8[161 * 8 + 6],
           "row 161, block 6 of a [256][8] array: 0x%02x, want 0x%02x",
           got[3 * 512 + 1 * 16 + 1 * 4 + 2], s8[161 * 8 + 6]);
    amp_nvfp4_tile_scales(got, t8, 256, 128, AMP_NVFP4_TILES);
    EXPECT(got[3 * 512 + 1 * 16 + 1 * 4 + 2] == t8[10 * 8 + 6],
           "row 161, block 6 of 16x16 tiles [16][8]: 0x%02x, want 0x%02x",
           got[3 * 512 + 1 * 16 + 1 * 4 + 2], t8[10 * 8 + 6]);

    char err[512];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "test_nvfp4_tiled: creating the CPU backend: %s\n", err);
        return 1;
    }
    static const int code_shapes[][2] = {{16, 32}, {48, 256}, {128, 96}, {7, 64}};
    for (size_t i = 0; i < sizeof code_shapes / sizeof code_shapes[0]; i++)
        check_codes(be, code_shapes[i][0], code_shapes[i][1]);
    be->ops->destroy(be);
    if (amp_test_failures) {
        fprintf(stderr, "test_nvfp4_tiled: %d check(s) failed%s\n", amp_test_failures,
                broken ? " (as --break requires)" : "");
        return 1;
    }
    printf("test_nvfp4_tiled: ok\n");
    return 0;
}

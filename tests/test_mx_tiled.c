/* The tiled MX32 scale layout of cuBLASLt's block-scaled GEMM
 * (core/backend/kernels/mx_tiled.h, which the CUDA kernel runs) against the
 * layout written here a second way, from the cuBLAS documentation's
 * description ("1D Block Scaling Factors Layout", tests/tiled_reference.h):
 * pad the [rows][kb] scale array to 128-row x 4-column tiles with zeros,
 * then emit the tiles one after the other (k direction fastest), each as 32
 * lines of 16 bytes, line i holding the 4 scale bytes of tile rows i,
 * i + 32, i + 64, i + 96, written in that order, never through an index
 * function, so the two share no arithmetic.
 *
 * Shapes: whole tiles, a single scale, rows and columns one past a tile,
 * both padded, larger than one tile both ways. Every source byte is nonzero
 * (1..255), so a misplaced scale or a padding byte in a scale's place
 * shows. Also: the index is a bijection onto [0, amp_mx_tiled_bytes), the
 * padding is 0, and one documented position by hand.
 *
 * --break: the reference lays each tile out naively (row-major 128 x 4,
 * no interleave of the 32-row groups), so the run must fail (shows the
 * test can). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/mx_tiled.h"
#include "expect.h"
#include "tiled_reference.h"

static int broken;

/* Row `row`, block column c of the test's [rows][kb] array. */
typedef struct mx_src {
    const uint8_t *s;
    size_t kb;
} mx_src;

static uint8_t mx_at(const void *src, size_t row, size_t c) {
    const mx_src *m = src;
    return m->s[row * m->kb + c];
}

static void check_shape(size_t rows, size_t kb) {
    uint8_t *s = malloc(rows * kb), *want = malloc((rows + 128) * (kb + 4)), *got;
    for (size_t i = 0; i < rows * kb; i++) s[i] = (uint8_t)(1 + i * 37 % 255);
    mx_src src = {s, kb};
    size_t n = tiled_reference(want, rows, kb, broken, mx_at, &src);
    size_t bytes = amp_mx_tiled_bytes(rows, kb);
    EXPECT(n == bytes, "%zux%zu: amp_mx_tiled_bytes %zu, the documented layout has %zu", rows,
           kb, bytes, n);
    EXPECT(bytes % AMP_MX_TILE_BYTES == 0, "%zux%zu: %zu bytes is not whole tiles", rows, kb,
           bytes);
    got = malloc(bytes);
    memset(got, 0xee, bytes);
    amp_mx_tile_scales(got, s, rows, kb);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < bytes && i < n; i++)
        if (got[i] != want[i] && diff++ == 0) first = i;
    EXPECT(diff == 0, "%zux%zu: %zu of %zu bytes differ (first at %zu: 0x%02x, documented 0x%02x)",
           rows, kb, diff, bytes, first, got[first], want[first]);
    /* every padded position has its own byte, and only the padding is 0 */
    uint8_t *hit = calloc(bytes, 1);
    size_t pr = amp_mx_tiled_rows(rows), pc = amp_mx_tiled_cols(kb), twice = 0, out = 0, pad = 0;
    for (size_t r = 0; r < pr; r++)
        for (size_t c = 0; c < pc; c++) {
            size_t i = amp_mx_tiled_index(r, c, kb);
            if (i >= bytes) {
                out++;
                continue;
            }
            twice += hit[i]++ != 0;
            pad += (r >= rows || c >= kb) != (got[i] == 0);
        }
    EXPECT(out == 0 && twice == 0, "%zux%zu: %zu positions outside the array, %zu bytes hit twice",
           rows, kb, out, twice);
    EXPECT(pad == 0, "%zux%zu: %zu bytes are 0 where a scale belongs or a scale in the padding",
           rows, kb, pad);
    if (diff == 0 && n == bytes)
        printf("ok  tiled scales %4zu rows x %3zu blocks: %6zu bytes (%zu tiles)\n", rows, kb,
               bytes, bytes / AMP_MX_TILE_BYTES);
    free(s), free(want), free(got), free(hit);
}

int main(int argc, char **argv) {
    broken = argc > 1 && strcmp(argv[1], "--break") == 0;
    if (argc > 1 && !broken) {
        fprintf(stderr, "usage: test_mx_tiled [--break]\n");
        return 2;
    }
    static const size_t shapes[][2] = {
        {128, 4},   /* one whole tile */
        {1, 1},     /* one scale, the rest padding */
        {129, 4},   /* a row past the tile */
        {128, 5},   /* a column past the tile */
        {100, 3},   /* both short */
        {256, 8},   /* 2 x 2 whole tiles */
        {300, 33},  /* 3 x 9 tiles, both padded */
        {64, 24},   /* a GEMM's k = 768 with m = 64 */
        {1000, 12}, /* rows padded by 24 */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1]);
    /* by hand: in a [256][8] array, row 161 (tile row 1, r = 33), column 6
     * (tile column 1, j = 2) is in tile 1 * 2 + 1 = 3, line 1, group 1 */
    EXPECT(amp_mx_tiled_index(161, 6, 8) == 3 * 512 + 1 * 16 + 1 * 4 + 2,
           "row 161, block 6 of a [256][8] array at %zu", amp_mx_tiled_index(161, 6, 8));
    if (amp_test_failures) {
        fprintf(stderr, "test_mx_tiled: %d check(s) failed%s\n", amp_test_failures,
                broken ? " (as --break requires)" : "");
        return 1;
    }
    printf("test_mx_tiled: ok\n");
    return 0;
}

/* cuBLASLt's tiled layout of block scales ("1D Block Scaling Factors
 * Layout" in the cuBLAS documentation), written out a second way for the
 * tests of core/backend/kernels/mx_tiled.h's index (test_mx_tiled: MX32,
 * test_nvfp4_tiled: NVFP4): pad the [rows][kb] scale array to 128-row x
 * 4-column tiles with zeros, then emit the tiles one after the other (k
 * direction fastest), each as 32 lines of 16 bytes, line i holding the 4
 * scale bytes of tile rows i, i + 32, i + 64, i + 96. The output is written
 * in that order (a running position), never through an index function, so
 * it shares no arithmetic with the header. Header only. */
#ifndef AMP_TESTS_TILED_REFERENCE_H
#define AMP_TESTS_TILED_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

/* The scale byte of (row, c), row < rows and c < kb, from the test's array. */
typedef uint8_t (*tiled_scale_at)(const void *src, size_t row, size_t c);

/* out = the documented layout of [rows][kb] scales; returns its bytes.
 * naive: each tile row-major 128 x 4 instead (no interleave of the 32-row
 * groups), what a test's --break lays out to show it can fail. */
static inline size_t tiled_reference(uint8_t *out, size_t rows, size_t kb, int naive,
                                     tiled_scale_at at, const void *src) {
    size_t row_tiles = (rows + 127) / 128, col_tiles = (kb + 3) / 4, pos = 0;
    for (size_t rt = 0; rt < row_tiles; rt++)
        for (size_t ct = 0; ct < col_tiles; ct++)
            for (size_t line = 0; line < 32; line++)
                for (size_t group = 0; group < 4; group++)
                    for (size_t j = 0; j < 4; j++) {
                        /* the row this byte belongs to (naive: row-major tile) */
                        size_t r = naive ? (line * 16 + group * 4 + j) / 4 : group * 32 + line;
                        size_t jj = naive ? (line * 16 + group * 4 + j) % 4 : j;
                        size_t row = rt * 128 + r, c = ct * 4 + jj;
                        out[pos++] = row < rows && c < kb ? at(src, row, c) : 0;
                    }
    return pos;
}

#endif

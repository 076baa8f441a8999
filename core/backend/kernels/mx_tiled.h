/* The tiled layout of block scale bytes that cuBLASLt's block-scaled GEMM
 * reads (cuBLAS documentation, "1D Block Scaling Factors Layout"), shared
 * by the CUDA kernels that write it (fp8_gemm_cuda.cu) and the CPU tests
 * that check it (see amp_hd.h). The layout counts scale bytes, not
 * elements, so one index serves both block sizes:
 *
 *   MX32 (CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0): E8M0 scales, blocks
 *   of 32 along k, kb = k / 32; the values are amp_mx_tiled_value's.
 *   NVFP4 (CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3): E4M3 scales, blocks
 *   of 16 along k, kb = k / 16; the values are nvfp4.h's
 *   amp_nvfp4_tiled_value (a weight's 16x16 tiles give each of their 16
 *   rows the tile's scale).
 *
 * An operand of the block-scaled GEMM is stored K-major: `rows` rows (the
 * outer dimension, m or n) of k elements, in blocks along k, so kb scale
 * bytes per row. amptrain's scales of such an operand are row-major
 * [rows][kb] (blocks along rows); cuBLASLt wants them in tiles of 128 rows
 * x 4 scale columns (128 rows x 128 elements of k for MX32, x 64 for
 * NVFP4), each tile 512 contiguous bytes:
 *
 *   - the scale array is padded to a whole number of tiles: rows up to a
 *     multiple of 128, kb up to a multiple of 4 (the padding bytes are
 *     written 0; the GEMM does not use them);
 *   - the tiles follow each other with the k direction fastest: tile
 *     (row / 128, c / 4) starts at byte 512 * ((row / 128) * ceil(kb / 4)
 *     + c / 4);
 *   - inside a tile, row r = row % 128 and column j = c % 4 are at byte
 *     (r % 32) * 16 + (r / 32) * 4 + j: 32 lines of 16 bytes, line r % 32
 *     holding the 4 scale bytes of rows r % 32, r % 32 + 32, + 64, + 96.
 *
 * The same arrangement is torchao's `to_blocked` and PyTorch's
 * SWIZZLE_32_4_4 scale layout (for MXFP8 and NVFP4 alike). Indices are
 * size_t: a tiled array can pass 2^31 bytes before its operand does. */
#ifndef AMP_KERNELS_MX_TILED_H
#define AMP_KERNELS_MX_TILED_H

#include <stddef.h>
#include <stdint.h>

#include "backend/kernels/amp_hd.h"

#define AMP_MX_TILE_ROWS 128 /* rows per tile */
#define AMP_MX_TILE_COLS 4   /* scale bytes (blocks along k) per row of a tile */
#define AMP_MX_TILE_BYTES (AMP_MX_TILE_ROWS * AMP_MX_TILE_COLS)

/* Rows and scale columns of the padded array. */
static inline AMP_HD size_t amp_mx_tiled_rows(size_t rows) {
    return (rows + AMP_MX_TILE_ROWS - 1) / AMP_MX_TILE_ROWS * AMP_MX_TILE_ROWS;
}
static inline AMP_HD size_t amp_mx_tiled_cols(size_t kb) {
    return (kb + AMP_MX_TILE_COLS - 1) / AMP_MX_TILE_COLS * AMP_MX_TILE_COLS;
}

/* Bytes of the tiled scales of `rows` rows with kb scale bytes each. */
static inline AMP_HD size_t amp_mx_tiled_bytes(size_t rows, size_t kb) {
    return amp_mx_tiled_rows(rows) * amp_mx_tiled_cols(kb);
}

/* Where the scale of row `row`, block column c lands (row < the padded
 * rows, c < the padded columns of an array with kb columns). */
static inline AMP_HD size_t amp_mx_tiled_index(size_t row, size_t c, size_t kb) {
    size_t tiles_k = amp_mx_tiled_cols(kb) / AMP_MX_TILE_COLS;
    size_t tile = row / AMP_MX_TILE_ROWS * tiles_k + c / AMP_MX_TILE_COLS;
    size_t r = row % AMP_MX_TILE_ROWS;
    return tile * AMP_MX_TILE_BYTES + r % 32 * 16 + r / 32 * 4 + c % AMP_MX_TILE_COLS;
}

/* The byte the tiled array holds for padded position (row, c): scales[row
 * * kb + c] inside the [rows][kb] array, 0 in the padding. */
static inline AMP_HD uint8_t amp_mx_tiled_value(const uint8_t *scales, size_t rows, size_t kb,
                                                size_t row, size_t c) {
    return row < rows && c < kb ? scales[row * kb + c] : (uint8_t)0;
}

/* The whole rearrangement, one position at a time: tiled[amp_mx_tiled_bytes
 * (rows, kb)] from scales [rows][kb]. The CUDA kernel runs the same body
 * with one thread per padded position. */
static inline AMP_HD void amp_mx_tile_scales(uint8_t *tiled, const uint8_t *scales, size_t rows,
                                             size_t kb) {
    size_t pr = amp_mx_tiled_rows(rows), pc = amp_mx_tiled_cols(kb);
    for (size_t row = 0; row < pr; row++)
        for (size_t c = 0; c < pc; c++)
            tiled[amp_mx_tiled_index(row, c, kb)] = amp_mx_tiled_value(scales, rows, kb, row, c);
}

#endif

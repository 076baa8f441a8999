/* cuBLASLt's block-scaled MXFP8 GEMM (fp8_gemm on MX32 operands, sm_100
 * and later) against the CPU's composition, within the stated tolerance
 * of tests/mx_gemm_rows.h (2e-5 * k absolute): the rows whose shape fits
 * must have run on the block-scaled path (the tiled scale layout, the
 * scale modes and the operand order all take part), the short-block row on
 * the emulated one. Skips (77) when no CUDA device is visible and on GPUs
 * older than sm_100, which have no block-scaled tensor cores (there
 * test_gpu_fp8 runs the same rows on the emulated path). */
#include <stdio.h>

#include "mx_gemm_rows.h"

static const amp_gpu_row rows[] = {MX_GEMM_ROWS};

int main(int argc, char **argv) {
    const char *test = "test_gpu_mx_gemm";
    if (argc > 1) {
        fprintf(stderr, "usage: %s (no options)\n", test);
        return 2;
    }
    int gate = rows_block_scaled_gate(test, "MXFP8", "test_gpu_fp8");
    if (gate != 0) return gate;
    mx_gemm_require_path = 1;
    return amp_gpu_rows_main(test, argc, argv, rows, sizeof rows / sizeof rows[0], 3);
}

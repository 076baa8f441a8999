/* cuBLASLt's block-scaled FP4 GEMM (nvfp4_gemm, sm_100 and later) against
 * the CPU's composition, within the tolerance derived in
 * tests/nvfp4_gemm_rows.h (2e-5 * k absolute): the rows whose shape fits
 * must have run on the block-scaled path (the packed codes, the tiled
 * VEC16_UE4M3 scales, the decode scales in alpha and the operand order all
 * take part), the others on the emulated one. Skips (77) when no CUDA
 * device is visible and on GPUs older than sm_100, which have no
 * block-scaled tensor cores (there test_gpu_nvfp4 runs the same rows on
 * the emulated path). */
#include <stdio.h>

#include "nvfp4_gemm_rows.h"

static const amp_gpu_row rows[] = {NV_GEMM_ROWS};

int main(int argc, char **argv) {
    const char *test = "test_gpu_nvfp4_gemm";
    if (argc > 1) {
        fprintf(stderr, "usage: %s (no options)\n", test);
        return 2;
    }
    int gate = rows_block_scaled_gate(test, "FP4", "test_gpu_nvfp4");
    if (gate != 0) return gate;
    nv_gemm_require_path = 1;
    return amp_gpu_rows_main(test, argc, argv, rows, sizeof rows / sizeof rows[0], 3);
}

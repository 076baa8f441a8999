/* CUDA backend: the radix sort of (key, value) int32 pairs that the
 * embedding's backward uses to group rows by token. cub's DeviceRadixSort
 * alone is most of the CUDA build's slowest translation unit, so it lives
 * in one of its own, which compiles beside the others instead of after them. */
#include <stdint.h>

#include <cub/cub.cuh>

#include "backend/cuda/cuda_internal.h"

int amp_cuda_sort_pairs_bytes(amp_backend *be, int n, size_t *bytes) {
    *bytes = 0;
    AMP_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(NULL, *bytes, (const int32_t *)NULL,
                                                   (int32_t *)NULL, (const int32_t *)NULL,
                                                   (int32_t *)NULL, n, 0, 32,
                                                   amp_cuda_im(be)->stream));
    return 0;
}

int amp_cuda_sort_pairs(amp_backend *be, void *tmp, size_t bytes, const int32_t *keys,
                        int32_t *keys_out, const int32_t *vals, int32_t *vals_out, int n) {
    AMP_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(tmp, bytes, keys, keys_out, vals, vals_out, n,
                                                   0, 32, amp_cuda_im(be)->stream));
    AMP_CHECK_LAUNCH(cub::DeviceRadixSort::SortPairs);
    return 0;
}

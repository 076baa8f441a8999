/* Built instead of core/backend/cuda/ when amptrain is compiled without CUDA, so a
 * `device = cuda` request fails with a message rather than a link error. */
#include <stdio.h>

#include "backend/backend.h"

amp_backend *amp_backend_cuda_create(char *err, size_t errlen) {
    snprintf(err, errlen,
             "this amptrain was built without CUDA (no nvcc found at configure time); "
             "rebuild with the CUDA toolkit installed or use [run] device = cpu");
    return NULL;
}

int amp_backend_cuda_available(void) { return 0; }

void *amp_backend_cuda_stream(amp_backend *be) {
    (void)be;
    return NULL;
}

const char *amp_backend_cuda_unavailable_reason(void) {
    return "this amptrain was built without CUDA (no nvcc found at configure time)";
}

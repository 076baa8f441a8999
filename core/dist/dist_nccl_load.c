/* NCCL's transport (dist_nccl.c) is built into the CUDA module, with the
 * CUDA backend, so a process that trains on the CPU maps neither NCCL nor
 * the CUDA runtime; these forward to it. */
#include <stdio.h>

#include "backend/backend.h"
#include "dist/dist_internal.h"

/* The core functions dist_nccl.c calls, kept and exported by every
 * executable as backend_cuda_load.c's table is (core/CMakeLists.txt). */
void *const amp_dist_nccl_host_symbols[] = {
    (void *)amp_dist_bcast,     (void *)amp_dist_fatal,        (void *)dist_esize,
    (void *)dist_piece,         (void *)dist_scatter_bytes,    (void *)dist_gather_bytes,
    (void *)dist_slot_send,     (void *)dist_slot_release,
};

int amp_dist_nccl_open(amp_dist *d, dist_grads *g, char *err, size_t errlen) {
    int (*open)(amp_dist *, dist_grads *, char *, size_t);
    *(void **)&open = amp_cuda_module_symbol("amp_dist_nccl_open", err, errlen);
    return open ? open(d, g, err, errlen) : -1;
}

int amp_dist_nccl_device_count(int *count, char *err, size_t errlen) {
    int (*f)(int *, char *, size_t);
    *(void **)&f = amp_cuda_module_symbol("amp_dist_nccl_device_count", err, errlen);
    return f ? f(count, err, errlen) : -1;
}

int amp_dist_nccl_open_device(int device, unsigned char uuid[16], char *err, size_t errlen) {
    int (*f)(int, unsigned char *, char *, size_t);
    *(void **)&f = amp_cuda_module_symbol("amp_dist_nccl_open_device", err, errlen);
    return f ? f(device, uuid, err, errlen) : -1;
}

int amp_dist_nccl_allsum(dist_grads *g, double *v, size_t n, char *err, size_t errlen) {
    int (*sum)(dist_grads *, double *, size_t, char *, size_t);
    *(void **)&sum = amp_cuda_module_symbol("amp_dist_nccl_allsum", err, errlen);
    return sum ? sum(g, v, n, err, errlen) : -1;
}

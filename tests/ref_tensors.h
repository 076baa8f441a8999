/* Reading a committed PyTorch reference file (safetensors) in a test: every
 * failure ends the test with FAIL and the reason, naming the script that
 * writes the file. */
#ifndef AMP_TEST_REF_TENSORS_H
#define AMP_TEST_REF_TENSORS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

static amp_safetensors *ref_open(const char *path) {
    char err[512];
    amp_safetensors *f = NULL;
    if (amp_safetensors_open(&f, path, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    return f;
}

/* Tensor `name` of f (read from `path`, written by `script`) as FP32 in a
 * new buffer; its element count in *numel when numel is not NULL. */
static float *ref_tensor_of(amp_safetensors *f, const char *path, const char *script,
                            const char *name, size_t *numel) {
    char err[512];
    for (int i = 0; i < amp_safetensors_count(f); i++) {
        if (strcmp(amp_safetensors_name(f, i), name) != 0) continue;
        int ndim;
        const int64_t *shape;
        amp_safetensors_info(f, i, NULL, &ndim, &shape);
        size_t n = 1;
        for (int k = 0; k < ndim; k++) n *= (size_t)shape[k];
        float *p = malloc(n * sizeof(float));
        if (!p || amp_safetensors_get_f32(f, name, ndim, shape, p, err, sizeof err) != 0) {
            fprintf(stderr, "FAIL: reading %s: %s\n", name, err);
            exit(1);
        }
        if (numel) *numel = n;
        return p;
    }
    fprintf(stderr, "FAIL: %s has no tensor %s (rerun %s)\n", path, name, script);
    exit(1);
}

#endif

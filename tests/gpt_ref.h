/* The GPT against a committed PyTorch reference (safetensors written by a
 * script under scripts/): the pieces test_gpt_reference.c,
 * test_gpt_fp8_reference.c and test_gpt_nvfp4_reference.c share. The
 * reference's tensors go into the model by the parameter table's names
 * and shapes; gradients and weights are compared tensor by tensor. Every
 * setup failure ends the test with FAIL and the reason (naming the script
 * that writes the file); a failed comparison is an EXPECT, so one run
 * lists them all.
 *
 * A reference can be perturbed as it is read (gpt_ref.move, the test's
 * --perturb): the named tensor's element of largest magnitude moves by
 * move_by times that magnitude, so a test shows it fails on a reference
 * that is a little off. */
#ifndef AMP_TEST_GPT_REF_H
#define AMP_TEST_GPT_REF_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "expect.h"
#include "io/safetensors.h"
#include "model.h"
#include "ref_tensors.h"
#include "formats/scaled.h"
#include "train/session.h"

typedef struct gpt_ref {
    amp_safetensors *f;
    const char *path, *script; /* the file and the script that writes it */
    const char *move;          /* NULL, or the tensor perturbed as it is read */
    double move_by;
} gpt_ref;

static inline gpt_ref gpt_ref_open(const char *path, const char *script) {
    return (gpt_ref){ref_open(path), path, script, NULL, 0.0};
}

static inline void gpt_ref_close(gpt_ref *r) {
    amp_safetensors_close(r->f);
    r->f = NULL;
}

/* Tensor `name` as FP32 in a new buffer (perturbed when it is r->move). */
static inline float *gpt_ref_tensor(const gpt_ref *r, const char *name, size_t *numel) {
    size_t n = 0;
    float *t = ref_tensor_of(r->f, r->path, r->script, name, &n);
    if (r->move && strcmp(name, r->move) == 0) {
        size_t at = 0;
        for (size_t j = 1; j < n; j++)
            if (fabsf(t[j]) > fabsf(t[at])) at = j;
        t[at] += (float)(r->move_by * fabs((double)t[at]));
        printf("perturbed: %s[%zu] moved by %g of its largest magnitude\n", name, at, r->move_by);
    }
    if (numel) *numel = n;
    return t;
}

/* The layer index of `name` (the test's setup is wrong without it). */
static inline int gpt_ref_layer(const amp_model *m, const char *name) {
    for (int l = 0; l < m->desc.nlayers; l++)
        if (strcmp(m->desc.layers[l].name, name) == 0) return l;
    fprintf(stderr, "FAIL: the GPT has no layer %s\n", name);
    exit(1);
}

/* The reference's "<prefix><name>" tensors into dst (the parameter table's
 * layout: m->master for the weights); every tensor of the table must be
 * there with its shape. */
static inline void gpt_ref_load_params(amp_model *m, const gpt_ref *r, const char *prefix,
                                       float *dst) {
    char err[512];
    for (int i = 0; i < m->desc.nparam_tensors; i++) {
        const amp_param_desc *P = &m->desc.params[i];
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, P->name);
        if (amp_safetensors_get_f32(r->f, name, P->ndim, P->shape, dst + P->offset, err,
                                    sizeof err) != 0) {
            fprintf(stderr, "FAIL: %s\n", err);
            exit(1);
        }
    }
}

/* The batch ref.x, ref.y (n token ids each, stored as exact F32). */
static inline void gpt_ref_load_batch(amp_model *m, const gpt_ref *r, int n) {
    float *x = gpt_ref_tensor(r, "ref.x", NULL), *y = gpt_ref_tensor(r, "ref.y", NULL);
    int32_t *mx = m->x;
    for (int i = 0; i < n; i++) {
        mx[i] = (int32_t)x[i];
        m->y[i] = (int32_t)y[i];
    }
    free(x);
    free(y);
}

/* Forward (and backward) of `rows` sequences of T tokens at loss scale
 * `scale`, the working weights cast first; returns the mean loss. */
static inline double gpt_ref_step(amp_model *m, int rows, int T, float scale, int backward) {
    amp_backend *be = m->be;
    amp_forward_args fa = {rows, backward, scale / (float)(rows * T)};
    amp_backward_args ba = {rows, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) ||
        (backward && m->ops->backward(m, &ba))) {
        fprintf(stderr, "FAIL: gpt step: %s\n", be->err);
        exit(1);
    }
    return m->stats->loss_sum / (double)(rows * T);
}

/* Optimizer step `step` (from 0) on m's gradients with the scripts'
 * optimizer (gpt_reference.py: AdamW, lr 1e-3, betas 0.9/0.99, eps 1e-8,
 * weight decay 0.1, on the 2-D tensors only as the model groups them),
 * then the end of the step for the scaled operands, if any (alone: no
 * ranks to reduce their stats across). */
static inline void gpt_ref_update(amp_model *m, int step) {
    char err[1024];
    amp_settings st;
    memset(&st, 0, sizeof st);
    st.optim = AMP_OPTIM_ADAMW;
    st.beta1 = 0.9;
    st.beta2 = 0.99;
    st.eps = 1e-8;
    st.weight_decay = 0.1;
    if (amp_model_optimizer_step(m, &st, 1e-3, step + 1) != 0) {
        fprintf(stderr, "FAIL: optimizer: %s\n", m->be->err);
        exit(1);
    }
    if (m->scaled && amp_scaled_step_end(m->scaled, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: the scaled operands' step end: %s\n", err);
        exit(1);
    }
}

/* Besides the largest difference, how many of a tensor's elements must lie
 * close: at least `share` of them within `near` * max |ref|. */
typedef struct gpt_ref_near {
    double near, share;
    double least; /* out: the smallest share seen */
} gpt_ref_near;

/* Each tensor of `values` (the parameter table's layout) divided by
 * `unscale` against the reference's "<prefix><name>":
 * max |ours - ref| <= tol * max |ref|, and when `nr` is not NULL the share
 * of its elements within nr->near * max |ref| at least nr->share (the
 * smallest share into nr->least). Returns the worst ratio. */
static inline double gpt_ref_compare_near(amp_model *m, const gpt_ref *r, const char *prefix,
                                          const float *values, float unscale, double tol,
                                          gpt_ref_near *nr) {
    const amp_model_desc *d = &m->desc;
    double worst = 0.0;
    if (nr) nr->least = 1.0;
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, P->name);
        size_t n = 0;
        float *t = gpt_ref_tensor(r, name, &n);
        EXPECT(n == P->numel, "%s: %zu elements, the model has %zu", name, n, P->numel);
        size_t len = n < P->numel ? n : P->numel, close = 0;
        double mx = 0.0, diff = 0.0;
        for (size_t j = 0; j < len; j++) mx = fmax(mx, fabs(t[j]));
        for (size_t j = 0; j < len; j++) {
            double dj = fabs(values[P->offset + j] / unscale - t[j]);
            diff = fmax(diff, dj);
            close += nr && dj <= nr->near * mx;
        }
        double rel = mx > 0 ? diff / mx : diff;
        worst = fmax(worst, rel);
        EXPECT(mx > 0, "%s is all zeros in the reference", name);
        EXPECT(rel <= tol, "%s: max |amptrain - torch| = %.3g, %.3g of max |torch| %.3g (limit %g)",
               name, diff, rel, mx, tol);
        if (nr && len) {
            double share = (double)close / (double)len;
            nr->least = fmin(nr->least, share);
            EXPECT(share >= nr->share, "%s: %.3g of the elements within %g of max |torch| "
                   "(%zu of %zu; at least %g wanted)", name, share, nr->near, close, len,
                   nr->share);
        }
        free(t);
    }
    return worst;
}

static inline double gpt_ref_compare(amp_model *m, const gpt_ref *r, const char *prefix,
                                     const float *values, float unscale, double tol) {
    return gpt_ref_compare_near(m, r, prefix, values, unscale, tol, NULL);
}

/* ||w - w_ref|| / ||w_ref - w_start|| per tensor (w_ref: "<final><name>",
 * w_start: "<start><name>", the weights the step started from): how far
 * the step's result is from torch's, against how far torch's step moved
 * it. Returns the worst. */
static inline double gpt_ref_compare_moved(amp_model *m, const gpt_ref *r, const char *final,
                                           const char *start, const float *w, double tol) {
    const amp_model_desc *d = &m->desc;
    double worst = 0.0;
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        char name[160], from[160];
        snprintf(name, sizeof name, "%s%s", final, P->name);
        snprintf(from, sizeof from, "%s%s", start, P->name);
        size_t n = 0, n0 = 0;
        float *t = gpt_ref_tensor(r, name, &n), *t0 = gpt_ref_tensor(r, from, &n0);
        EXPECT(n == P->numel && n0 == P->numel, "%s: %zu elements, the model has %zu", name, n,
               P->numel);
        double err2 = 0.0, moved2 = 0.0;
        for (size_t j = 0; j < n && j < n0 && j < P->numel; j++) {
            err2 += (w[P->offset + j] - (double)t[j]) * (w[P->offset + j] - (double)t[j]);
            moved2 += ((double)t[j] - t0[j]) * ((double)t[j] - t0[j]);
        }
        double rel = sqrt(err2 / moved2);
        worst = fmax(worst, rel);
        EXPECT(moved2 > 0 && rel <= tol,
               "%s: ||amptrain - torch|| = %.3g of how far torch's step moved it %.3g (limit %g)",
               name, rel, sqrt(moved2), tol);
        free(t);
        free(t0);
    }
    return worst;
}

#endif

/* The CNN model against PyTorch (tests/data/cnn_reference.safetensors, made
 * by scripts/cnn_reference.py in float64 from FP32 inputs): the layers
 * string from the file's metadata, the initial weights and buffers loaded
 * by name, then
 *   - the first batch's logits, loss and every parameter gradient,
 *   - 5 SGD steps (lr 0.1, momentum 0.9, weight decay 0.01; the backend's
 *     sgd_step over desc.ntrained, as the session runs it): each step's
 *     loss, the final parameters and the buffers (running mean/var,
 *     num_batches_tracked), and the logits in evaluation mode after them.
 * Under FP32 on the CPU backend, and under FP16 and BF16 autocast-style
 * precision (conv/linear inputs and weights in 16 bits, batch norm in
 * FP32), each with its tolerance stated below. With `--device cuda` (the
 * gpu test) the same checks run on the CUDA backend (77 without a GPU).
 *
 * Comparison: |got - ref| <= tol * (|ref| + 0.01 * max|ref| over the tensor)
 * element by element: relative, with a floor of 1% of the tensor's scale so
 * that near-zero elements of a tensor are held to that tensor's size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cnn.h"
#include "expect.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "model.h"

#define REF AMP_TEST_SOURCE_DIR "/tests/data/cnn_reference.safetensors"
#define STEPS 5

static amp_safetensors *st;
static char err[2048];

static void die(const char *what) {
    fprintf(stderr, "FAIL: %s: %s\n", what, err);
    exit(1);
}

/* Tensor `name` as floats (shape from the file). */
static float *ref(const char *name, size_t *count) {
    int idx = -1;
    for (int i = 0; i < amp_safetensors_count(st); i++)
        if (strcmp(amp_safetensors_name(st, i), name) == 0) idx = i;
    if (idx < 0) {
        snprintf(err, sizeof err, "%s has no tensor '%s'", REF, name);
        die("reference");
    }
    int nd;
    const int64_t *shape;
    amp_safetensors_info(st, idx, NULL, &nd, &shape);
    size_t n = 1;
    for (int k = 0; k < nd; k++) n *= (size_t)shape[k];
    float *p = malloc(n * sizeof(float) + 4);
    if (!p || amp_safetensors_get_f32(st, name, nd, shape, p, err, sizeof err) != 0) die(name);
    if (count) *count = n;
    return p;
}

static double worst_seen;

/* FP32 (elementwise): |got - want| <= tol * (|want| + 0.01 * max|want| + floor)
 * for every element: relative, with 1% of the tensor's scale as a floor for
 * its near-zero elements, and `floor` for tensors that are zero in exact
 * arithmetic (a conv bias before batch norm: its gradient is 0).
 * 16-bit (scaled): max|got - want| <= tol * (max|want| + floor): the error
 * against the tensor's scale, since a 16-bit rounding error is relative to
 * the magnitudes that were rounded, not to what survives cancellation.
 * Both measures are printed. */
static void compare(const char *label, const char *what, const float *got, const float *want,
                    size_t n, double tol, int scaled, double floor) {
    double scale = 0.0, worst = 0.0, maxerr = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs(want[i]) > scale) scale = fabs(want[i]);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        double lim = scaled ? scale + floor : fabs(want[i]) + 0.01 * scale + floor;
        double r = lim > 0 ? e / lim : e;
        if (r > worst) worst = r;
        if (e > maxerr || e != e) maxerr = e;
        if (!(e <= tol * lim)) {
            if (bad++ < 3)
                fprintf(stderr, "  %s %s[%zu]: got %.9g, PyTorch %.9g\n", label, what, i, got[i],
                        want[i]);
        }
    }
    EXPECT(bad == 0, "%s %s: %d of %zu elements beyond the %.1e bound", label, what, bad, n, tol);
    if (worst > worst_seen) worst_seen = worst;
    printf("  %-34s n=%-5zu %s %.2e (tol %.0e)  max|err|/max|ref| %.2e%s\n", what, n,
           scaled ? "scaled" : "rel   ", worst, tol, scale > 0 ? maxerr / scale : maxerr,
           bad ? "  FAIL" : "");
}

typedef struct mode {
    const char *label;
    amp_dtype dt;
    /* tolerances: first forward/backward, the 5-step trajectory */
    double tol_loss, tol_logits, tol_grad, tol_steps;
} mode;

static void run(amp_backend *be, const mode *md, const char *layers) {
    printf("%s on %s:\n", md->label, be->ops->name);
    worst_seen = 0.0;
    amp_config *cfg = amp_config_new_empty("test_cnn_reference");
    char set[512];
    snprintf(set, sizeof set, "model.layers=%s", layers);
    if (amp_config_set(cfg, set, err, sizeof err) != 0) die("config");
    const amp_model_ops *ops = amp_model_find("cnn");
    amp_model_input in = {6, 3 * 11 * 9, 3, 11, 9, 4, 1, 0};
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, &in, err, sizeof err) != 0) die("describe");
    amp_layer_precision *prec = calloc((size_t)desc.nlayers, sizeof *prec);
    for (int l = 0; l < desc.nlayers; l++) { /* what the fp16/bf16 policies resolve to */
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].compute[AMP_OP_GEMM] = prec[l].compute[AMP_OP_CONV] = md->dt;
        prec[l].compute[AMP_OP_POINTWISE] = md->dt;
        prec[l].activation = prec[l].param = md->dt;
    }
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, &in, 1, cfg, err, sizeof err) != 0) die("create");
    free(prec);
    const amp_model_desc *d = &m->desc;
    EXPECT(d->ntrained < d->nparams, "the buffers must follow the trained parameters");

    /* initial parameters and buffers, by name */
    float *host = calloc(d->nparams, sizeof(float));
    char name[160];
    for (int i = 0; i < d->nparam_tensors; i++) {
        snprintf(name, sizeof name, "init.%s", d->params[i].name);
        size_t n;
        float *v = ref(name, &n);
        EXPECT(n == d->params[i].numel, "%s: %zu elements, the model has %zu", name, n,
               d->params[i].numel);
        memcpy(host + d->params[i].offset, v, d->params[i].numel * sizeof(float));
        free(v);
    }
    if (be->ops->upload(be, m->master, host, d->nparams * sizeof(float))) die("upload");
    size_t xn, yn;
    float *x = ref("x", &xn), *yf = ref("y", &yn);
    size_t rows = 6, feat = 3 * 11 * 9;
    int32_t y[STEPS * 6];
    for (size_t i = 0; i < yn; i++) y[i] = (int32_t)yf[i];
    size_t sb = amp_model_stats_bytes(d->nlayers);
    amp_step_stats *hs = calloc(1, sb);
    float *grads = calloc(d->nparams, sizeof(float)), *logits = calloc(rows * 4, sizeof(float));

    double losses[STEPS];
    for (int s = 0; s < STEPS; s++) {
        if (be->ops->upload(be, m->x, x + (size_t)s * rows * feat, rows * feat * 4) ||
            be->ops->upload(be, m->y, y + (size_t)s * rows, rows * 4) || be->ops->zero(be, m->stats, sb))
            die("upload batch");
        amp_forward_args fa = {6, 1, 1.0f / 6.0f}; /* mean cross-entropy */
        amp_backward_args ba = {6, 0};
        if (m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba)) {
            snprintf(err, sizeof err, "%s", be->err);
            die("step");
        }
        if (be->ops->download(be, hs, m->stats, sb)) die("download stats");
        losses[s] = hs->loss_sum / 6.0;
        if (s == 0) {
            if (amp_cnn_logits(m, logits, 6) || be->ops->download(be, grads, m->grads, d->nparams * 4))
                die("download");
            float *l0 = ref("logits0", NULL), *loss0 = ref("loss0", NULL);
            float got_loss = (float)losses[0];
            int sc = md->dt != AMP_DTYPE_F32;
            compare(md->label, "loss0", &got_loss, loss0, 1, md->tol_loss, 0, 0.0);
            compare(md->label, "logits0", logits, l0, rows * 4, md->tol_logits, sc, 0.0);
            /* the floor: 1% of the largest gradient of the network */
            double gmax = 0.0;
            float *gs[64];
            for (int i = 0; i < d->nparam_tensors && i < 64; i++) {
                if (d->params[i].buffer) continue;
                snprintf(name, sizeof name, "grad0.%s", d->params[i].name);
                gs[i] = ref(name, NULL);
                for (size_t k = 0; k < d->params[i].numel; k++)
                    if (fabs(gs[i][k]) > gmax) gmax = fabs(gs[i][k]);
            }
            for (int i = 0; i < d->nparam_tensors && i < 64; i++) {
                if (d->params[i].buffer) continue;
                snprintf(name, sizeof name, "grad0.%s", d->params[i].name);
                compare(md->label, name, grads + d->params[i].offset, gs[i], d->params[i].numel,
                        md->tol_grad, sc, 1e-2 * gmax);
                free(gs[i]);
            }
            free(l0), free(loss0);
        }
        if (be->ops->optim_step(be, &(amp_optim_step){0, 0.1f, 0.9f, 0.01f, 0.0f, 0.0f, 0.0f, 0},
                                m->master, m->opt[0], NULL, m->grads, d->ntrained))
            die("sgd_step");
    }
    float *want_losses = ref("losses", NULL), got_losses[STEPS];
    for (int s = 0; s < STEPS; s++) got_losses[s] = (float)losses[s];
    int sc = md->dt != AMP_DTYPE_F32;
    compare(md->label, "losses (5 SGD steps)", got_losses, want_losses, STEPS, md->tol_steps, 0, 0.0);
    if (be->ops->download(be, host, m->master, d->nparams * 4)) die("download master");
    for (int i = 0; i < d->nparam_tensors; i++) {
        snprintf(name, sizeof name, "final.%s", d->params[i].name);
        float *v = ref(name, NULL);
        compare(md->label, name, host + d->params[i].offset, v, d->params[i].numel, md->tol_steps, sc,
                0.0);
        free(v);
    }
    /* evaluation mode (running statistics) on batch 0 */
    if (be->ops->upload(be, m->x, x, rows * feat * 4) || be->ops->upload(be, m->y, y, rows * 4) ||
        be->ops->zero(be, m->stats, sb))
        die("upload");
    amp_forward_args fe = {6, 0, 1.0f};
    if (m->ops->cast_weights(m) || m->ops->forward(m, &fe) || amp_cnn_logits(m, logits, 6)) {
        snprintf(err, sizeof err, "%s", be->err);
        die("eval");
    }
    float *el = ref("eval_logits", NULL);
    compare(md->label, "eval_logits (after 5 steps)", logits, el, rows * 4, md->tol_steps, sc, 0.0);
    printf("  worst relative error %.2e\n", worst_seen);
    free(el), free(want_losses), free(host), free(x), free(yf), free(hs), free(grads), free(logits);
    amp_model_free(m);
    amp_config_free(cfg);
}

int main(int argc, char **argv) {
    int cuda = argc > 1 && strcmp(argv[1], "--device") == 0 && argc > 2 && strcmp(argv[2], "cuda") == 0;
    if (cuda && !amp_backend_cuda_available()) {
        printf("no CUDA device (or built without CUDA): skipped\n");
        return 77;
    }
    if (amp_safetensors_open(&st, REF, err, sizeof err) != 0) die("open the reference");
    const char *layers = amp_safetensors_meta(st, "layers");
    if (!layers) {
        snprintf(err, sizeof err, "%s has no 'layers' metadata", REF);
        die("reference");
    }
    amp_backend *be = cuda ? amp_backend_cuda_create(err, sizeof err) : amp_backend_cpu_create(err, sizeof err);
    if (!be) die("backend");
    /* FP32 (elementwise relative): 1e-5 on the loss, 1e-4 on logits,
     * gradients and the 5-step state; measured (torch 1.13 reference):
     * loss 0, logits 4.7e-6, gradients <= 2.7e-6, after 5 steps <= 3.4e-6
     * (with the CPU backend's GEMM path on this machine; other paths sum in
     * other orders).
     * 16-bit (against each tensor's scale): every conv/linear input, weight,
     * activation and activation gradient is rounded to 2^-11 (fp16) or 2^-8
     * (bf16), and batch norm's backward subtracts the gradient's mean and
     * its projection on xhat, which cancels most of it on this 6-image batch
     * and leaves the rounding noise large beside what remains. Measured
     * (scaled): fp16 logits 3.0e-3, gradients <= 2.9e-3, after 5 steps
     * <= 5.6e-3; bf16 logits 1.4e-2, gradients <= 0.22 (conv2.weight), after
     * 5 steps <= 0.34 (bn2.bias). PyTorch's own bf16 autocast on the CPU, measured the same way
     * against the same float64 truth, is off by up to 0.35 (conv2.weight
     * grad) on this network. The bounds are about 2-3x what was measured. */
    const mode modes[] = {
        {"fp32", AMP_DTYPE_F32, 1e-5, 1e-4, 1e-4, 1e-4},
        {"fp16", AMP_DTYPE_F16, 1e-3, 1e-2, 1e-2, 2e-2},
        {"bf16", AMP_DTYPE_BF16, 1e-2, 5e-2, 0.6, 0.75},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) run(be, &modes[i], layers);
    be->ops->destroy(be);
    amp_safetensors_close(st);
    if (amp_test_failures) {
        fprintf(stderr, "%d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("the CNN matches PyTorch\n");
    return 0;
}

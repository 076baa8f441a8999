/* CPU/CUDA parity of CNN training: the configs' network (conv, batch norm,
 * ReLU, max pooling, linear) built on both backends from the same seed,
 * then 20 session-like steps (cast, forward, backward, unscale/check, SGD
 * with momentum; a static loss scale of 1024 under fp16, whose overflowing
 * steps are skipped on both sides alike) over the same 20 synthetic batches,
 * under fp32, fp16 and bf16, with cuDNN's deterministic algorithms and with
 * its default ones. The CPU run is the reference: per-step losses, skipped
 * steps, and the final parameters and BatchNorm buffers are compared with
 * the tolerances written below; a row per dtype and algorithm choice
 * (gpu_rows.h). Label `gpu`; 77 without a device or without cuDNN conv ops.
 * A run takes about a minute on two CPU cores (the CPU side is the slow
 * one); --self-check runs 3 steps, CPU against CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_rows.h"
#include "io/config.h"
#include "model.h"

#define STEPS 20
#define BATCH 32
#define LAYERS "conv(32,3,pad=1) bn relu pool(2) conv(64,3,pad=1) bn relu pool(2) fc(128) relu fc"

typedef struct result {
    double loss[STEPS];
    int skipped;
    float *master;
} result;

static char err[2048];
static int nsteps = STEPS; /* 3 under --self-check */

static amp_model *make(amp_backend *be, amp_dtype dt) {
    amp_config *cfg = amp_config_new_empty("test_gpu_cnn_parity");
    if (amp_config_set(cfg, "model.layers=" LAYERS, err, sizeof err) != 0) return NULL;
    const amp_model_ops *ops = amp_model_find("cnn");
    amp_model_input in = {BATCH, 28 * 28, 1, 28, 28, 10, 1, 0};
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (ops->describe(&desc, cfg, &in, err, sizeof err) != 0) return NULL;
    amp_layer_precision *prec = calloc((size_t)desc.nlayers, sizeof *prec);
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].compute[AMP_OP_GEMM] = prec[l].compute[AMP_OP_CONV] = dt;
        prec[l].compute[AMP_OP_ATTENTION] = prec[l].compute[AMP_OP_POINTWISE] = dt;
        prec[l].activation = prec[l].param = dt;
    }
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, &in, 1, cfg, err, sizeof err) != 0) m = NULL;
    free(prec);
    amp_config_free(cfg);
    return m;
}

static int run(amp_backend *be, amp_dtype dt, result *r) {
    amp_model *m = make(be, dt);
    if (!m || m->ops->init_params(m, 3) != 0) {
        fprintf(stderr, "FAIL: model on %s: %s %s\n", be->ops->name, err, be->err);
        return -1;
    }
    size_t sb = amp_model_stats_bytes(m->desc.nlayers), xn = (size_t)BATCH * 28 * 28;
    amp_step_stats *hs = calloc(1, sb);
    float *x = malloc(xn * sizeof(float));
    int32_t y[BATCH];
    amp_rng rng;
    amp_rng_seed(&rng, 99);
    float scale = dt == AMP_DTYPE_F16 ? 1024.0f : 1.0f;
    r->skipped = 0;
    for (int s = 0; s < nsteps; s++) {
        /* images whose mean depends on the label, so the loss falls */
        for (int i = 0; i < BATCH; i++) {
            y[i] = (int32_t)amp_rng_below(&rng, 10);
            for (int k = 0; k < 28 * 28; k++)
                x[(size_t)i * 784 + k] =
                    (float)amp_rng_normal(&rng) + 0.3f * (float)(y[i] - 4) * (k % 7 == 0);
        }
        amp_forward_args fa = {BATCH, 1, scale / BATCH};
        amp_backward_args ba = {BATCH, 0};
        if (be->ops->upload(be, m->x, x, xn * 4) || be->ops->upload(be, m->y, y, sizeof y) ||
            be->ops->zero(be, m->stats, sb) || m->ops->cast_weights(m) ||
            m->ops->forward(m, &fa) || m->ops->backward(m, &ba) ||
            be->ops->unscale_check(be, m->grads, m->stats, m->desc.ntrained, 1.0f / scale) ||
            be->ops->download(be, hs, m->stats, sb)) {
            fprintf(stderr, "FAIL: step %d on %s: %s\n", s, be->ops->name, be->err);
            return -1;
        }
        r->loss[s] = hs->loss_sum / BATCH;
        if (hs->nonfinite) {
            r->skipped++;
            continue;
        }
        if (be->ops->optim_step(be, &(amp_optim_step){0, 0.05f, 0.9f, 0.0f, 0.0f, 0.0f, 0.0f, 0},
                                m->master, m->opt[0], NULL, m->grads, m->desc.ntrained)) {
            fprintf(stderr, "FAIL: sgd on %s: %s\n", be->ops->name, be->err);
            return -1;
        }
    }
    r->master = malloc(m->desc.nparams * sizeof(float));
    if (be->ops->download(be, r->master, m->master, m->desc.nparams * 4)) return -1;
    free(hs);
    free(x);
    amp_model_free(m);
    return 0;
}

/* One dtype and algorithm choice (shape[0]: deterministic); tol: per-step
 * loss (relative, atol) and final weights (against each tensor's scale, rtol). */
static void parity_row(const amp_gpu_row *row) {
    static amp_model *probe; /* the parameter table, for per-tensor comparisons */
    if (!probe && !(probe = make(rows_cpu, AMP_DTYPE_F32))) amp_op_abort("model: %s", err);
    nsteps = rows_self_check ? 3 : STEPS; /* under --self-check every difference is 0 */
    rows_dev->deterministic = row->shape[0];
    static result rc, rg;
    if (run(rows_cpu, row->dt, &rc) || run(rows_dev, row->dt, &rg)) amp_op_abort("a run failed");
    double worst_loss = 0.0;
    for (int s = 0; s < nsteps; s++) {
        double e = fabs(rg.loss[s] - rc.loss[s]) / fabs(rc.loss[s]);
        if (e > worst_loss) worst_loss = e;
    }
    EXPECT(worst_loss <= row->tol.atol, "%s: per-step loss differs by %.2e relative", row->name,
           worst_loss);
    EXPECT(rg.skipped == rc.skipped, "%s: %d skipped steps on %s, %d on the CPU", row->name,
           rg.skipped, rows_dev->ops->name, rc.skipped);
    double worst_w = 0.0;
    const char *worst_name = "(all equal)";
    for (int i = 0; i < probe->desc.nparam_tensors; i++) {
        const amp_param_desc *P = &probe->desc.params[i];
        double sc = 0.0, e = 0.0;
        for (size_t j = 0; j < P->numel; j++) {
            double c = rc.master[P->offset + j], g = rg.master[P->offset + j];
            if (fabs(c) > sc) sc = fabs(c);
            if (fabs(g - c) > e || g != g) e = fabs(g - c);
        }
        double rel = sc > 0 ? e / sc : e;
        if (!(rel <= worst_w)) worst_w = rel, worst_name = P->name;
    }
    EXPECT(worst_w <= row->tol.rtol, "%s: %s differs by %.2e of its scale after %d steps",
           row->name, worst_name, worst_w, nsteps);
    printf("    %s: loss %.4f -> %.4f (cpu) %.4f (%s), max loss diff %.2e, worst tensor %s %.2e, "
           "skipped %d/%d\n",
           row->name, rc.loss[0], rc.loss[nsteps - 1], rg.loss[nsteps - 1], rows_dev->ops->name,
           worst_loss, worst_name, worst_w, rc.skipped, rg.skipped);
    free(rc.master);
    free(rg.master);
}

/* FP32: cuDNN (FMA math) and im2col+sgemm sum in different orders, ~1e-7
 * per op, grown over 20 steps of a network with batch norm. 16-bit: one
 * rounding of a conv output or gradient can land on the other side of a tie
 * between the two backends and the difference then travels; 20 steps stay
 * within a few units of 2^-11 / 2^-8. (loss, weights) */
#define F32_TOL ((rows_tol){ROWS_TOL, 1e-4, 1e-3})
#define F16_TOL ((rows_tol){ROWS_TOL, 1e-2, 3e-2})
#define BF16_TOL ((rows_tol){ROWS_TOL, 5e-2, 1e-1})
#define MODES(det, how)                                                                         \
    {"cnn fp32 " how, parity_row, {det}, .dt = AMP_DTYPE_F32, .tol = F32_TOL, .needs = "conv"}, \
    {"cnn fp16 " how, parity_row, {det}, .dt = AMP_DTYPE_F16, .tol = F16_TOL, .needs = "conv"}, \
    {"cnn bf16 " how, parity_row, {det}, .dt = AMP_DTYPE_BF16, .tol = BF16_TOL, .needs = "conv"}

static const amp_gpu_row rows[] = {
    MODES(1, "deterministic"),
    MODES(0, "default algorithms"),
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_cnn_parity", argc, argv, rows, sizeof rows / sizeof rows[0],
                             1);
}

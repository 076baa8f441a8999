/* CPU/CUDA parity of CNN training: the configs' network (conv, batch norm,
 * ReLU, max pooling, linear) built on both backends from the same seed,
 * then 20 session-like steps (cast, forward, backward, unscale/check, SGD
 * with momentum; a static loss scale of 1024 under fp16, whose overflowing
 * steps are skipped on both sides alike) over the same 20 synthetic batches,
 * under fp32, fp16 and bf16, with cuDNN's deterministic algorithms and with
 * its default ones. The CPU run is the reference: per-step losses, skipped
 * steps, and the final parameters and BatchNorm buffers are compared with
 * the tolerances written below. Label `gpu`; 77 without a device or without
 * cuDNN conv ops. A run takes about a minute on two CPU cores (the CPU
 * side is the slow one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "expect.h"
#include "io/config.h"
#include "model.h"
#include "rng.h"

#define STEPS 20
#define BATCH 32
#define LAYERS "conv(32,3,pad=1) bn relu pool(2) conv(64,3,pad=1) bn relu pool(2) fc(128) relu fc"

typedef struct result {
    double loss[STEPS];
    int skipped;
    float *master;
} result;

static char err[2048];
static int nsteps = STEPS; /* 3 under the test hook (see main) */

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
                x[(size_t)i * 784 + k] = (float)amp_rng_normal(&rng) + 0.3f * (float)(y[i] - 4) * (k % 7 == 0);
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

int main(void) {
    /* Test hook: AMP_CNN_PARITY_SECOND_DEVICE=cpu runs the "CUDA" side on
     * the CPU too, to exercise this comparison without a GPU (3 steps). */
    const char *second = getenv("AMP_CNN_PARITY_SECOND_DEVICE");
    int fake = second && strcmp(second, "cpu") == 0;
    if (fake) nsteps = 3; /* the comparison is what is exercised; every difference is 0 */
    if (!fake && !amp_backend_cuda_available()) {
        printf("no CUDA device (or built without CUDA): skipped\n");
        return 77;
    }
    amp_backend *cpu = amp_backend_cpu_create(err, sizeof err);
    amp_backend *gpu = !cpu ? NULL : fake ? amp_backend_cpu_create(err, sizeof err)
                                          : amp_backend_cuda_create(err, sizeof err);
    if (!cpu || !gpu) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    if (!amp_backend_supports(gpu, "conv")) {
        printf("the CUDA backend has no conv2d ops (built without cuDNN): skipped\n");
        return 77;
    }
    /* the parameter table, for per-tensor comparisons */
    amp_model *probe = make(cpu, AMP_DTYPE_F32);
    if (!probe) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    const struct {
        const char *label;
        amp_dtype dt;
        double loss_rtol, w_tol; /* per-step loss (relative); weights (against each tensor's scale) */
    } modes[] = {
        /* FP32: cuDNN (FMA math) and im2col+sgemm sum in different orders,
         * ~1e-7 per op, grown over 20 steps of a network with batch norm */
        {"fp32", AMP_DTYPE_F32, 1e-4, 1e-3},
        /* 16-bit: one rounding of a conv output or gradient can land on the
         * other side of a tie between the two backends and the difference
         * then travels; 20 steps stay within a few units of 2^-11 / 2^-8 */
        {"fp16", AMP_DTYPE_F16, 1e-2, 3e-2},
        {"bf16", AMP_DTYPE_BF16, 5e-2, 1e-1},
    };
    for (int det = 1; det >= 0; det--) {
        gpu->deterministic = det;
        for (int k = 0; k < 3; k++) {
            result rc, rg;
            if (run(cpu, modes[k].dt, &rc) || run(gpu, modes[k].dt, &rg)) return 1;
            const char *how = det ? "deterministic" : "default algorithms";
            double worst_loss = 0.0;
            for (int s = 0; s < nsteps; s++) {
                double e = fabs(rg.loss[s] - rc.loss[s]) / fabs(rc.loss[s]);
                if (e > worst_loss) worst_loss = e;
            }
            EXPECT(worst_loss <= modes[k].loss_rtol, "%s (%s): per-step loss differs by %.2e relative",
                   modes[k].label, how, worst_loss);
            EXPECT(rg.skipped == rc.skipped, "%s (%s): %d skipped steps on CUDA, %d on the CPU",
                   modes[k].label, how, rg.skipped, rc.skipped);
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
            EXPECT(worst_w <= modes[k].w_tol, "%s (%s): %s differs by %.2e of its scale after %d steps",
                   modes[k].label, how, worst_name, worst_w, nsteps);
            printf("%-5s %-19s loss %.4f -> %.4f (cpu) %.4f (cuda), max loss diff %.2e, "
                   "worst tensor %s %.2e, skipped %d/%d\n",
                   modes[k].label, how, rc.loss[0], rc.loss[nsteps - 1], rg.loss[nsteps - 1],
                   worst_loss, worst_name, worst_w, rc.skipped, rg.skipped);
            free(rc.master);
            free(rg.master);
        }
    }
    amp_model_free(probe);
    gpu->ops->destroy(gpu);
    cpu->ops->destroy(cpu);
    if (amp_test_failures) {
        fprintf(stderr, "%d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("CPU and CUDA train the CNN alike\n");
    return 0;
}

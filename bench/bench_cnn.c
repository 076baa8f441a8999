/* bench_cnn: the CNN's training-step time per precision policy against the
 * FP32 "floor" of the same step's convolutions and GEMMs, on the CPU
 * (im2col + the backend's GEMM) or with --device cuda (cuDNN + cuBLAS). See
 * bench/README.md.
 *
 * The model is [model] name = cnn with --layers (default: the
 * configs/cnn_fashion_*.ini network) on synthetic 1x28x28 images, 10
 * classes. A step is what the session does: cast the weights, forward,
 * backward, one fused unscale/check pass, SGD with momentum, and the stats
 * record download (the step's one sync). Policies are set on the model as
 * the built-in plugins resolve them (fp16/bf16: conv and linear inputs,
 * weights and activations in 16 bits; batch norm, softmax and loss FP32);
 * the loss scaler does not change a step's work. The floor is the FP32
 * model's convolutions (forward, backward-data, backward-filter) and GEMMs
 * (forward, dW, dX) alone, issued through the same backend ops
 * (amp_cnn_conv_gemm_only); GFLOP/s is their flops over a policy's step
 * time. Medians over --steps after --warmup, of the wall time and of the
 * process's CPU time (with one thread on a shared machine, the work itself).
 *
 * Exit status: 0 ok, 1 runtime failure, 2 usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "cnn.h"
#include "io/config.h"
#include "model.h"
#include "util/rng.h"
#include "util/clock.h"
#include "gemm_paths.h"

#define DEFAULT_LAYERS \
    "conv(32,3,pad=1) bn relu pool(2) conv(64,3,pad=1) bn relu pool(2) fc(128) relu fc"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(FILE *f) {
    fprintf(f, "usage: bench_cnn [--steps N] [--warmup N] [--batch N] [--layers STRING]\n"
               "                 [--device cpu|cuda] [--deterministic] [--policy P]...\n"
               "  --steps N      timed steps per policy, and floor repetitions (default 10)\n"
               "  --warmup N     untimed steps first (default 2)\n"
               "  --batch N      images per step (default 128)\n"
               "  --layers S     [model] layers (default: the cnn_fashion configs' network)\n"
               "  --device D     cpu (default) or cuda\n"
               "  --deterministic  deterministic cuDNN algorithms only ([run] deterministic)\n"
               "  --policy P     fp32, fp16 or bf16 (repeatable; default all three); the floor\n"
               "                 is timed with fp32 only\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!s[0] || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

typedef struct policy {
    const char *label;
    amp_dtype dt;
} policy;

static amp_model *make_model(amp_backend *be, const char *layers, amp_dtype dt, int batch,
                             char *err, size_t errlen) {
    amp_config *cfg = amp_config_new_empty("bench_cnn");
    char set[1024];
    snprintf(set, sizeof set, "model.layers=%s", layers);
    if (amp_config_set(cfg, set, err, errlen) != 0) {
        amp_config_free(cfg);
        return NULL;
    }
    const amp_model_ops *ops = amp_model_find("cnn");
    amp_model_input in = {batch, 28 * 28, 1, 28, 28, 10, 1, 0};
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    amp_model *m = NULL;
    if (ops->describe(&desc, cfg, &in, err, errlen) == 0) {
        amp_layer_precision *prec = calloc((size_t)desc.nlayers, sizeof *prec);
        for (int l = 0; l < desc.nlayers; l++) {
            prec[l].struct_size = sizeof prec[l];
            for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
            prec[l].compute[AMP_OP_GEMM] = prec[l].compute[AMP_OP_CONV] = dt;
            prec[l].compute[AMP_OP_ATTENTION] = prec[l].compute[AMP_OP_POINTWISE] = dt;
            prec[l].activation = prec[l].param = dt;
        }
        if (amp_model_create(&m, ops, be, &desc, prec, &in, 1, cfg, err, errlen) != 0) m = NULL;
        free(prec);
    }
    amp_model_desc_free(&desc);
    amp_config_free(cfg);
    return m;
}

/* A random batch: N(0,1) pixels, labels 0..9. */
static int upload_batch(amp_model *m, int batch) {
    amp_rng rng;
    amp_rng_seed(&rng, 7);
    size_t n = (size_t)batch * 28 * 28;
    float *x = malloc(n * sizeof(float));
    int32_t *y = malloc((size_t)batch * sizeof(int32_t));
    if (!x || !y) return -1;
    for (size_t i = 0; i < n; i++) x[i] = (float)amp_rng_normal(&rng);
    for (int i = 0; i < batch; i++) y[i] = (int32_t)amp_rng_below(&rng, 10);
    int rc = m->be->ops->upload(m->be, m->x, x, n * sizeof(float)) ||
             m->be->ops->upload(m->be, m->y, y, (size_t)batch * sizeof(int32_t));
    free(x);
    free(y);
    return rc ? -1 : 0;
}

/* One session-like step; the stats download is the sync. */
static int step(amp_model *m, int batch, amp_step_stats *host_stats) {
    amp_backend *be = m->be;
    size_t sb = amp_model_stats_bytes(m->desc.nlayers);
    amp_forward_args fa = {batch, 1, 1.0f / (float)batch};
    amp_backward_args ba = {batch, 0};
    if (be->ops->zero(be, m->stats, sb) || m->ops->cast_weights(m) || m->ops->forward(m, &fa) ||
        m->ops->backward(m, &ba) ||
        be->ops->unscale_check(be, m->grads, m->stats, m->desc.ntrained, 1.0f) ||
        be->ops->optim_step(be, &(amp_optim_step){0, 0.01f, 0.9f, 0.0f, 0.0f, 0.0f, 0.0f, 0},
                            m->master, m->opt[0], NULL, m->grads, m->desc.ntrained) ||
        be->ops->download(be, host_stats, m->stats, sb))
        return -1;
    return 0;
}

int main(int argc, char **argv) {
    int steps = 10, warmup = 2, batch = 128, det = 0, want[3] = {0, 0, 0}, nwant = 0;
    const char *layers = DEFAULT_LAYERS, *device = "cpu";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--deterministic") == 0) {
            det = 1;
            continue;
        }
        int bad = !v;
        if (!bad && strcmp(a, "--steps") == 0) bad = parse_int(v, 1, 100000, &steps);
        else if (!bad && strcmp(a, "--warmup") == 0) bad = parse_int(v, 0, 100000, &warmup);
        else if (!bad && strcmp(a, "--batch") == 0) bad = parse_int(v, 1, 65536, &batch);
        else if (!bad && strcmp(a, "--layers") == 0) layers = v;
        else if (!bad && strcmp(a, "--policy") == 0) {
            int k = strcmp(v, "fp32") == 0 ? 0 : strcmp(v, "fp16") == 0 ? 1 : strcmp(v, "bf16") == 0 ? 2 : -1;
            bad = k < 0;
            if (!bad && !want[k]) want[k] = 1, nwant++;
        }
        else if (!bad && strcmp(a, "--device") == 0) {
            device = v;
            bad = strcmp(v, "cpu") != 0 && strcmp(v, "cuda") != 0;
        } else
            bad = 1;
        if (bad) {
            fprintf(stderr, "bench_cnn: bad or unknown argument '%s%s%s'\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }
    char err[2048];
    int cuda = strcmp(device, "cuda") == 0;
    amp_backend *be = cuda ? amp_backend_cuda_create(err, sizeof err) : amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "bench_cnn: %s\n", err);
        return 1;
    }
    be->deterministic = det;
    static const policy policies[] = {
        {"fp32", AMP_DTYPE_F32}, {"fp16", AMP_DTYPE_F16}, {"bf16", AMP_DTYPE_BF16}};
    double *t = calloc((size_t)steps, sizeof *t), *tc = calloc((size_t)steps, sizeof *tc);
    amp_step_stats *hs = calloc(1, 1 << 16);
    double floor_ms = 0.0, floor_cpu = 0.0, flops = 0.0, step_ms[3], step_cpu[3];
    printf("bench_cnn: %s backend%s, batch %d, %d timed steps after %d, layers '%s'\n",
           be->ops->name, det ? " (deterministic)" : "", batch, steps, warmup, layers);
    if (!nwant) want[0] = want[1] = want[2] = 1;
    for (int p = 0; p < 3; p++) {
        if (!want[p]) continue;
        amp_model *m = make_model(be, layers, policies[p].dt, batch, err, sizeof err);
        if (!m || m->ops->init_params(m, 1) || upload_batch(m, batch)) {
            fprintf(stderr, "bench_cnn: %s: %s\n", policies[p].label, m ? be->err : err);
            return 1;
        }
        for (int i = 0; i < warmup + steps; i++) {
            double t0 = amp_clock_ms(), c0 = amp_cpu_ms();
            if (step(m, batch, hs) != 0) {
                fprintf(stderr, "bench_cnn: %s step: %s\n", policies[p].label, be->err);
                return 1;
            }
            if (i >= warmup) t[i - warmup] = amp_clock_ms() - t0, tc[i - warmup] = amp_cpu_ms() - c0;
        }
        step_ms[p] = median(t, steps);
        step_cpu[p] = median(tc, steps);
        if (p == 0) { /* the floor: the FP32 model's convolutions and GEMMs alone */
            for (int i = 0; i < warmup + steps; i++) {
                double t0 = amp_clock_ms(), c0 = amp_cpu_ms();
                if (amp_cnn_conv_gemm_only(m, batch, &flops) ||
                    be->ops->download(be, hs, m->stats, sizeof *hs)) {
                    fprintf(stderr, "bench_cnn: floor: %s\n", be->err);
                    return 1;
                }
                if (i >= warmup) t[i - warmup] = amp_clock_ms() - t0, tc[i - warmup] = amp_cpu_ms() - c0;
            }
            floor_ms = median(t, steps);
            floor_cpu = median(tc, steps);
        }
        amp_model_free(m);
    }
    printf("\n| policy | step ms | CPU ms | images/s | conv+GEMM GFLOP/s | step / FP32 floor |\n");
    printf("|---|---|---|---|---|---|\n");
    if (want[0])
        printf("| floor (FP32 conv+GEMM only) | %.2f | %.2f | | %.1f | 1.00 |\n", floor_ms,
               floor_cpu, flops / (floor_ms * 1e6));
    for (int p = 0; p < 3; p++)
        if (want[p])
            printf("| %s | %.2f | %.2f | %.0f | %.1f | %.2f |\n", policies[p].label, step_ms[p],
                   step_cpu[p],
                   batch / (step_ms[p] / 1e3), flops / (step_ms[p] * 1e6),
                   want[0] ? step_ms[p] / floor_ms : 0.0);
    if (be->info.isa[0])
        printf("\namptrain path: isa %s, %d thread(s); FP32 GEMM %s\n", be->info.isa,
               be->info.threads,
               be->info.gemm[AMP_DTYPE_F32][0] ? be->info.gemm[AMP_DTYPE_F32] : "-");
    /* one backend runs every policy, and a 16-bit convolution may run an FP32
     * shape the fp32 step chose already: so one line for them all */
    char paths[512];
    bench_gemm_paths_text(be->info.gemm_choices, be->info.n_gemm_choices, paths, sizeof paths);
    if (paths[0]) printf("GEMM paths (all policies): %s\n", paths);
    if (want[0]) printf("\n%.3f GFLOP of convolutions and GEMMs per step\n", flops / 1e9);
    free(t);
    free(tc);
    free(hs);
    be->ops->destroy(be);
    return 0;
}

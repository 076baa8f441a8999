/* CPU/CUDA parity of whole training runs, one row per model and policy
 * (gpu_rows.h): the same config runs once with run.device=cpu (the
 * reference) and once with run.device=cuda under fp32, fp16 + dynamic scaler
 * and bf16 + no scaler (the gpt also under fp8 delayed and current scaling,
 * mxfp8 and nvfp4, lm_head in bf16, as configs/gpt_shakespeare_fp8*.ini and
 * _nvfp4.ini have them), and the
 * per-step losses, skipped steps and the final evaluation are compared with
 * the tolerances written at each check.
 *   mlp: 100 steps on synthetic `tiny` data (MLP 64-128-64-10, batch 64,
 *        SGD lr 0.01 momentum 0.9, seed 7); test accuracy too.
 *   gpt: 20 steps on Shakespeare (2 layers, 2 heads, 64 wide, block 32,
 *        batch 8, AdamW with warm-up and clipping, seed 11); validation loss.
 * Label `gpu`; 77 (skipped) without a device. --self-check runs the second
 * side on the CPU too (every difference is then 0), so the comparison runs
 * everywhere; --only mlp / --only gpt picks a model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_rows.h"
#include "train/session.h"
#include "train_hooks.h"

#define MAX_STEPS 100

static const char *const mlp_sets[] = {
    "run.seed=7",           "data.dataset=tiny",    "data.train_size=4096", "data.test_size=1024",
    "data.features=64",     "data.classes=10",      "data.batch_size=64",   "model.hidden=128,64",
    "model.activation=relu", "optim.name=sgd",      "optim.lr=0.01",        "optim.momentum=0.9",
    "train.steps=100",      NULL};

static const char *const gpt_sets[] = {
    "run.seed=11",         "data.dataset=text",    "data.batch_size=8",   "data.eval_iters=4",
    "model.name=gpt",      "model.n_layer=2",      "model.n_head=2",      "model.n_embd=64",
    "model.block_size=32", "optim.name=adamw",     "optim.lr=3e-3",       "optim.schedule=cosine",
    "optim.min_lr=3e-4",   "optim.warmup_steps=5", "optim.beta2=0.99",    "optim.weight_decay=0.1",
    "optim.grad_clip=1.0", "train.steps=20",       NULL};

typedef struct run_result {
    double loss[MAX_STEPS];
    int64_t skipped;
    double test_loss, test_acc; /* the final evaluation: test (mlp) or validation (gpt) */
    char backend[16];
} run_result;

/* The row's policy: its dtype's precision plugin, fp16 with the dynamic
 * scaler; shape[1] picks a scaled policy instead (1 fp8 delayed, 2 fp8
 * current, 3 mxfp8, 4 nvfp4's full recipe), as configs/gpt_shakespeare_fp8*.ini
 * and _nvfp4.ini have them. */
enum { POLICY_DTYPE, POLICY_FP8, POLICY_FP8_CURRENT, POLICY_MXFP8, POLICY_NVFP4 };
static const char *precision_of(const amp_gpu_row *r) {
    if (r->shape[1] == POLICY_FP8 || r->shape[1] == POLICY_FP8_CURRENT) return "fp8";
    if (r->shape[1] == POLICY_MXFP8) return "mxfp8";
    if (r->shape[1] == POLICY_NVFP4) return "nvfp4";
    return r->dt == AMP_DTYPE_F32 ? "fp32" : r->dt == AMP_DTYPE_F16 ? "fp16" : "bf16";
}
static const char *const *policy_keys(const amp_gpu_row *r) {
    static const char *const none[] = {NULL};
    static const char *const fp8[] = {"precision.layer.lm_head=bf16", NULL};
    static const char *const current[] = {"precision.layer.lm_head=bf16",
                                          "precision.recipe=current", NULL};
    return r->shape[1] == POLICY_FP8_CURRENT ? current : r->shape[1] ? fp8 : none;
}
static const char *scaler_of(const amp_gpu_row *r) {
    return r->dt == AMP_DTYPE_F16 ? "dynamic" : "none";
}

/* Trains the row's model (sets, then the policy and device) for steps
 * steps into out; a failure ends the row. */
static void train_on(const amp_gpu_row *r, const char *const *sets, int steps, const char *device,
                     run_result *out) {
    char err[2048], prec[64], scal[64], dev[64];
    snprintf(prec, sizeof prec, "precision.plugin=%s", precision_of(r));
    snprintf(scal, sizeof scal, "scaler.plugin=%s", scaler_of(r));
    snprintf(dev, sizeof dev, "run.device=%s", device);
    amp_config *cfg = amp_config_new_empty("test_gpu_parity");
    for (int i = 0; sets[i]; i++)
        if (amp_config_set(cfg, sets[i], err, sizeof err) != 0)
            amp_op_abort("config %s: %s", sets[i], err);
    const char *policy[] = {prec, scal, dev};
    for (int i = 0; i < 3; i++)
        if (amp_config_set(cfg, policy[i], err, sizeof err) != 0)
            amp_op_abort("config %s: %s", policy[i], err);
    for (const char *const *k = policy_keys(r); *k; k++)
        if (amp_config_set(cfg, *k, err, sizeof err) != 0) amp_op_abort("config %s: %s", *k, err);
    amp_session *s = NULL;
    if (amp_session_open(&s, cfg, err, sizeof err) != 0)
        amp_op_abort("session on %s: %s", device, err);
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "%s", s->be->ops->name);
    amp_train_result res;
    int rc = train_keeping_losses(s, out->loss, steps, &res, err, sizeof err);
    out->test_loss = res.test_loss;
    out->test_acc = res.test_acc;
    out->skipped = s->skipped;
    amp_session_close(s);
    amp_config_free(cfg);
    if (rc != 0) amp_op_abort("training on %s: %s", device, err);
}

/* The reference (CPU) and the device under test, steps steps each. */
static const char *train_both(const amp_gpu_row *r, const char *const *sets, int steps,
                              run_result *ref, run_result *dut) {
    const char *second = rows_self_check ? "cpu" : "cuda";
    train_on(r, sets, steps, "cpu", ref);
    train_on(r, sets, steps, second, dut);
    EXPECT(strcmp(dut->backend, second) == 0, "%s: asked for %s, ran on %s", r->name, second,
           dut->backend);
    return second;
}

/* Mean of the last 10 steps' losses: the "final loss" of the mlp checks. */
static double final_loss(const run_result *r, int steps) {
    double sum = 0.0;
    for (int i = steps - 10; i < steps; i++) sum += r->loss[i];
    return sum / 10.0;
}

static void mlp_row(const amp_gpu_row *r) {
    enum { STEPS = 100 };
    static run_result ref, dut;
    const char *second = train_both(r, mlp_sets, STEPS, &ref, &dut);
    int is_fp32 = r->dt == AMP_DTYPE_F32;
    double maxd = 0.0, sumd = 0.0;
    int maxat = 0, nonfinite = 0, per_step_bad = 0, first_bad = -1;
    for (int i = 0; i < STEPS; i++) {
        double a = ref.loss[i], b = dut.loss[i];
        if (!isfinite(a) || !isfinite(b)) {
            nonfinite++;
            continue;
        }
        double d = fabs(a - b);
        sumd += d;
        if (d > maxd) maxd = d, maxat = i;
        /* fp32: both sides do true FP32 arithmetic (cuBLAS default math, no
         * TF32) and differ only in summation order, so the curves must agree
         * step by step: |a-b| <= 1e-4 + 1e-3*|a|. */
        if (is_fp32 && !(d <= 1e-4 + 1e-3 * fabs(a))) {
            per_step_bad++;
            if (first_bad < 0) first_bad = i;
        }
    }
    double meand = sumd / STEPS;
    double fa = final_loss(&ref, STEPS), fb = final_loss(&dut, STEPS);
    double frel = fabs(fa - fb) / fabs(fa);
    printf("    %s on %s: max|diff| %.3e @step %d, mean|diff| %.3e, final %.5f/%.5f (%.2f%%), "
           "skipped %lld/%lld, test acc %.4f/%.4f\n",
           r->name, dut.backend, maxd, maxat + 1, meand, fa, fb, 100.0 * frel,
           (long long)ref.skipped, (long long)dut.skipped, ref.test_acc, dut.test_acc);
    EXPECT(nonfinite == 0, "%s: %d steps with a non-finite loss", r->name, nonfinite);
    if (is_fp32) {
        EXPECT(per_step_bad == 0,
               "%s: %d steps outside |a-b| <= 1e-4 + 1e-3*|a| (first at step %d: cpu %.8g, %s "
               "%.8g)",
               r->name, per_step_bad, first_bad + 1, first_bad >= 0 ? ref.loss[first_bad] : 0.0,
               second, first_bad >= 0 ? dut.loss[first_bad] : 0.0);
    } else {
        /* fp16/bf16: rounding into 16 bits happens after GEMMs whose FP32
         * sums differ in order (tensor cores vs OpenBLAS), so single
         * roundings flip by one ulp and the curves drift apart a little;
         * the check is on the curve as a whole: mean |a-b| <= 2e-2 ... */
        EXPECT(meand <= 2e-2, "%s: mean |loss diff| %.4g > 2e-2", r->name, meand);
        /* ... and the final loss (mean of the last 10 steps) within 5%. */
        EXPECT(frel <= 0.05, "%s: final loss cpu %.6g vs %s %.6g differs by %.2f%% > 5%%",
               r->name, fa, second, fb, 100.0 * frel);
    }
    /* Skipped steps (the dynamic scaler's overflow back-offs): within +-1, as
     * one borderline overflow may land on either side. */
    EXPECT(llabs((long long)(ref.skipped - dut.skipped)) <= 1,
           "%s: skipped steps cpu %lld vs %s %lld (allowed +-1)", r->name,
           (long long)ref.skipped, second, (long long)dut.skipped);
    /* Final test accuracy (1024 examples) within 0.02 absolute. */
    EXPECT(fabs(ref.test_acc - dut.test_acc) <= 0.02, "%s: test accuracy cpu %.4f vs %s %.4f",
           r->name, ref.test_acc, second, dut.test_acc);
}

static void gpt_row(const amp_gpu_row *r) {
    enum { STEPS = 20 };
    static run_result a, b;
    const char *second = train_both(r, gpt_sets, STEPS, &a, &b);
    int is_fp32 = r->dt == AMP_DTYPE_F32;
    double maxd = 0, sumd = 0;
    int bad = 0, first = -1;
    for (int i = 0; i < STEPS; i++) {
        double d = fabs(a.loss[i] - b.loss[i]);
        if (!(d == d)) d = INFINITY;
        sumd += d;
        maxd = fmax(maxd, d);
        /* fp32: summation order only (no TF32): step by step. 16-bit: a
         * rounding can land one ulp apart after differently ordered FP32
         * sums, and the runs drift a little: 5e-2 per step. FP8/MX32 the
         * same: the casts are the CPU's bits, the GEMM sums (FP32 cuBLAS,
         * or cuBLASLt's FP8 tensor cores in the forwards on sm_89+) are
         * ordered their own way, so a code may land one step apart. NVFP4
         * the same (FP32 cuBLAS on the decoded values; the stochastic
         * rounding's bits are keyed by element, the CPU's). */
        double lim = is_fp32 ? 1e-4 + 1e-3 * fabs(a.loss[i]) : 5e-2;
        if (!(d <= lim) && bad++ == 0) first = i;
    }
    double vd = fabs(a.test_loss - b.test_loss);
    printf("    %s on %s: max|diff| %.3e mean %.3e, val cpu %.5f %s %.5f, skipped %lld/%lld\n",
           r->name, b.backend, maxd, sumd / STEPS, a.test_loss, second, b.test_loss,
           (long long)a.skipped, (long long)b.skipped);
    EXPECT(bad == 0, "%s: %d steps differ (first: step %d, cpu %.7g, %s %.7g)", r->name, bad,
           first + 1, first >= 0 ? a.loss[first] : 0.0, second, first >= 0 ? b.loss[first] : 0.0);
    /* validation loss: 1e-3 (fp32), 2e-2 (16-bit) absolute */
    EXPECT(vd <= (is_fp32 ? 1e-3 : 2e-2), "%s: validation loss cpu %.6g vs %s %.6g", r->name,
           a.test_loss, second, b.test_loss);
    EXPECT(llabs((long long)(a.skipped - b.skipped)) <= 1, "%s: skipped %lld vs %lld", r->name,
           (long long)a.skipped, (long long)b.skipped);
}

static const amp_gpu_row rows[] = {
    {"mlp fp32", mlp_row, {100}, .dt = AMP_DTYPE_F32},
    {"mlp fp16+dynamic", mlp_row, {100}, .dt = AMP_DTYPE_F16},
    {"mlp bf16+none", mlp_row, {100}, .dt = AMP_DTYPE_BF16},
    {"gpt fp32", gpt_row, {20}, .dt = AMP_DTYPE_F32},
    {"gpt fp16+dynamic", gpt_row, {20}, .dt = AMP_DTYPE_F16},
    {"gpt bf16+none", gpt_row, {20}, .dt = AMP_DTYPE_BF16},
    {"gpt fp8 delayed hybrid", gpt_row, {20, POLICY_FP8}, .dt = AMP_DTYPE_BF16, .needs = "scaled"},
    {"gpt fp8 current hybrid", gpt_row, {20, POLICY_FP8_CURRENT}, .dt = AMP_DTYPE_BF16,
     .needs = "scaled"},
    {"gpt mxfp8", gpt_row, {20, POLICY_MXFP8}, .dt = AMP_DTYPE_BF16, .needs = "scaled"},
    {"gpt nvfp4", gpt_row, {20, POLICY_NVFP4}, .dt = AMP_DTYPE_BF16, .needs = "scaled"},
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_parity", argc, argv, rows, sizeof rows / sizeof rows[0], 1);
}

/* CPU/CUDA parity of whole training runs: the same config (synthetic `tiny`
 * data, same seed, same data order, SGD) runs once with run.device=cpu and
 * once with run.device=cuda under fp32, fp16 + dynamic scaler and bf16 + no
 * scaler, and the per-step loss curves, skipped-step counts and final test
 * accuracies are compared. The CPU run is the reference. Label `gpu`; exits
 * 77 (skipped) when no CUDA device is visible.
 *
 * Test hook: AMP_PARITY_SECOND_DEVICE=cpu runs the "GPU" side on the CPU as
 * well, so the comparison code itself can be exercised on a machine without
 * a GPU (every difference is then 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "session.h"
#include "train_hooks.h"

#define STEPS 100

#include "expect.h"

typedef struct policy {
    const char *label;
    const char *precision;
    const char *scaler;
    int is_fp32;
} policy;

static const policy policies[] = {
    {"fp32", "fp32", "none", 1},
    {"fp16+dynamic", "fp16", "dynamic", 0},
    {"bf16+none", "bf16", "none", 0},
};
#define NPOLICIES ((int)(sizeof policies / sizeof policies[0]))

typedef struct run_result {
    double loss[STEPS];
    int64_t skipped;
    double test_loss, test_acc;
    char backend[16];
} run_result;

/* Runs STEPS steps of one policy on one device; 0 or -1 (message printed). */
static int run_policy(const policy *p, const char *device, run_result *out) {
    char err[2048];
    char prec[64], scal[64], dev[64];
    snprintf(prec, sizeof prec, "precision.plugin=%s", p->precision);
    snprintf(scal, sizeof scal, "scaler.plugin=%s", p->scaler);
    snprintf(dev, sizeof dev, "run.device=%s", device);
    const char *const sets[] = {
        "run.seed=7",         "data.dataset=tiny",   "data.train_size=4096",
        "data.test_size=1024", "data.features=64",   "data.classes=10",
        "data.batch_size=64", "model.hidden=128,64", "model.activation=relu",
        "optim.name=sgd",     "optim.lr=0.01",       "optim.momentum=0.9",
        "train.steps=100",    prec,                  scal,
        dev,                  NULL};
    amp_config *cfg = amp_config_new_empty("test_gpu_parity");
    for (int i = 0; sets[i]; i++) {
        if (amp_config_set(cfg, sets[i], err, sizeof err) != 0) {
            fprintf(stderr, "FAIL config %s: %s\n", sets[i], err);
            amp_config_free(cfg);
            return -1;
        }
    }
    amp_session *s = NULL;
    if (amp_session_open(&s, cfg, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL %s on %s: session: %s\n", p->label, device, err);
        amp_config_free(cfg);
        return -1;
    }
    snprintf(out->backend, sizeof out->backend, "%s", s->be->ops->name);
    amp_train_result res;
    int rc = train_keeping_losses(s, out->loss, STEPS, &res, err, sizeof err);
    out->test_loss = res.test_loss;
    out->test_acc = res.test_acc;
    if (rc != 0) fprintf(stderr, "FAIL %s on %s: %s\n", p->label, device, err);
    out->skipped = s->skipped;
    amp_session_close(s);
    amp_config_free(cfg);
    return rc;
}

/* Mean of the last 10 steps' losses: the "final loss" both checks use. */
static double final_loss(const run_result *r) {
    double sum = 0.0;
    for (int i = STEPS - 10; i < STEPS; i++) sum += r->loss[i];
    return sum / 10.0;
}

static void compare(const policy *p, const char *second) {
    static run_result ref, dut; /* ref: CPU; dut: the device under test */
    memset(&ref, 0, sizeof ref);
    memset(&dut, 0, sizeof dut);
    if (run_policy(p, "cpu", &ref) != 0 || run_policy(p, second, &dut) != 0) {
        amp_test_failures++;
        return;
    }
    EXPECT(strcmp(dut.backend, second) == 0, "%s: asked for %s, ran on %s", p->label, second,
           dut.backend);
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
        if (p->is_fp32 && !(d <= 1e-4 + 1e-3 * fabs(a))) {
            per_step_bad++;
            if (first_bad < 0) first_bad = i;
        }
    }
    double meand = sumd / STEPS;
    double fa = final_loss(&ref), fb = final_loss(&dut);
    double frel = fabs(fa - fb) / fabs(fa);
    printf("%-13s %-4s %12.3e %5d %12.3e %10.5f %10.5f %8.2f%% %4lld/%-4lld %.4f/%.4f\n",
           p->label, dut.backend, maxd, maxat + 1, meand, fa, fb, 100.0 * frel,
           (long long)ref.skipped, (long long)dut.skipped, ref.test_acc, dut.test_acc);

    EXPECT(nonfinite == 0, "%s: %d steps with a non-finite loss", p->label, nonfinite);
    if (p->is_fp32) {
        EXPECT(per_step_bad == 0,
               "%s: %d steps outside |a-b| <= 1e-4 + 1e-3*|a| (first at step %d: cpu %.8g, %s "
               "%.8g)",
               p->label, per_step_bad, first_bad + 1, first_bad >= 0 ? ref.loss[first_bad] : 0.0,
               second, first_bad >= 0 ? dut.loss[first_bad] : 0.0);
    } else {
        /* fp16/bf16: rounding into 16 bits happens after GEMMs whose FP32
         * sums differ in order (tensor cores vs OpenBLAS), so single
         * roundings flip by one ulp and the curves drift apart a little;
         * the check is on the curve as a whole: mean |a-b| <= 2e-2 ... */
        EXPECT(meand <= 2e-2, "%s: mean |loss diff| %.4g > 2e-2", p->label, meand);
        /* ... and the final loss (mean of the last 10 steps) within 5%. */
        EXPECT(frel <= 0.05, "%s: final loss cpu %.6g vs %s %.6g differs by %.2f%% > 5%%",
               p->label, fa, second, fb, 100.0 * frel);
    }
    /* Skipped steps (the dynamic scaler's overflow back-offs): within +-1, as
     * one borderline overflow may land on either side. */
    EXPECT(llabs((long long)(ref.skipped - dut.skipped)) <= 1,
           "%s: skipped steps cpu %lld vs %s %lld (allowed +-1)", p->label,
           (long long)ref.skipped, second, (long long)dut.skipped);
    /* Final test accuracy (1024 examples) within 0.02 absolute. */
    EXPECT(fabs(ref.test_acc - dut.test_acc) <= 0.02, "%s: test accuracy cpu %.4f vs %s %.4f",
           p->label, ref.test_acc, second, dut.test_acc);
}

int main(void) {
    const char *second = getenv("AMP_PARITY_SECOND_DEVICE");
    if (!second || !*second) second = "cuda";
    if (strcmp(second, "cuda") != 0 && strcmp(second, "cpu") != 0) {
        fprintf(stderr, "AMP_PARITY_SECOND_DEVICE must be cuda or cpu, not '%s'\n", second);
        return 2;
    }
    if (strcmp(second, "cuda") == 0 && !amp_backend_cuda_available()) {
        printf("no CUDA device visible (%s): skipped\n", amp_backend_cuda_unavailable_reason());
        return 77;
    }
    printf("CPU vs %s, %d steps, MLP 64-128-64-10, batch 64, SGD lr 0.01 momentum 0.9, seed 7\n",
           second, STEPS);
    printf("%-13s %-4s %12s %5s %12s %10s %10s %9s %9s %s\n", "policy", "dev", "max|diff|",
           "@step", "mean|diff|", "final cpu", "final dev", "final rel", "skip c/d",
           "test acc c/d");
    for (int i = 0; i < NPOLICIES; i++) compare(&policies[i], second);
    if (amp_test_failures) {
        fprintf(stderr, "%d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("all parity checks passed\n");
    return 0;
}
